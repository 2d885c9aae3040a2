"""The ``family_models`` session fixture: every family of table.py built once, cached across sessions.

Each family's directory is keyed by a hash of what its model is made from (the builder, the family's row of
table.py, its template and tokenizer, tiny-chat's weights, and ovserve's template renderer, which renders the
prompts whose last tokens the scripts start from), so a rerun with nothing changed reuses it (~0 s), a change
to one family rebuilds that family only, and a change to the builder rebuilds all. The cache lives in pytest's
cache directory unless OVSERVE_FAMILY_MODELS names another. OVSERVE_FAMILIES (comma-separated names) builds
and serves only those families, to work on one: select its tests with -k as well.
"""

from __future__ import annotations

import fcntl
import hashlib
import multiprocessing
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from ovserve.service.engine import chat_template, template_probe
from tests.families import build, table

COMPLETE = ".complete"  # written last: a directory without it is a build that was cut short


def _file_digest(path: Path) -> bytes:
    return path.name.encode() + hashlib.sha256(path.read_bytes()).digest()


def _common_digest() -> bytes:
    """A digest of what every family model is made from (builder, renderer, tiny-chat's weights)."""
    files = [Path(build.__file__), Path(chat_template.__file__), Path(template_probe.__file__)]
    files += [build.TINY_CHAT / "openvino_model.bin"]
    return b"".join(_file_digest(path) for path in files)


def family_key(name: str, common: bytes) -> str:
    """The directory name of family ``name``'s model: its name and a hash of everything it is made from."""
    family = table.FAMILIES[name]
    digest = hashlib.sha256(common)
    digest.update(repr(family).encode())  # the row: tokens, script, template and tokenizer names
    digest.update(_file_digest(family.template_path))
    digest.update(_file_digest(table.TOKENIZERS_DIR / f"{family.tokenizer}.tokenizer.json.xz"))
    return f"{name}.{digest.hexdigest()[:16]}"


def _build(name: str, target: Path) -> tuple[str, float]:
    """Build one family into ``target`` (via a scratch directory, renamed when whole); its build seconds."""
    started = time.monotonic()
    scratch = target.parent / f".{target.name}.{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    build.build_family_model(name, scratch)
    (scratch / COMPLETE).write_text("")
    shutil.rmtree(target, ignore_errors=True)
    scratch.rename(target)
    return name, time.monotonic() - started


def build_all(root: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Each family's model directory under ``root``, building those not there yet (in parallel, one per core)."""
    root.mkdir(parents=True, exist_ok=True)
    names = names or list(table.FAMILIES)
    common = _common_digest()
    targets = {name: root / family_key(name, common) for name in names}
    missing = [name for name in names if not (targets[name] / COMPLETE).is_file()]
    if missing:
        # Spawned, not forked: by now the session's servers run threads (event loops, OpenVINO's), and a child
        # forked while one of them holds a lock waits on that lock for ever.
        workers = min(len(missing), os.cpu_count() or 1)
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for name, seconds in pool.map(_build, missing, [targets[name] for name in missing]):
                print(f"family model {name}: built in {seconds:.1f} s")
    return targets


def _remove_stale(root: Path) -> None:
    """Remove the models of older inputs (~70 MB each), and the cache's earlier layout (one directory for all)."""
    common = _common_digest()
    current = {family_key(name, common) for name in table.FAMILIES}
    for entry in root.iterdir() if root.is_dir() else ():
        if entry.is_dir() and not entry.name.startswith(".") and entry.name not in current:
            shutil.rmtree(entry, ignore_errors=True)


@pytest.fixture(scope="session")
def family_models(request: pytest.FixtureRequest) -> dict[str, Path]:
    """Family name -> its tiny model directory (see tests/families/table.py)."""
    configured = os.environ.get("OVSERVE_FAMILY_MODELS")
    root = Path(configured) if configured else Path(request.config.cache.mkdir("family-models"))
    chosen = [name for name in os.environ.get("OVSERVE_FAMILIES", "").split(",") if name]
    root.mkdir(parents=True, exist_ok=True)
    # One builder at a time: xdist's workers (`-n 2`) each set this fixture up, and the first to
    # take the lock builds what the others then find complete.
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _remove_stale(root)
        return build_all(root, chosen or None)
