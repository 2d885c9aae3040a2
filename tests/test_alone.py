"""tests/alone.py: under two xdist workers, a test marked ``alone`` runs while no other test is in progress, and
the others still run on both workers (a small suite of its own, run by pytest in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORDINARY = 16  # tests in the other file, each 0.25 s: the alone test starts once two of them have ended

SUITE = {
    "conftest.py": """
import json, os, time
from pathlib import Path

import pytest

LOG = Path(os.environ["ALONE_LOG"])


@pytest.fixture(autouse=True)
def record(request):
    '''Write each test's start and end (and its worker) to the log; mark it in progress meanwhile.'''
    flag = LOG.parent / f"running-{request.node.name}"
    flag.touch()
    start = time.monotonic()
    yield
    flag.unlink()
    row = [request.node.name, os.environ.get("PYTEST_XDIST_WORKER"), start, time.monotonic()]
    with LOG.open("a") as log:
        log.write(json.dumps(row) + "\\n")
""",
    "test_a.py": """
import time

import pytest


def test_the_other_file_is_under_way():
    from conftest import LOG
    while sum(1 for line in (LOG.read_text().splitlines() if LOG.exists() else []) if "test_ordinary" in line) < 2:
        time.sleep(0.02)


@pytest.mark.alone
def test_alone(tmp_path):
    from conftest import LOG
    seen = set()
    for _ in range(20):  # 1 s, looking for any other test in progress
        seen |= {p.name for p in LOG.parent.glob("running-*")} - {"running-test_alone"}
        time.sleep(0.05)
    assert not seen, seen
""",
    "test_b.py": f"""
import time

import pytest


@pytest.mark.parametrize("n", range({ORDINARY}))
def test_ordinary(n):
    time.sleep(0.25)
""",
}


def test_an_alone_test_runs_with_no_other_beside_it(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    for name, text in SUITE.items():
        (suite / name).write_text(text)
    log = tmp_path / "log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(ALONE_LOG=str(log), PYTHONPATH=os.pathsep.join([str(REPO), str(suite)]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.alone", "-n", "2", "--dist", "loadfile", "-q", "-p",
         "no:cacheprovider", "--rootdir", str(suite), str(suite)],
        cwd=suite, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == ORDINARY + 2
    [(alone_worker, alone_start, alone_end)] = [row[1:] for row in rows if row[0] == "test_alone"]
    others = [row for row in rows if row[0].startswith("test_ordinary")]
    # None overlapped it: each other test ended before it began or began after it ended.
    assert all(end <= alone_start or start >= alone_end for _, _, start, end in others), (rows, alone_start)
    # It did not simply run first or last: the other file's tests ran on both sides of it, on the other worker.
    assert {worker for _, worker, _, _ in others} == {({"gw0", "gw1"} - {alone_worker}).pop()}
    assert any(end <= alone_start for *_, end in others) and any(start >= alone_end for _, _, start, _ in others)
