"""The ``family_models`` session fixture: every family of table.py built once, cached across sessions.

The cache is keyed by a hash of what the models are made from (the builder, the table, the families' templates
and tokenizers, tiny-chat's weights, and ovserve's template renderer, which renders the prompts whose last
tokens the scripts start from), so a rerun with nothing changed reuses the directories (~0 s) and any change
rebuilds. It lives in pytest's cache directory unless OVSERVE_FAMILY_MODELS names another.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from service.engine import chat_template, template_probe
from tests.families import build, table

COMPLETE = ".complete"  # written last: a directory without it is a build that was cut short


def _inputs_hash() -> str:
    """A hash of everything a family model is made from."""
    digest = hashlib.sha256()
    files = [Path(build.__file__), Path(table.__file__), Path(chat_template.__file__), Path(template_probe.__file__)]
    files += [build.TINY_CHAT / "openvino_model.bin"]
    # Only the templates and tokenizers the families use: vendoring another template rebuilds nothing.
    files += sorted({family.template_path for family in table.FAMILIES.values()})
    files += sorted(table.TOKENIZERS_DIR / f"{source}.tokenizer.json.xz" for source in table.tokenizer_sources())
    for path in files:
        digest.update(path.name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _build(name: str, root: Path) -> tuple[str, float]:
    """Build one family into root/name (via a scratch directory, renamed when whole); its build seconds."""
    started = time.monotonic()
    scratch = root / f".{name}.{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    build.build_family_model(name, scratch)
    (scratch / COMPLETE).write_text("")
    shutil.rmtree(root / name, ignore_errors=True)
    scratch.rename(root / name)
    return name, time.monotonic() - started


def build_all(root: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Every family's model directory under ``root``, building those not there yet (in parallel, one per core)."""
    root.mkdir(parents=True, exist_ok=True)
    names = names or list(table.FAMILIES)
    missing = [name for name in names if not (root / name / COMPLETE).is_file()]
    if missing:
        # Spawned, not forked: by now the session's servers run threads (event loops, OpenVINO's), and a child
        # forked while one of them holds a lock waits on that lock for ever.
        workers = min(len(missing), os.cpu_count() or 1)
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for name, seconds in pool.map(_build, missing, [root] * len(missing)):
                print(f"family model {name}: built in {seconds:.1f} s")
    return {name: root / name for name in names}


@pytest.fixture(scope="session")
def family_models(request: pytest.FixtureRequest) -> dict[str, Path]:
    """Family name -> its tiny model directory (see tests/families/table.py)."""
    configured = os.environ.get("OVSERVE_FAMILY_MODELS")
    base = Path(configured) if configured else Path(request.config.cache.mkdir("family-models"))
    key = _inputs_hash()
    for stale in base.iterdir() if base.is_dir() else ():
        if stale.is_dir() and stale.name != key:  # models of older inputs: ~1.6 GB each
            shutil.rmtree(stale, ignore_errors=True)
    return build_all(base / key)
