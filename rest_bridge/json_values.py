"""What a parsed JSON body may hold before it is translated: bounded nesting, valid text, finite numbers.

Python's ``json`` module accepts more than the service can take: ``NaN`` and
``Infinity`` (and ``1e309``, which overflows to infinity), lone UTF-16
surrogates written as ``\\ud800`` escapes, and any nesting depth. Each would
fail later, deeper in the stack (protobuf's encoder, its 100-level decoder, a
UTF-8 encoder), with a message that names no field or as a 500. One walk over
the parsed body finds the first such value and refuses it with a 400 naming its
path, in OpenAI's terms (``tools[0].function.parameters.properties.a``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLAIN_NUMBERS_MIN = 64  # arrays at least this long are checked at once when they hold numbers only


class JsonValueError(ValueError):
    """A value the service cannot take: ``param`` is its path, ``message`` says why."""

    def __init__(self, param: str | None, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


def check_values(body: dict[str, Any], max_depth: int) -> None:
    """Raise JsonValueError for the first value of ``body`` nested past ``max_depth``, non-finite, or with a surrogate.

    ``{}`` is depth 1. The walk keeps one iterator per open container, so deep
    input cannot exhaust the stack and memory stays bounded by the depth limit;
    the path is built only for the culprit.
    """
    stack = [_items(body)]
    segments: list[str] = []  # segments[i]: where the container iterated by stack[i + 1] sits in its parent
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            if segments:
                segments.pop()
            continue
        segment, key, child = entry
        if key is not None and has_surrogate(key):
            raise _error(segments, segment, "the key contains a lone UTF-16 surrogate")
        if isinstance(child, list) and _plain_numbers(child):
            continue
        if isinstance(child, dict | list):
            if len(stack) + 1 > max_depth:
                raise _error(segments, segment, f"nests deeper than {max_depth} levels")
            stack.append(_items(child))
            segments.append(segment)
        elif isinstance(child, str) and has_surrogate(child):
            raise _error(segments, segment, "contains a lone UTF-16 surrogate (not valid Unicode text)")
        elif isinstance(child, float) and not math.isfinite(child):
            raise _error(segments, segment, f"{_spelling(child)} is not a finite number (JSON numbers are finite)")


def _plain_numbers(values: list[Any]) -> bool:
    """Whether a long array holds finite numbers only (token ids, vectors): nothing in it to refuse, found by C
    calls over the array rather than a step of the walk per item (2,048 x 1,000 token ids: 0.2 s of walking)."""
    if len(values) < PLAIN_NUMBERS_MIN:
        return False
    kinds = set(map(type, values))
    return kinds <= {int, float} and (float not in kinds or all(map(math.isfinite, values)))


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (UTF-8 cannot carry one); ASCII text is answered at once."""
    if text.isascii():
        return False
    try:
        text.encode()  # C speed; a regex over megabytes would hold the GIL far longer
    except UnicodeEncodeError:
        return True
    return False


def _items(container: dict[str, Any] | list[Any]) -> Iterator[tuple[str, str | None, Any]]:
    """(path segment, key or None, value) for each member of an object or element of an array."""
    if isinstance(container, dict):
        return ((_name(key), key, value) for key, value in container.items())
    return ((f"[{i}]", None, value) for i, value in enumerate(container))


def _name(key: str) -> str:
    """A key as a path segment: escaped as JSON escapes it when needed, so the path is printable ASCII."""
    return key if _PLAIN_KEY.fullmatch(key) else key.encode("ascii", "backslashreplace").decode()


def _spelling(number: float) -> str:
    return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"


def _error(segments: list[str], segment: str, problem: str) -> JsonValueError:
    path = ""
    for part in [*segments, segment]:
        path += part if part.startswith("[") or not path else f".{part}"
    return JsonValueError(path, f"{path}: {problem}")
