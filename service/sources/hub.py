"""Hugging Face repositories through huggingface_hub's cache (``HF_HOME``; ``HF_HUB_OFFLINE=1``: the cache alone)."""

from __future__ import annotations

import logging
from pathlib import Path

from ovserve.service.sources.errors import SourceError

log = logging.getLogger(__name__)

# Files a served model never needs: the original (non-transformers) weights some repositories also carry.
IGNORED = ["original/*", "*.pth", "*.pt", "*.msgpack", "*.h5", "*.ot"]


def download(repo: str, revision: str | None) -> Path:
    """The local snapshot of ``repo`` at ``revision`` (default branch when None): downloaded into the hub cache
    when the hub is reachable, else taken from the cache. Its directory is named by the commit."""
    import huggingface_hub
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{repo}@{revision}" if revision else repo
    log.info("fetching %s through the Hugging Face cache", where)
    try:
        return Path(huggingface_hub.snapshot_download(repo, revision=revision, ignore_patterns=IGNORED))
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):
        raise SourceError(f"{where}: not in the Hugging Face cache, and the hub cannot be reached (offline); "
                          "download it where the hub is reachable, or name a local directory") from None  # fmt: skip
    except GatedRepoError:
        raise SourceError(f"{where}: a gated repository; accept its terms on the hub and set HF_TOKEN") from None
    except RepositoryNotFoundError:
        raise SourceError(f"{where}: no such repository on the Hugging Face hub (or it is private)") from None
    except RevisionNotFoundError:
        raise SourceError(f"{where}: the repository has no revision {revision!r}") from None
