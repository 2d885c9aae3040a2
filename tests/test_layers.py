"""The package layout is the architecture: which package may import which, and where shared values live.

Read from the source (ast), not by importing: a lazy import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("service", "rest_bridge", "clients")  # folders, installed as ovserve.<folder>
# What a build of clients/ (its own distribution, whose package directory is the folder itself) leaves there.
BUILT = {"build", "dist"}
COMPOSITION_ROOT = "ovserve.service.server.composition"  # the one module that puts the server and the bridge together


def modules() -> dict[str, Path]:
    """Every Python module of the three packages, by the dotted name it is installed as (ovserve.service.cli)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.relative_to(ROOT / package).parts[0] in BUILT:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(("ovserve", *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return found


def imported_packages(name: str, path: Path) -> set[str]:
    """The packages ``name`` imports anywhere in its source: ovserve's by folder (``service`` for ovserve.service.x),
    any other by its top-level name; relative imports stay in its package."""
    packages = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            packages |= {package_of(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            packages.add(package_of(name) if node.level else package_of(node.module or ""))
    return packages


def package_of(module: str) -> str:
    """``service`` for ovserve.service.api.chat, ``grpc`` for grpc.aio."""
    parts = module.split(".")
    return parts[1] if parts[0] == "ovserve" and len(parts) > 1 else parts[0]


IMPORTS = {name: imported_packages(name, path) for name, path in modules().items()}


def test_the_walk_sees_the_packages_and_their_imports() -> None:
    assert {
        "ovserve.service.cli",
        "ovserve.service.server.composition",
        "ovserve.rest_bridge.app",
        "ovserve.clients.client",
    } <= set(IMPORTS)
    assert {"service", "rest_bridge", "clients"} <= IMPORTS[COMPOSITION_ROOT]
    assert (
        "clients" in IMPORTS["ovserve.rest_bridge.translate.body"] and "clients" in IMPORTS["ovserve.clients.client"]
    )  # relative too


def test_nothing_installed_imports_the_repository_tools() -> None:
    """tools/ (the model builder among them) is not in the wheel: a runtime import of it fails once installed."""
    assert sorted(name for name, packages in IMPORTS.items() if "tools" in packages) == []


def test_only_the_composition_root_imports_both_service_and_rest_bridge() -> None:
    both = sorted(name for name, packages in IMPORTS.items() if {"service", "rest_bridge"} <= packages)
    assert both == [COMPOSITION_ROOT]


def test_rest_bridge_never_imports_service() -> None:
    assert (
        sorted(
            name
            for name, packages in IMPORTS.items()
            if name.startswith("ovserve.rest_bridge") and "service" in packages
        )
        == []
    )


def test_clients_import_neither_service_nor_rest_bridge() -> None:
    offenders = sorted(
        name
        for name, packages in IMPORTS.items()
        if name.startswith("ovserve.clients") and packages & {"service", "rest_bridge"}
    )
    assert offenders == []


# Values written once, in clients/defaults.py: one of them written as code elsewhere is a second copy
# (docstrings may show them: usage examples are documentation).
SHARED_NUMBERS = {50051, 8000, 1024 * 1024}
SHARED_TEXT = re.compile(r"127\.0\.0\.1|max_(?:send|receive)_message_length")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _shared_value(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # 1024 * 1024
        sides = (node.left, node.right)
        return all(isinstance(side, ast.Constant) and side.value == 1024 for side in sides)
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return False
    if isinstance(node.value, int):
        return node.value in SHARED_NUMBERS
    return isinstance(node.value, str) and bool(SHARED_TEXT.search(node.value))


def test_shared_values_are_written_only_in_clients_defaults() -> None:
    copies = []
    for name, path in modules().items():
        if name == "ovserve.clients.defaults" or name.startswith("ovserve.clients.v1"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = _docstrings(tree)
        copies += [
            f"{path.relative_to(ROOT)}:{node.lineno}"
            for node in ast.walk(tree)
            if id(node) not in skip and _shared_value(node)
        ]
    assert copies == []


# The rooms of service/, bottom to top: a room imports only rooms of the layers below its own (never a sibling
# in its layer, never one above), so no arrow points up and no cycle can form. A room is a package of service/
# (ovserve.service.engine) or a module at its root (ovserve.service.errors). docs/architecture.md ("How it works")
# draws the same stack.
SERVICE_LAYERS: list[set[str]] = [
    {"ovserve.service.errors", "ovserve.service.ids", "ovserve.service.model_files", "ovserve.service.limits"},
    {"ovserve.service.parsing", "ovserve.service.media", "ovserve.service.mcp", "ovserve.service.store"},
    {"ovserve.service.workers"},  # the child-process runtime every served model runs on
    {"ovserve.service.engine", "ovserve.service.pipelines"},  # generating models; embedding, rerank and speech models
    # What --model names, made an OpenVINO directory; its state; the settings of which models stay loaded.
    {"ovserve.service.sources", "ovserve.service.model_states", "ovserve.service.residency"},
    {"ovserve.service.models"},  # the registry of served models
    {"ovserve.service.structured", "ovserve.service.observability", "ovserve.service.config"},
    {"ovserve.service.api"},
    {"ovserve.service.responses", "ovserve.service.batches"},  # the Responses API; the Batch API and its runner
    {"ovserve.service.server"},
    {"ovserve.service.bench"},  # the benchmark
    {"ovserve.service.cli"},
]


def room(module: str) -> str:
    """The room of a service module: its package below service/, or itself at service/'s root."""
    return ".".join(module.split(".")[:3])


def imported_modules(name: str, path: Path) -> set[str]:
    """The dotted names ``name`` imports (``from ovserve.service import x`` counts as ``ovserve.service.x``; relative
    resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found |= {f"{module}.{alias.name}" for alias in node.names} if module == "ovserve.service" else {module}
    return found


def test_every_room_of_service_has_a_layer() -> None:
    rooms = {room(name) for name in modules() if name.startswith("ovserve.service.")}
    placed = set().union(*SERVICE_LAYERS)
    assert sorted(rooms - placed) == [] and sorted(placed - rooms) == []


def test_service_rooms_import_only_the_layers_below() -> None:
    layer = {name: level for level, rooms in enumerate(SERVICE_LAYERS) for name in rooms}
    upward = sorted(
        f"{name} imports {target}"
        for name, path in modules().items()
        if name.startswith("ovserve.service.")
        for target in imported_modules(name, path)
        if target.startswith("ovserve.service.")
        and room(target) != room(name)
        and layer.get(room(target), -1) >= layer[room(name)]
    )
    assert upward == []


def test_the_readme_layout_names_every_package() -> None:
    """The docs' Layout block (docs/architecture.md) lists each package directory (``api/`` under ``service/``,
    ``routes/``...)."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    layout = page[page.index("## Layout") :].split("```")[1]
    named = {line.split()[0] for line in layout.splitlines() if line.strip() and line.startswith("  ")}
    packages = {
        f"{path.parent.name}/"
        for package in PACKAGES
        for path in (ROOT / package).rglob("__init__.py")
        if path.parent != ROOT / package
        and "v1" not in path.parts
        and path.relative_to(ROOT / package).parts[0] not in BUILT
    }
    assert sorted(packages - named) == []
