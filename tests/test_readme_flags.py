"""The docs' flag tables (docs/operations/configuration.md) are the ``ovserve serve`` and ``ovserve bridge`` parsers,
filled from dataclass fields."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "readme_flags.py"


def tool() -> ModuleType:
    """tools/readme_flags.py as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("readme_flags", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_flag_tables_match_the_flags() -> None:
    checked = subprocess.run([sys.executable, str(TOOL), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_a_drifted_default_or_a_missing_flag_is_caught() -> None:
    readme = tool().CONFIGURATION.read_text(encoding="utf-8")
    rewrite = tool().rewrite
    assert rewrite(readme) == readme
    row = "| `--max-num-seqs SEQS` | sequences batched per step | 256 |\n"
    assert row in readme  # EngineSettings.max_num_seqs: its help and default, written once in the field
    assert rewrite(readme.replace(row, row.replace("256", "128"))) == readme
    assert rewrite(readme.replace(row, "")) == readme
    for flag in ("--no-prefix-caching", "--rest-deadline-seconds SECONDS", "--response-max-age SECONDS", "--target"):
        assert f"| `{flag}" in readme
