"""Generate the TypeScript and Go stubs of the ovserve.v1 contract with ``buf generate`` and local plugins.

Usage (from the repository root, after ``npm install`` and Debian's ``protoc-gen-go`` and ``protoc-gen-go-grpc``)::

    python tools/generate_language_stubs.py          # regenerate clients/typescript/src and clients/go/ovserve
    python tools/generate_language_stubs.py --check  # exit 1 if they are stale or a plugin is missing

Each language has its own buf template (LANGUAGES below): Go's sets go_package through buf's managed mode, which
TypeScript's must not have (it would write options into the descriptors protoc-gen-es embeds). Only the generated
trees are replaced or compared; the hand-written package.json, tsconfig.json and go.mod beside them stay.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUF = ROOT / "node_modules" / ".bin" / "buf"


@dataclass(frozen=True)
class Language:
    """One language's stubs: its buf template, the generated tree it owns, and the plugins the template runs."""

    name: str
    template: str
    tree: str  # relative to the repository root (and to buf's -o folder)
    plugins: tuple[str, ...]  # executables, as the template names them


# The plugins are local executables (no remote plugin: CI reaches no registry but npm, PyPI and Debian's).
LANGUAGES = (
    Language("TypeScript", "buf.gen.yaml", "clients/typescript/src", ("node_modules/.bin/protoc-gen-es",)),
    Language("Go", "buf.gen.go.yaml", "clients/go/ovserve", ("protoc-gen-go", "protoc-gen-go-grpc")),
)
# How to install each plugin (and buf), for the message when one is missing.
INSTALL = {
    "node_modules/.bin/buf": "npm install (package.json pins @bufbuild/buf)",
    "node_modules/.bin/protoc-gen-es": "npm install (package.json pins @bufbuild/protoc-gen-es)",
    "protoc-gen-go": (
        "apt-get install protoc-gen-go (Debian), or go install google.golang.org/protobuf/cmd/protoc-gen-go"
    ),
    "protoc-gen-go-grpc": (
        "apt-get install protoc-gen-go-grpc (Debian), or go install google.golang.org/grpc/cmd/protoc-gen-go-grpc"
    ),
}


class MissingTool(RuntimeError):
    """A code generator (buf or a plugin) is not installed; the message says how to install it."""


def missing_tools() -> list[str]:
    """The generators that are not installed, each with how to install it."""
    needed = ["node_modules/.bin/buf", *(plugin for language in LANGUAGES for plugin in language.plugins)]
    absent = [tool for tool in needed if not _installed(tool)]
    return [f"{tool}: {INSTALL[tool]}" for tool in absent]


def _installed(tool: str) -> bool:
    return (ROOT / tool).is_file() if "/" in tool else shutil.which(tool) is not None


def generate(out_root: Path) -> None:
    """Run every language's template into out_root (its trees land at out_root/<tree>); raise MissingTool first."""
    missing = missing_tools()
    if missing:
        raise MissingTool("code generators missing; install them:\n  " + "\n  ".join(missing))
    for language in LANGUAGES:
        result = subprocess.run(
            [str(BUF), "generate", "--template", language.template, "-o", str(out_root)],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"buf generate --template {language.template} failed:\n{result.stderr}")


def stale_files(expected: Path, actual: Path) -> list[str]:
    """Paths (relative to the trees) that differ between two generated trees, missing ones included."""
    if not actual.is_dir():
        return [f"{actual.name}/ (missing)"]
    stale: list[str] = []
    _compare(filecmp.dircmp(expected, actual), Path(), stale)
    return sorted(stale)


def _compare(cmp: filecmp.dircmp[str], prefix: Path, stale: list[str]) -> None:
    _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
    stale += [str(prefix / name) for name in cmp.left_only + cmp.right_only + cmp.common_funny + mismatch + errors]
    for name, sub in cmp.subdirs.items():
        _compare(sub, prefix / name, stale)


def check() -> list[str]:
    """Regenerate into a temporary folder; the committed files that differ, as '<tree>/<path>'."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        return [
            f"{language.tree}/{name}"
            for language in LANGUAGES
            for name in stale_files(Path(tmp) / language.tree, ROOT / language.tree)
        ]


def write() -> None:
    """Regenerate and replace each language's tree (so that files of removed protos go too)."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        for language in LANGUAGES:
            shutil.rmtree(ROOT / language.tree, ignore_errors=True)
            shutil.copytree(Path(tmp) / language.tree, ROOT / language.tree)


def main() -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the stubs are up to date")
    args = parser.parse_args()
    try:
        if not args.check:
            write()
            print("wrote " + ", ".join(language.tree for language in LANGUAGES))
            return 0
        stale = check()
    except MissingTool as error:
        print(error, file=sys.stderr)
        return 2
    if stale:
        print("generated stubs are stale; run: python tools/generate_language_stubs.py", file=sys.stderr)
        print("\n".join(f"  {name}" for name in stale), file=sys.stderr)
        return 1
    print("generated stubs are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
