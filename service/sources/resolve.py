"""SOURCE -> an OpenVINO GenAI directory and its provenance, converting into the model cache when needed."""

from __future__ import annotations

import logging
import os
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from ovserve.service.pipelines import PipelineKind
from ovserve.service.sources import export, hub
from ovserve.service.sources.cache import ModelCache, cache_key
from ovserve.service.sources.errors import SourceError
from ovserve.service.sources.locate import Located, SourceKind, local_kind, locate
from ovserve.service.sources.provenance import Provenance, weight_precision

log = logging.getLogger(__name__)

# --weight-format's choices: optimum-intel's, as OVMS offers them.
WEIGHT_FORMATS = ("int4", "int8", "fp16", "fp32")
# Packages whose versions change what a conversion writes: part of the cache key.
CONVERTERS = ("openvino", "openvino-tokenizers", "openvino-genai", "optimum-intel", "optimum", "transformers")


def default_cache_dir() -> Path:
    """Where converted models are kept unless ``--model-cache`` says: ``$XDG_CACHE_HOME/ovserve/models``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ovserve" / "models"


def resolve(
    source: str, *, cache_dir: Path, weight_format: str | None = None, task: PipelineKind | None = None
) -> tuple[Path, Provenance]:
    """The OpenVINO GenAI directory to serve for ``source``, and what it was built from.

    An OpenVINO directory is served in place; a Hugging Face checkpoint or GGUF file is converted once into
    ``cache_dir`` (``weight_format``: int4, int8, fp16 or fp32; None: the exporter's choice by size), keyed by
    the source's identity (path, sizes and times of its files; a hub commit), the options and the converters'
    versions. SourceError, naming the source, when it cannot be served.
    """
    if weight_format is not None and weight_format not in WEIGHT_FORMATS:
        raise SourceError(f"{source}: weight format {weight_format!r} is not one of {', '.join(WEIGHT_FORMATS)}")
    located = locate(source)
    revision = ""
    if located.kind is SourceKind.HUB:
        snapshot = hub.download(located.repo, located.revision)
        revision = snapshot.name
        located = _in_snapshot(located, snapshot)
    assert located.path is not None
    if located.kind is SourceKind.OPENVINO:
        if weight_format:
            raise SourceError(f"{source}: already an OpenVINO model; --weight-format applies to converted ones")
        return located.path, Provenance(source, "openvino", revision, "", weight_precision(located.path))
    if located.kind is SourceKind.GGUF and weight_format:
        raise SourceError(f"{source}: a GGUF file is served in its own quantisation; drop --weight-format")
    identity = {
        "source": [located.repo, revision] if revision else _fingerprint(located.path),
        "kind": located.kind.value,
        "weight_format": weight_format,
        "task": task.value if task else None,
        "converters": {name: _version(name) for name in CONVERTERS},
    }
    if located.kind is SourceKind.GGUF:  # what ovserve itself does to a GGUF's export changed: made again
        identity["gguf_export"] = export.GGUF_EXPORT_REVISION
    label = located.repo or located.path.stem
    started = time.monotonic()

    def make(out: Path) -> None:
        assert located.path is not None
        if located.kind is SourceKind.GGUF:
            export.export_gguf(located.path, out)
        else:
            export.export_checkpoint(located.path, out, export.export_task(located.path, task), weight_format)
        provenance = Provenance(source, located.kind.value, revision, weight_format or "", weight_precision(out))
        provenance.write(out)

    directory, made = ModelCache(cache_dir).get_or_make(label, cache_key(identity), make)
    if made:
        log.info("converted %s into %s in %.1f s", source, directory, time.monotonic() - started)
    else:
        log.info("serving %s from %s (converted before)", source, directory)
    recorded = Provenance.read(directory)
    assert recorded is not None
    return directory, Provenance(source, recorded.source_kind, revision, recorded.weight_format, recorded.precision)


def _in_snapshot(located: Located, snapshot: Path) -> Located:
    """A hub repository's snapshot as a local source: the directory itself, or the one GGUF file it holds."""
    ggufs = sorted(snapshot.glob("*.gguf"))
    try:
        kind = local_kind(snapshot, located.text)
    except SourceError:
        if len(ggufs) != 1:
            raise
        return Located(SourceKind.GGUF, located.text, ggufs[0], located.repo, located.revision)
    return Located(kind, located.text, snapshot, located.repo, located.revision)


def _fingerprint(path: Path) -> dict[str, Any]:
    """A local source's identity: its path, and each file's size and modification time."""
    files = [path] if path.is_file() else sorted(item for item in path.rglob("*") if item.is_file())
    return {"path": str(path), "files": [[str(item.relative_to(path.parent)), *_stamp(item)] for item in files]}


def _stamp(item: Path) -> tuple[int, int]:
    stat = item.stat()
    return stat.st_size, stat.st_mtime_ns


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""
