"""Worker processes start with glibc's malloc asking for transparent huge pages (process.MALLOC_TUNABLE)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from ovserve.service.bench.embeddings import Batch
from ovserve.service.bench.engine_process import EngineProcess
from ovserve.service.bench.load import BenchRequest, Schedule
from ovserve.service.bench.pipeline_process import PipelineProcess
from ovserve.service.models import BUNDLED_MODELS_DIR
from ovserve.service.observability.metrics import process_cpu_seconds
from ovserve.service.workers import process as process_module
from ovserve.service.workers.errors import EngineError
from ovserve.service.workers.process import MALLOC_TUNABLE, child_environment


def test_the_tunable_is_added_to_what_the_operator_set_unless_it_names_hugetlb() -> None:
    assert child_environment({})["GLIBC_TUNABLES"] == MALLOC_TUNABLE
    other = child_environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})["GLIBC_TUNABLES"]
    assert other == f"glibc.malloc.arena_max=2:{MALLOC_TUNABLE}"
    chosen = child_environment({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"})["GLIBC_TUNABLES"]
    assert chosen == "glibc.malloc.hugetlb=0"  # the operator's word stands


def _environment_of(pid: int) -> dict[str, str]:
    """The process's environment once its new image has set it up: Popen returns at exec's close-on-exec, a moment
    before the kernel points /proc/PID/environ at the new stack (until then it reads empty). Awaited, bounded."""
    deadline = time.monotonic() + 10
    while True:
        lines = [line for line in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if line]
        if lines or time.monotonic() > deadline:
            return dict(line.decode().split("=", 1) for line in lines)
        time.sleep(0.01)


def test_a_started_worker_runs_with_the_tunable() -> None:
    """The real start path: the child's own environment, read from /proc."""
    process, connection = process_module.start_child("tests.service.workers.dying_worker")  # waits for its spec
    try:
        assert MALLOC_TUNABLE in _environment_of(process.pid)["GLIBC_TUNABLES"].split(":")
    finally:
        process.kill()
        process.wait()
        connection.close()


def test_the_bench_runs_the_engine_alone_as_the_service_runs_its_engine(tiny_chat_dir: Path) -> None:
    """``ovserve bench --engine``'s bare pipeline runs in a process of its own, started as the engine processes are
    (the tunable in its environment), answers a load there, and is gone once closed."""
    engine = EngineProcess(tiny_chat_dir, "chat")
    try:
        assert MALLOC_TUNABLE in _environment_of(engine.process.pid)["GLIBC_TUNABLES"].split(":")
        cpu_before = engine.cpu_seconds()
        results, duration = engine.run([BenchRequest("hello there", 8)], Schedule(concurrency=1))
        assert [(result.ok, result.output_tokens) for result in results] == [(True, 8)] and duration > 0
        assert cpu_before is not None and (engine.cpu_seconds() or 0) > cpu_before  # the child did the work
    finally:
        engine.close()
    assert engine.process.returncode is not None


@pytest.mark.parametrize(("endpoint", "model"), [("embeddings", "tiny-embed"), ("rerank", "tiny-rerank")])
def test_the_bench_runs_the_bare_embeddings_and_rerank_pipelines_as_the_service_runs_them(
    endpoint: str, model: str
) -> None:
    """``ovserve bench --endpoint embeddings|rerank --engine``'s bare pipeline runs in a process of its own, started
    as the pipeline workers are (the tunable in its environment), answers there, and is gone once closed; a call
    its pipeline raises on comes back as an EngineError naming the pipeline's error, and the child serves on."""
    batches = [Batch(["the sea and the ships", "a winter road"], "where is the harbour")] * 3
    runner = PipelineProcess(BUNDLED_MODELS_DIR / model, endpoint)
    try:
        assert MALLOC_TUNABLE in _environment_of(runner.process.pid)["GLIBC_TUNABLES"].split(":")
        before = process_cpu_seconds(runner.process.pid)
        assert asyncio.run(runner.run(batches, 2)) > 0
        assert before is not None and (process_cpu_seconds(runner.process.pid) or 0) > before  # the child did it
        with pytest.raises(EngineError, match="the bare pipeline failed: "):
            asyncio.run(runner.run([Batch([None], "where")], 1))  # not a text: OpenVINO GenAI's binding refuses it
        assert asyncio.run(runner.run(batches, 1)) > 0
    finally:
        asyncio.run(runner.close())
    assert runner.process.returncode is not None


def test_a_pipeline_that_fails_to_load_is_one_error_naming_the_model(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match=f"the engine alone failed to load {tmp_path}"):
        PipelineProcess(tmp_path, "embeddings")
