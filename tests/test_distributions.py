"""What pip installs: two distributions under the one ``ovserve`` namespace, beside a user's own packages.

ovserve (the server: ovserve.service, ovserve.rest_bridge) and ovserve-client (ovserve.clients: stubs and typed
clients, no OpenVINO) are built from this checkout as a user's pip builds them, and installed the way a user would:
together beside packages named ``service`` and ``clients``, and the client alone in a fresh virtual environment that
then calls the session's running server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ServerThread

ROOT = Path(__file__).resolve().parents[1]
# What a build does not read (and the checkout's own build outputs, which it must not).
COPY_IGNORED = (".git", ".venv*", "node_modules", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "tests")
CLIENT_LIMIT_BYTES = 15 * 1024 * 1024  # the bound on the client distribution's own installed files


def pip(*args: str, python: str = sys.executable) -> None:
    """Run pip quietly; its output is shown when it fails."""
    result = subprocess.run([python, "-m", "pip", "-q", "--disable-pip-version-check", *args],
                            capture_output=True, text=True, timeout=900)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The server's and the client's wheels, built without their dependencies from a copy of the checkout (setuptools
    reuses a tree's build/lib, where a developer's earlier builds may have left what the project no longer installs)."""
    source = tmp_path_factory.mktemp("source") / "ovserve"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*COPY_IGNORED))
    out = tmp_path_factory.mktemp("wheels")
    pip("wheel", "--no-deps", "-w", str(out), str(source), str(source / "clients"))
    (server,) = out.glob("ovserve-[0-9]*.whl")
    (client,) = out.glob("ovserve_client-*.whl")
    return {"server": server, "client": client}


def top_level(wheel: Path) -> set[str]:
    """The names a wheel puts into site-packages."""
    return {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}


def test_each_wheel_installs_only_under_ovserve(wheels: dict[str, Path]) -> None:
    for kind, wheel in wheels.items():
        names = top_level(wheel)
        assert {name for name in names if not name.endswith(".dist-info")} == {"ovserve"}, (kind, names)
        assert "ovserve/__init__.py" not in zipfile.ZipFile(wheel).namelist(), kind  # a namespace both add to


def test_the_wheels_split_the_namespace_without_overlap(wheels: dict[str, Path]) -> None:
    server = {n for n in zipfile.ZipFile(wheels["server"]).namelist() if not n.split("/")[0].endswith(".dist-info")}
    client = {n for n in zipfile.ZipFile(wheels["client"]).namelist() if not n.split("/")[0].endswith(".dist-info")}
    assert not server & client
    assert {n.split("/")[1] for n in server} == {"service", "rest_bridge"}
    assert {n.split("/")[1] for n in client} == {"clients"}
    assert "ovserve/clients/v1/chat_pb2_grpc.py" in client and "ovserve/clients/py.typed" in client
    assert "ovserve/service/bundled_models/tiny-chat/openvino_model.xml" in server
    assert not [n for n in server if "model_builder" in n]  # a repository tool (tools/), not the runtime's


def test_both_install_beside_packages_named_service_and_clients(wheels: dict[str, Path], tmp_path: Path) -> None:
    """One site-packages holding the two distributions and a user's own ``service`` and ``clients`` packages."""
    for name in ("service", "clients"):  # the user's, as wheels, so that pip would say if a file were claimed twice
        project = tmp_path / f"user-{name}"
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(f"OWNER = 'user {name}'\n")
        (project / "pyproject.toml").write_text(
            f'[project]\nname = "user-{name}"\nversion = "1.0"\n[tool.setuptools]\npackages = ["{name}"]\n'
        )
        pip("wheel", "--no-deps", "-w", str(tmp_path / "wheels"), str(project))
    site = tmp_path / "site"
    pip("install", "--no-deps", "--target", str(site), str(wheels["server"]), str(wheels["client"]),
        *map(str, (tmp_path / "wheels").glob("*.whl")))  # fmt: skip
    probe = (  # the stubs too: their imports of each other are relative, so they resolve inside the namespace
        "import json, service, clients, ovserve.service.cli, ovserve.rest_bridge.app, ovserve.clients;"
        "import ovserve.clients.v1.chat_pb2_grpc as g, ovserve.clients.v1.response_events_pb2 as e;"
        "print(json.dumps([service.OWNER, clients.OWNER, ovserve.service.cli.__file__, ovserve.clients.__file__,"
        " g.__file__, g.ChatServiceStub.__name__, e.ResponseStreamEvent.DESCRIPTOR.full_name]))"
    )
    # -P: not the working directory; PYTHONPATH: that site-packages ahead of this checkout's editable install (this
    # interpreter's environment lends the dependencies).
    shown = subprocess.run([sys.executable, "-P", "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(site)},
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    service_owner, clients_owner, cli, client, stubs, stub, event = json.loads(shown.stdout)
    assert (service_owner, clients_owner) == ("user service", "user clients")
    assert all(path.startswith(str(site)) for path in (cli, client, stubs))
    assert (stub, event) == ("ChatServiceStub", "ovserve.v1.ResponseStreamEvent")


def installed_bytes(environment: Path, distribution: str) -> int:
    """Bytes of the files a distribution installed into an environment (its RECORD)."""
    (packages,) = environment.glob("lib/python3*/site-packages")
    (record,) = packages.glob(f"{distribution}-*.dist-info/RECORD")
    files = [packages / line.split(",")[0] for line in record.read_text(encoding="utf-8").splitlines() if line]
    return sum(path.stat().st_size for path in files if path.is_file())


def test_the_client_alone_calls_the_server(server: ServerThread, tmp_path: Path) -> None:
    """pip install ./clients into a fresh virtual environment: no OpenVINO, under 15 MB, and it calls the server."""
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = str(environment / "bin" / "python")
    pip("install", str(ROOT / "clients"), python=python)
    call = (
        "import json, sys, importlib.util\n"
        "from ovserve.clients import OvserveClient\n"
        "with OvserveClient(sys.argv[1], timeout=60) as client:\n"
        "    models = [m.id for m in client.list_models()]\n"
        "    reply = client.chat('tiny-chat', [{'role': 'user', 'content': 'Hello!'}], max_tokens=8, temperature=0)\n"
        "print(json.dumps({'models': models, 'answer': reply.choices[0].message.content,\n"
        "                  'openvino': importlib.util.find_spec('openvino') is not None,\n"
        "                  'server': importlib.util.find_spec('ovserve.service') is not None}))\n"
    )
    shown = subprocess.run([python, "-P", "-c", call, server.target], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    result = json.loads(shown.stdout)
    assert "tiny-chat" in result["models"] and result["answer"].strip()
    assert (result["openvino"], result["server"]) == (False, False)
    size = installed_bytes(environment, "ovserve_client")
    grpc = installed_bytes(environment, "grpcio")
    print(f"ovserve-client installed: {size / 2**20:.1f} MB (grpcio, its largest dependency: {grpc / 2**20:.1f} MB)")
    assert 0 < size < CLIENT_LIMIT_BYTES, size


def test_one_version_in_the_three_places_it_is_written() -> None:
    server = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    client = tomllib.loads((ROOT / "clients" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert client["version"] == server["version"]
    assert f"ovserve-client=={server['version']}" in server["dependencies"]
    assert (ROOT / "clients" / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
