"""The ``alone`` marker: a test that measures time or CPU against a baseline runs with no other test beside it.

Such a test compares two measurements taken in the same run (a ratio, never a wall-clock threshold). When the suite
runs on several pytest-xdist workers, a test in the other worker takes cores from one side of the ratio and not
the other, or (test_inference_threads) takes away the idle core whose use the test measures. So each test holds a
lock file for its whole run protocol (setup, call and teardown, where module fixtures start and stop servers):
shared for ordinary tests, exclusive for ``alone`` ones. A waiting ``alone`` test first takes a second lock, the
gate, which every test passes through before its shared lock: the other worker's stream of short tests cannot
starve it. In one process (no xdist) nothing is locked.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

MARKER = "alone"
# The memory the suite's servers and engines take bounds the workers more than the cores do: two fit a 24 GiB
# machine with half of it to spare (measured: MemAvailable never below 12.4 GiB of 23).
MAX_WORKERS = 2


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker."""
    config.addinivalue_line(
        "markers", f"{MARKER}: measures time or CPU against a baseline; runs with no other test beside it under xdist"
    )


@pytest.hookimpl(optionalhook=True)  # xdist's hook: without xdist, pytest would refuse an unknown one
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core, at most MAX_WORKERS."""
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


_RUN_LOCKS = pytest.StashKey[tuple[Path, Path]]()


def _run_locks(testrunuid: str) -> tuple[Path, Path]:
    """The gate and lock files of the run ``testrunuid``, which its workers share."""
    stem = Path(tempfile.gettempdir()) / f"ovserve-tests-{testrunuid}"
    return stem.with_suffix(".gate"), stem.with_suffix(".lock")


def _lock_paths(config: pytest.Config) -> tuple[Path, Path] | None:
    """This worker's run's gate and lock files; None in one process."""
    worker_input = getattr(config, "workerinput", None)
    return None if worker_input is None else _run_locks(worker_input["testrunuid"])


@contextmanager
def _held(paths: tuple[Path, Path], exclusive: bool) -> Iterator[None]:
    """Hold the run's lock, shared or exclusive, passing through the gate first (see the module's docstring)."""
    gate_path, lock_path = paths
    with open(gate_path, "a") as gate, open(lock_path, "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Run the test's setup, call and teardown under the run's lock (exclusive for ``alone`` tests)."""
    paths = _lock_paths(item.config)
    if paths is None:
        yield
        return
    with _held(paths, exclusive=item.get_closest_marker(MARKER) is not None):
        yield


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """The controller notes the run's lock files (an xdist hook, called as each worker starts)."""
    node.config.stash[_RUN_LOCKS] = _run_locks(node.workerinput["testrunuid"])


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller removes the run's lock files once its workers are done."""
    for path in config.stash.get(_RUN_LOCKS, ()):
        path.unlink(missing_ok=True)
