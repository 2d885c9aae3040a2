"""The encoded corpus as a file, so tiny-chat can train on another machine (a GPU: tools/model_builder/device_train.sh).

The corpus reads this machine's license files and Python docstrings and the tokenizer is trained here, so another
machine would build another corpus; it gets the token ids instead. Ids and roles share one uint16 per token (the
vocabulary has 2,048 ids, 11 bits; a role is 0-2), compressed: about 1 byte a token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS = "corpus.npz"
META = "meta.json"  # the vocabulary's size, end and pad ids, and what the model card says of corpus and tokenizer
ROLE_SHIFT = 14  # a token's role sits above its id


def save(folder: Path, encoded: list[tuple[list[int], list[int]]], meta: dict[str, Any]) -> int:
    """Write ``encoded`` ((ids, roles) per example) and ``meta`` into ``folder``; returns the corpus file's bytes."""
    import numpy as np

    if meta["vocab_size"] > 1 << ROLE_SHIFT:
        raise ValueError(f"vocab_size: {meta['vocab_size']} ids do not fit below the roles' bits")
    folder.mkdir(parents=True, exist_ok=True)
    packed = np.fromiter(
        (token | role << ROLE_SHIFT for ids, roles in encoded for token, role in zip(ids, roles, strict=True)),
        dtype=np.uint16,
    )
    lengths = np.array([len(ids) for ids, _ in encoded], dtype=np.int32)
    np.savez_compressed(folder / CORPUS, tokens=packed, lengths=lengths)
    (folder / META).write_text(json.dumps(meta, indent=1) + "\n")
    return (folder / CORPUS).stat().st_size


def load(folder: Path) -> tuple[list[tuple[list[int], list[int]]], dict[str, Any]]:
    """The encoded corpus and meta ``save`` wrote into ``folder``."""
    import numpy as np

    with np.load(folder / CORPUS) as data:
        packed, lengths = data["tokens"], data["lengths"]
    ids, roles = (packed & ((1 << ROLE_SHIFT) - 1)).tolist(), (packed >> ROLE_SHIFT).tolist()
    encoded, start = [], 0
    for n in lengths.tolist():
        encoded.append((ids[start : start + n], roles[start : start + n]))
        start += n
    return encoded, json.loads((folder / META).read_text())
