"""The model cache: converted models, one directory per source and options, made once even when several servers
start at once on the same new source."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from ovserve.service.sources.provenance import PROVENANCE_FILE

log = logging.getLogger(__name__)


def cache_key(identity: dict[str, Any]) -> str:
    """A short stable digest of what makes a conversion: the source's identity and the options."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


class ModelCache:
    """Directories under ``root`` named ``<label>-<key>``; one is complete once its provenance file is written
    (last), so a half-written conversion (a killed process) is never served: the next start makes it again."""

    def __init__(self, root: Path) -> None:
        """A cache in ``root`` (created when first written)."""
        self.root = root

    def entry(self, label: str, key: str) -> Path:
        """Where the conversion of ``key`` lives (made or not)."""
        return self.root / f"{re.sub(r'[^A-Za-z0-9._-]+', '-', label).strip('-')[:60]}-{key}"

    def get_or_make(self, label: str, key: str, make: Callable[[Path], None]) -> tuple[Path, bool]:
        """The entry of ``key``, made by ``make(directory)`` unless complete already; and whether it was made here.

        ``make`` writes into a fresh directory, the provenance file last; the directory becomes the entry when
        it returns. A second process asking for the same key waits on a lock file,
        then finds the entry complete.
        """
        final = self.entry(label, key)
        if (final / PROVENANCE_FILE).is_file():
            return final, False
        self.root.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(final) + ".lock")
        if lock.is_locked:
            log.info("another process is converting into %s; waiting for it", final)
        with lock:
            if (final / PROVENANCE_FILE).is_file():
                return final, False
            partial = final.with_name(f".{final.name}.partial-{os.getpid()}")
            for stale in (partial, final):
                shutil.rmtree(stale, ignore_errors=True)
            partial.mkdir()
            try:
                make(partial)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            partial.rename(final)
        return final, True
