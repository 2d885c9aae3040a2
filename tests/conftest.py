"""Shared fixtures: the bundled models and a real ovserve gRPC server on a free local port."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2_grpc, completion_pb2_grpc, model_pb2_grpc
from ovserve.service.config import ServeConfig
from ovserve.service.engine import EngineSettings
from ovserve.service.models import BUNDLED_DRAFT, BUNDLED_MODEL, BUNDLED_MODELS_DIR, ModelSpec, bundled_model_specs
from ovserve.service.server.composition import batch_lines
from ovserve.service.server.grpc_server import Server

# The ``alone`` marker, and the lock that keeps its tests from running beside another under xdist's workers.
pytest_plugins = ["tests.alone"]

TINY_CHAT = BUNDLED_MODELS_DIR / BUNDLED_MODEL
TINY_CHAT_DRAFT = BUNDLED_MODELS_DIR / BUNDLED_DRAFT
# What ``ovserve serve`` with no models serves, in ListModels' order (the generating models, then the others).
SERVED_BY_DEFAULT = [
    "tiny-chat", "tiny-chat-speculative", "tiny-vision", "tiny-embed", "tiny-rerank", "tiny-whisper", "tiny-diffusion",
    "tiny-speech",
]  # fmt: skip
# Small KV caches: several engines share the test machine. Computing in f32: the same numbers on every CPU up
# to rounding (OpenVINO computes in bf16 where the CPU has AMX or AVX-512 BF16), so the tests that hold the server's
# logprobs and greedy outputs to a reference hold on any machine. Tests with settings of their own run at
# OpenVINO's default precision, bf16 on such CPUs.
TEST_SETTINGS = EngineSettings(max_num_seqs=64, inference_precision="f32")
# What a test's own reference compile of a model passes, for the same reason.
REFERENCE_PROPERTIES: dict[str, object] = {"INFERENCE_PRECISION_HINT": "f32"}


class ServerThread:
    """An ovserve Server running on its own event loop in a background thread."""

    def __init__(self, config: ServeConfig) -> None:
        self.server = Server(config)
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ovserve-test-server", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.start())
            self.server.batch_lines = batch_lines(self.server, self.target)  # as `ovserve serve` wires it
            self.loop.run_until_complete(self.server.load_models())
        except BaseException as error:
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> ServerThread:
        """Start and wait until the models are loaded."""
        self._thread.start()
        self._ready.wait(timeout=300)
        if self._error is not None:
            raise self._error
        return self

    @property
    def target(self) -> str:
        """host:port for grpc.insecure_channel."""
        return f"{self.server.config.host}:{self.server.port}"

    def run(self, coroutine):
        """Run a coroutine on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    def stop(self) -> None:
        """Stop the server and its engines, end the loop and the thread."""
        if self._thread.is_alive():
            self.run(self.server.stop())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=30)
        self.loop.close()


def start_server(models: list[ModelSpec], **config: Any) -> ServerThread:
    """A started ServerThread on 127.0.0.1 with a free port; ``config`` overrides ServeConfig fields."""
    return ServerThread(
        ServeConfig(**{"host": "127.0.0.1", "port": 0, "models": models, "grace_seconds": 1.0, **config})
    ).start()


@contextmanager
def channel_to(specs: list[ModelSpec], **config: Any) -> Iterator[grpc.Channel]:
    """A channel to a server of ``specs`` started for the block (``config`` as start_server takes), stopped after."""
    running = start_server(specs, **config)
    try:
        with grpc.insecure_channel(running.target) as open_channel:
            yield open_channel
    finally:
        running.stop()


@pytest.fixture(scope="session")
def server() -> Iterator[ServerThread]:
    """The bundled models (tiny-chat, tiny-chat-speculative) on a real gRPC server, shared by the session."""
    running = start_server(bundled_model_specs(TEST_SETTINGS))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def channel(server: ServerThread) -> Iterator[grpc.Channel]:
    """A client channel to the session server."""
    with grpc.insecure_channel(server.target) as open_channel:
        yield open_channel


@pytest.fixture
def chat(channel: grpc.Channel) -> chat_pb2_grpc.ChatServiceStub:
    """ChatService stub."""
    return chat_pb2_grpc.ChatServiceStub(channel)


@pytest.fixture
def completions(channel: grpc.Channel) -> completion_pb2_grpc.CompletionServiceStub:
    """CompletionService stub."""
    return completion_pb2_grpc.CompletionServiceStub(channel)


@pytest.fixture
def models(channel: grpc.Channel) -> model_pb2_grpc.ModelServiceStub:
    """ModelService stub."""
    return model_pb2_grpc.ModelServiceStub(channel)


@pytest.fixture(scope="session")
def tiny_chat_dir() -> Path:
    """Directory of the bundled tiny-chat model."""
    return TINY_CHAT


# Lines the standing fuzz suites report (inputs tried per face, statuses): printed at the end of every run,
# so CI's log shows them whatever pytest's capture does with the tests' own output. A test appends to
# FUZZ_REPORT in whichever process runs it (an xdist worker); each line travels to the
# process that prints the summary in the user_properties of the report of the phase that wrote it.
FUZZ_REPORT: list[str] = []
REPORT_PROPERTY = "ovserve-report"
_REPORTED: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Move the lines written during this phase into its report (reports are what xdist sends back)."""
    outcome = yield
    report = outcome.get_result()
    report.user_properties.extend((REPORT_PROPERTY, line) for line in FUZZ_REPORT)
    FUZZ_REPORT.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Gather the reported lines where the summary is printed (the controller, or the only process)."""
    _REPORTED.extend(value for name, value in report.user_properties if name == REPORT_PROPERTY)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the fuzz suites' figures after the test summary."""
    if _REPORTED:
        terminalreporter.section("fuzz suites")
        for line in _REPORTED:
            terminalreporter.write_line(line)
