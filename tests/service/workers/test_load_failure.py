"""A worker process that fails to load is reported with its cause (the signal that killed it, its exit status,
the exception it raised) and the settings it compiled with, never an empty reason (issue 45)."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ovserve.service.engine import Engine, EngineError
from ovserve.service.workers import process as process_module
from ovserve.service.workers.load_failure import compile_settings, how_it_ended
from ovserve.service.workers.process import ENTRY_POINTS, WorkerProcess
from ovserve.service.workers.supervisor import Supervisor
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.service.workers.dying_worker import DyingSpec

BF16_ONE_THREAD = {"INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": 1}


@pytest.fixture
def dying(monkeypatch: pytest.MonkeyPatch) -> str:
    """The entry point of a worker that dies while loading, as its DyingSpec says."""
    monkeypatch.setitem(ENTRY_POINTS, "dying", "tests.service.workers.dying_worker")
    return "dying"


def _python(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", f"import os, resource, signal\n{code}"])


def test_how_a_process_ended_names_the_signal_or_the_status() -> None:
    no_core = "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    fpe = _python(no_core + "os.kill(os.getpid(), signal.SIGFPE)")
    assert how_it_ended(fpe) == "was killed by SIGFPE (Floating point exception)"
    assert how_it_ended(_python("os.kill(os.getpid(), signal.SIGKILL)")) == "was killed by SIGKILL (Killed)"
    assert how_it_ended(_python("os._exit(3)")) == "exited with status 3"
    assert how_it_ended(_python("os._exit(0)")) == "exited with status 0"
    alive = _python("signal.pause()")
    try:
        assert how_it_ended(alive, wait_s=0.2) == "closed its pipe without ending"
    finally:
        alive.kill()
        alive.wait()


def test_the_settings_named_are_the_device_precision_and_threads_given_or_unset() -> None:
    given = DyingSpec(properties={**BF16_ONE_THREAD, "KV_CACHE_PRECISION": "u8"})
    assert compile_settings(given) == (
        "settings: device CPU; precision bf16; inference threads 1; KV_CACHE_PRECISION u8"
    )
    unset = compile_settings(DyingSpec(device="GPU"))
    assert unset.startswith("settings: device GPU; precision unset (OpenVINO's default: bf16 on CPUs with AMX")
    assert unset.endswith("; inference threads unset (OpenVINO's default: one per core)")


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        (
            DyingSpec(properties=BF16_ONE_THREAD, signal=signal.SIGFPE),
            "was killed by SIGFPE (Floating point exception)",
        ),
        (DyingSpec(properties=BF16_ONE_THREAD, signal=signal.SIGSEGV), "was killed by SIGSEGV (Segmentation fault)"),
        (DyingSpec(properties=BF16_ONE_THREAD, status=2), "exited with status 2"),
    ],
)
def test_a_worker_dying_while_loading_names_its_cause_and_settings(dying: str, spec: DyingSpec, cause: str) -> None:
    with pytest.raises(EngineError) as failed:
        WorkerProcess(spec, "m", dying)  # type: ignore[arg-type]
    assert str(failed.value).startswith(f"model 'm' failed to load: the {dying} process {cause} while loading; ")
    assert str(failed.value).endswith("; settings: device CPU; precision bf16; inference threads 1")


def test_the_supervisors_first_load_failure_is_logged(dying: str, caplog: pytest.LogCaptureFixture) -> None:
    spec = DyingSpec(signal=signal.SIGFPE)
    with caplog.at_level(logging.ERROR, logger="ovserve.service.workers.supervisor"), pytest.raises(EngineError):
        Supervisor(
            "the engine of 'm'",
            lambda: WorkerProcess(spec, "m", dying),  # type: ignore[arg-type]
            print,
            print,
            waiting=lambda: 0,
            stall_timeout_s=60,
        )
    [record] = caplog.records
    assert "model 'm' failed to load: the dying process was killed by SIGFPE" in record.getMessage()


def test_a_real_engine_killed_while_loading_names_the_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    started = process_module.start_child

    def killed_at_once(module: str) -> tuple[subprocess.Popen[bytes], object]:
        child, connection = started(module)
        child.send_signal(signal.SIGKILL)  # it is still importing: far from Ready
        return child, connection

    monkeypatch.setattr(process_module, "start_child", killed_at_once)
    with pytest.raises(EngineError) as failed:
        Engine("tiny-chat", TINY_CHAT, dataclasses.replace(TEST_SETTINGS, inference_threads=1))
    assert str(failed.value) == (
        "model 'tiny-chat' failed to load: the engine process was killed by SIGKILL (Killed) while loading; "
        "settings: device CPU; precision f32; inference threads 1; KV_CACHE_PRECISION f16"
    )  # the KV cache's precision is always told on a CPU (EngineSettings.engine_properties)


def test_a_model_openvino_cannot_read_names_the_exception(tmp_path: Path) -> None:
    broken = tmp_path / "tiny-chat"
    shutil.copytree(TINY_CHAT, broken)
    (broken / "openvino_model.xml").write_text("<net name='broken'><layers><layer id='0' type='Nope'/></layers></net>")
    with pytest.raises(EngineError) as failed:
        Engine("broken", broken, TEST_SETTINGS)
    message = str(failed.value)
    assert message.startswith("model 'broken' failed to load: RuntimeError: ")  # OpenVINO's exception, named
    assert "Unable to read the model" in message
    assert message.endswith("; settings: device CPU; precision f32; inference threads unset (OpenVINO's default: "
                            "one per core); KV_CACHE_PRECISION f16")  # fmt: skip


def test_serve_ends_naming_the_cause_when_a_model_fails_to_load_at_start(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(TINY_CHAT, broken)
    (broken / "openvino_model.xml").write_text("<net/>")
    ended = subprocess.run(
        [sys.executable, "-m", "ovserve.service.cli", "serve", "--model", f"x={broken}", "--no-rest", "--port", "0",
         "--inference-threads", "2"],
        cwd=Path(__file__).resolve().parents[3], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ended.returncode == 1
    logged = [line for line in ended.stderr.splitlines() if " ERROR ovserve.service.workers.supervisor " in line]
    assert len(logged) == 1 and "model 'x' failed to load: RuntimeError: " in logged[0]  # the log
    last = ended.stderr.rstrip().rsplit("ovserve serve: ", 1)[-1]  # the one line it ends with, no traceback
    assert last.startswith("model 'x' failed to load: RuntimeError: ") and "Traceback" not in ended.stderr
    assert last.endswith("; settings: device CPU; precision unset (OpenVINO's default: bf16 on CPUs with AMX or "
                         "AVX-512 BF16, else f32); inference threads 2; KV_CACHE_PRECISION f16")  # fmt: skip
