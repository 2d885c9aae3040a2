"""JSON bodies as the bridge writes them: UTF-8, and large ones written without holding the GIL for long.

json.dumps, and turning a protobuf repeated field into a list, each hold the GIL for the whole call: on a
reply of 800,000 tokens and their strings that was 0.4 s, in which the event loop's thread could not run.
Large replies are handled in a thread (off_loop.off_the_loop_if_large) a slice at a time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

T = TypeVar("T")

# Elements one call takes at most (~0.5 us each) when a large reply is encoded or listed.
ENCODE_SLICE = 4096


def encode_json(payload: dict[str, Any], *, sliced: bool = False) -> bytes:
    """A JSON body as UTF-8; text that UTF-8 cannot carry (a lone surrogate echoed back) is escaped instead.

    ``sliced``: for a large payload, in a thread beside the event loop: written a piece at a time (a tokenize
    reply of 800,000 tokens and their strings took one json.dumps call, and the loop, 0.4 s); the same bytes
    (the keys being strings, as every reply's are).
    """
    for ascii_only in (False, True):
        try:
            if not sliced:
                return json.dumps(payload, ensure_ascii=ascii_only).encode()
            pieces: list[str] = []
            _encode_pieces(payload, pieces, ascii_only)
            return "".join(pieces).encode()
        except UnicodeEncodeError:
            continue
    raise AssertionError("unreachable: ASCII-only JSON always encodes")


def _encode_pieces(value: Any, pieces: list[str], ascii_only: bool) -> None:
    """``value`` as json.dumps writes it, appended to ``pieces``: containers of containers walked here, long
    lists of scalars encoded ENCODE_SLICE elements a call."""
    if isinstance(value, dict):
        pieces.append("{")
        for index, (key, item) in enumerate(value.items()):
            pieces.append((", " if index else "") + json.dumps(str(key), ensure_ascii=ascii_only) + ": ")
            _encode_pieces(item, pieces, ascii_only)
        pieces.append("}")
    elif isinstance(value, (list, tuple)) and value and isinstance(value[0], (dict, list, tuple)):
        pieces.append("[")
        for index, item in enumerate(value):
            if index:
                pieces.append(", ")
            _encode_pieces(item, pieces, ascii_only)
        pieces.append("]")
    elif isinstance(value, (list, tuple)) and len(value) > ENCODE_SLICE:
        pieces.append("[")
        for start in range(0, len(value), ENCODE_SLICE):
            pieces.append(
                (", " if start else "") + json.dumps(value[start : start + ENCODE_SLICE], ensure_ascii=ascii_only)[1:-1]
            )
        pieces.append("]")
    else:
        pieces.append(json.dumps(value, ensure_ascii=ascii_only))


def listed(items: Sequence[T]) -> list[T]:
    """``list(items)`` (a protobuf repeated field, say) taken ENCODE_SLICE elements a call."""
    if len(items) <= ENCODE_SLICE:
        return list(items)
    out: list[T] = []
    for start in range(0, len(items), ENCODE_SLICE):
        out.extend(items[start : start + ENCODE_SLICE])
    return out
