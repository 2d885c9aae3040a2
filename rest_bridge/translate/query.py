"""Query strings of the list and get routes (Responses, conversations): names checked, values decoded and bounded."""

from __future__ import annotations

from collections.abc import Container
from typing import TypeVar

from ovserve.clients.v1 import conversation_pb2, response_pb2
from ovserve.rest_bridge.translate.body import bad_request

Query = dict[str, list[bytes]]  # tornado's request.query_arguments
ORDERS = ("asc", "desc")
MAX_LIMIT = 100
NO_NAMES: frozenset[str] = frozenset()  # a route that takes no query parameter


def query_strings(query: Query, allowed: Container[str], repeated: Container[str]) -> dict[str, list[str]]:
    """Decoded query values by name (``include[]`` is ``include``); unknown or repeated-once names are a 400."""
    out: dict[str, list[str]] = {}
    for raw_name, values in query.items():
        name = raw_name.removesuffix("[]") if raw_name.removesuffix("[]") in repeated else raw_name
        if name not in allowed:
            raise bad_request(name, f"Unrecognized query parameter supplied: {name}")
        decoded = [value.decode("utf-8", "replace") for value in values]
        if name not in repeated and len(decoded) + len(out.get(name, [])) > 1:
            raise bad_request(name, f"query parameter {name} is given more than once")
        out.setdefault(name, []).extend(decoded)
    return out


def include(query: Query) -> list[str]:
    """``?include=`` (or ``include[]``, repeatable), the only query parameter of the route."""
    return query_strings(query, {"include"}, {"include"}).get("include", [])


def boolean(name: str, value: str) -> bool:
    """A query value that must be true or false (also 1 or 0)."""
    lowered = value.lower()
    if lowered not in ("true", "false", "1", "0"):
        raise bad_request(name, f"{name} must be true or false, got {value!r}")
    return lowered in ("true", "1")


def integer(name: str, value: str, low: int, high: int) -> int:
    """A query value that must be an integer in [low, high]."""
    try:
        number = int(value, 10)
    except ValueError:
        raise bad_request(name, f"{name} must be an integer, got {value!r}") from None
    if not low <= number <= high:
        raise bad_request(name, f"{name} must be between {low} and {high}, got {number}")
    return number


Paged = TypeVar("Paged", response_pb2.ListResponseInputItemsRequest, conversation_pb2.ListConversationItemsRequest)


def paged(request: Paged, query: Query) -> Paged:
    """``request`` (a list of items) with the page of ``?after=&limit=&order=&include=`` set, each checked."""
    values = query_strings(query, {"after", "limit", "order", "include"}, {"include"})
    request.include.extend(values.get("include", []))
    if "after" in values:
        request.after = values["after"][0]
    if "limit" in values:
        request.limit = integer("limit", values["limit"][0], 1, MAX_LIMIT)
    if "order" in values:
        order = values["order"][0]
        if order not in ORDERS:
            raise bad_request("order", f"order must be asc or desc, got {order!r}")
        request.order = order
    return request
