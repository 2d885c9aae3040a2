"""A request body as a JSON object: content type, JSON syntax, a top-level object, and values the service can take.

The values (``json_values``): bounded nesting, finite numbers, no lone surrogates; each refusal is a 400 naming the
value's path.
"""

from __future__ import annotations

import json
from typing import Any

from ovserve.clients.polymorphic import json_type
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.json_values import JsonValueError, check_values

JSON_MEDIA_TYPES = {"application/json"}


def bad_request(param: str | None, message: str) -> BridgeError:
    """A 400 invalid_request_error naming ``param`` (an OpenAI path)."""
    return BridgeError(400, message, param=param)


def parse_json_body(body: bytes, content_type: str | None, max_depth: int) -> dict[str, Any]:
    """The request body as a JSON object; 415 for another content type, 400 for bad JSON."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type not in JSON_MEDIA_TYPES:
        raise BridgeError(
            415,
            f"Content-Type must be application/json, got {content_type or 'none'!r}",
            code="unsupported_media_type",
        )
    try:
        value = json.loads(body)
    except RecursionError:
        raise bad_request(None, f"the JSON body nests deeper than {max_depth} levels") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise bad_request(None, f"the body is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise bad_request(None, f"the body must be a JSON object, got {json_type(value)}")
    try:
        check_values(value, max_depth)
    except JsonValueError as error:
        raise bad_request(error.param, error.message) from None
    return value
