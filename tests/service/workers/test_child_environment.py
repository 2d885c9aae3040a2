"""Worker processes start with glibc's malloc asking for transparent huge pages (process.MALLOC_TUNABLE)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ovserve.service.workers import process as process_module
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


def test_the_bench_measures_the_engine_alone_in_the_engines_environment() -> None:
    """``ovserve bench --engine`` runs again, once, with the tunable, as the service's engine processes do; a
    command without --engine, or one that has it already, goes on as it is."""
    code = (
        "import os; from ovserve.service.bench.cli import run_as_the_engine_runs as again; "
        "print(os.environ.get('GLIBC_TUNABLES', ''), flush=True); again(['--engine'])"
    )
    env = {key: value for key, value in os.environ.items() if key != "GLIBC_TUNABLES"}
    ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and ran.stdout.splitlines() == ["", MALLOC_TUNABLE], ran
    code = code.replace("['--engine']", "['--backend', 'grpc']")
    ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert ran.stdout.splitlines() == [""], ran
