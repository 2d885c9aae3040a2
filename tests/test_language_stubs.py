"""The TypeScript and Go stubs generated from proto/: current, compiling, and calling a real server.

tools/generate_language_stubs.py regenerates them with buf and local plugins (npm's protoc-gen-es; Debian's
protoc-gen-go and protoc-gen-go-grpc, which .ci/run installs). A missing generator or compiler fails these tests
with how to install it: a skip would let the stubs drift unseen.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, model_pb2, model_pb2_grpc
from tests.conftest import ServerThread

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "generate_language_stubs.py"
CALLERS = ROOT / "tests" / "language_stubs"
NODE_MODULES = ROOT / "node_modules"
TSC = NODE_MODULES / ".bin" / "tsc"
# Debian's Go sources of grpc, protobuf and genproto (golang-google-*-dev): no Go module proxy is reachable here,
# so the Go stubs build in GOPATH mode against them.
DEBIAN_GOPATH = Path("/usr/share/gocode")
GO_PACKAGES = (
    "golang-go golang-google-protobuf-dev golang-google-grpc-dev golang-google-genproto-dev"
    " golang-github-golang-protobuf-1-5-dev"
)
# Only golang/protobuf 1.4 and later (APIv1 over APIv2) has this file: grpc-go's codec built on 1.3 panics on the
# APIv2 messages that protoc-gen-go writes ("protobuf tag not enough fields").
GOLANG_PROTOBUF_SHIM = DEBIAN_GOPATH / "src" / "github.com" / "golang" / "protobuf" / "proto" / "registry.go"
# The module path buf.gen.go.yaml gives the stubs (go_package_prefix) and clients/go/go.mod declares.
GO_MODULE = "ovserve/clients/go"
MODEL, PROMPT, MAX_TOKENS = "tiny-chat", "What is the capital of France?", 12
TIMEOUT_S = 300


def _run(
    argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion; fail the test with its output if it exits non-zero."""
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=TIMEOUT_S)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def _require(path: Path | None, what: str, install: str) -> Path:
    if path is None or not path.exists():
        pytest.fail(f"{what} is not installed: {install}")
    return path


def _which(name: str) -> Path | None:
    found = shutil.which(name)
    return Path(found) if found else None


def test_stubs_match_the_contract() -> None:
    """Regenerated from proto/ into a temporary folder, the stubs equal the committed ones byte for byte."""
    result = subprocess.run(
        [sys.executable, str(TOOL), "--check"], capture_output=True, text=True, check=False, timeout=TIMEOUT_S
    )
    assert result.returncode == 0, result.stderr


def test_a_missing_plugin_fails_and_says_how_to_install_it(tmp_path: Path) -> None:
    """Without the Go plugins on PATH the check fails (exit 2), naming each plugin and its install command."""
    result = subprocess.run(
        [sys.executable, str(TOOL), "--check"],
        env={**os.environ, "PATH": str(tmp_path)}, capture_output=True, text=True, check=False, timeout=TIMEOUT_S,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "protoc-gen-go: apt-get install protoc-gen-go" in result.stderr
    assert "protoc-gen-go-grpc: apt-get install protoc-gen-go-grpc" in result.stderr


def test_the_typescript_package_asks_for_the_runtime_it_was_generated_for() -> None:
    """clients/typescript/package.json's ranges start at the versions the root package.json pins and tests with
    (protoc-gen-es writes code for its own @bufbuild/protobuf release)."""
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    stubs = json.loads((ROOT / "clients" / "typescript" / "package.json").read_text())
    assert pinned["@bufbuild/protoc-gen-es"] == pinned["@bufbuild/protobuf"]
    assert stubs["dependencies"] == {"@bufbuild/protobuf": "^" + pinned["@bufbuild/protobuf"]}
    assert stubs["peerDependencies"] == {"@connectrpc/connect": "^" + pinned["@connectrpc/connect"]}


def test_typescript_stubs_type_check() -> None:
    """clients/typescript compiles under strict TypeScript with Node's module resolution, as a consumer builds it."""
    tsc = _require(TSC, "tsc", "npm install (package.json pins typescript)")
    _run([str(tsc), "-p", str(ROOT / "clients" / "typescript")])


@pytest.fixture(scope="module")
def gopath(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment for GOPATH-mode Go: clients/go under its module path, then Debian's Go sources."""
    _require(_which("go"), "go", f"apt-get install {GO_PACKAGES}")
    _require(DEBIAN_GOPATH / "src" / "google.golang.org" / "grpc", "grpc-go", f"apt-get install {GO_PACKAGES}")
    _require(GOLANG_PROTOBUF_SHIM, "golang/protobuf 1.5", "apt-get install golang-github-golang-protobuf-1-5-dev")
    root = tmp_path_factory.mktemp("gopath")
    link = root / "src" / GO_MODULE
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT / "clients" / "go")
    yield {**os.environ, "GO111MODULE": "off", "GOFLAGS": "", "GOPATH": f"{root}{os.pathsep}{DEBIAN_GOPATH}"}


def test_go_stubs_vet_and_build(gopath: dict[str, str]) -> None:
    """go vet and go build pass over the generated Go package."""
    package = Path(gopath["GOPATH"].split(os.pathsep)[0]) / "src" / GO_MODULE
    _run(["go", "vet", "./..."], cwd=package, env=gopath)
    _run(["go", "build", "./..."], cwd=package, env=gopath)


def _typescript_caller(out: Path, env: dict[str, str]) -> list[str]:
    """tests/language_stubs/call.mts compiled with the stubs it imports; the node command that runs it."""
    tsc = _require(TSC, "tsc", "npm install (package.json pins typescript)")
    node = _require(_which("node"), "node", "apt-get install nodejs")
    _run([str(tsc), "-p", str(CALLERS / "tsconfig.json"), "--outDir", str(out)])
    # What was emitted is ES modules, resolving the Connect and protobuf runtimes from the checkout's node_modules.
    (out / "package.json").write_text('{"type": "module"}\n')
    (out / "node_modules").symlink_to(NODE_MODULES)
    return [str(node), str(out / "tests" / "language_stubs" / "call.mjs")]


def _go_caller(out: Path, env: dict[str, str]) -> list[str]:
    """tests/language_stubs/call.go built against the Go stubs; the binary."""
    binary = out / "call"
    _run(["go", "build", "-o", str(binary), "call.go"], cwd=CALLERS, env=env)
    return [str(binary)]


CALLER_BUILDERS: dict[str, Callable[[Path, dict[str, str]], list[str]]] = {
    "typescript": _typescript_caller,
    "go": _go_caller,
}


@pytest.fixture
def caller(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """The command that calls a server with the stubs of the language the test is parametrized with."""
    env = request.getfixturevalue("gopath") if request.param == "go" else dict(os.environ)
    return CALLER_BUILDERS[request.param](tmp_path, env)


@pytest.mark.parametrize("caller", sorted(CALLER_BUILDERS), indirect=True)
def test_stubs_call_a_running_server(caller: list[str], server: ServerThread, channel: grpc.Channel) -> None:
    """Another language's stubs list the models, chat unary and streaming, and get NOT_FOUND, as Python does."""
    chat = chat_pb2_grpc.ChatServiceStub(channel)
    models = model_pb2_grpc.ModelServiceStub(channel)
    expected = chat.CreateChatCompletion(
        chat_pb2.CreateChatCompletionRequest(
            model=MODEL, messages=[chat_pb2.ChatMessage(role="user", content=PROMPT)],
            max_tokens=MAX_TOKENS, temperature=0,
        )
    )  # fmt: skip
    with pytest.raises(grpc.RpcError) as missing:
        models.GetModel(model_pb2.GetModelRequest(model="no-such-model"))
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND

    result = _run([*caller, server.target, MODEL, PROMPT, str(MAX_TOKENS)])
    got = json.loads(result.stdout)

    assert got["models"] == [model.id for model in models.ListModels(model_pb2.ListModelsRequest()).data]
    assert MODEL in got["models"]
    assert got["unary"], "empty completion"
    # Greedy decoding: the same answer as the Python client's, token for token, over both RPCs.
    assert got["unary"] == expected.choices[0].message.content
    assert got["streamed"] == got["unary"]
    assert got["finish"] == expected.choices[0].finish_reason
    assert got["missingModelCode"] == "NotFound"
