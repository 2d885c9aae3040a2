"""One version, written in pyproject.toml: read at run time (``ovserve.service.__version__``) and shown by
``ovserve --version``."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import ovserve.service

ROOT = Path(__file__).resolve().parents[1]


def pyproject_version() -> str:
    """pyproject.toml's ``[project] version``."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_the_package_knows_pyprojects_version() -> None:
    assert ovserve.service.__version__ == pyproject_version()


def test_ovserve_version_prints_it_and_exits_0() -> None:
    shown = subprocess.run([sys.executable, "-m", "ovserve.service.cli", "--version"], capture_output=True, text=True,
                           timeout=60, check=True)  # fmt: skip
    assert shown.stdout.strip() == f"ovserve {pyproject_version()}"
