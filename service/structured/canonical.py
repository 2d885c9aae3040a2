"""JSON values (schemas, tool definitions) in one fixed key order, so the same request renders the same prompt."""

from __future__ import annotations

from typing import Any

# Keys that JSON Schemas and tool definitions customarily write first, in that order.
_LEADING_KEYS = ("type", "name", "title", "description", "function", "parameters", "properties", "items", "required")


def canonical(value: Any) -> Any:
    """``value`` with every object's keys in one fixed order: customary keys first, the rest sorted.

    A google.protobuf.Struct is a map, and its iteration order follows
    Python's per-process hash seed; the chat template renders tools with
    ``tojson``, so without this the same request rendered a different prompt
    (and got a different answer) from one server process to the next.
    """
    if isinstance(value, dict):
        leading = [key for key in _LEADING_KEYS if key in value]
        rest = sorted(key for key in value if key not in _LEADING_KEYS)
        return {key: canonical(value[key]) for key in [*leading, *rest]}
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value
