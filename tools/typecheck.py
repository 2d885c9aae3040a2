"""Run mypy over what is installed as the ``ovserve`` namespace.

The folders service/, rest_bridge/ and clients/ install as ovserve.service, ovserve.rest_bridge and ovserve.clients
through the editable install's import hook, which mypy does not follow (it reads only plain paths). This script lays
the folders out as they are installed, as symbolic links under build/typecheck/ovserve/ (pyproject's ``mypy_path``),
then runs mypy with pyproject's configuration and any arguments given::

    python tools/typecheck.py          # what CI and the pre-commit hook run
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = ROOT / "build" / "typecheck" / "ovserve"
FOLDERS = ("service", "rest_bridge", "clients")


def lay_out() -> None:
    """build/typecheck/ovserve/<folder> -> ../../../<folder>, for each installed folder (idempotent)."""
    NAMESPACE.mkdir(parents=True, exist_ok=True)
    for folder in FOLDERS:
        link = NAMESPACE / folder
        if not link.is_symlink():
            link.symlink_to(Path("..", "..", "..", folder))


def main(argv: list[str]) -> int:
    lay_out()
    return subprocess.run([sys.executable, "-m", "mypy", *argv], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
