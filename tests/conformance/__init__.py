"""OpenAI's OpenAPI document (vendored, MIT: LICENSE beside it) as JSON Schema validators for the tests.

The document says "openapi: 3.1.0" but marks nullable values the OpenAPI 3.0
way (``"nullable": true`` beside ``type``, enum or ``$ref``), a keyword JSON
Schema ignores. ``nullable_as_json_schema`` gives each such schema its meaning:
``anyOf`` the schema and ``null``. Nothing else is changed.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from pathlib import Path
from typing import Any

import httpx2 as httpx
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT = Path(__file__).resolve().parent / "openai-openapi.json.gz"
URI = "urn:openai-openapi"


@functools.cache
def document() -> dict[str, Any]:
    """The OpenAPI document, its schemas as JSON Schema 2020-12 (nullable made explicit)."""
    with gzip.open(DOCUMENT) as opened:
        return nullable_as_json_schema(json.load(opened))  # type: ignore[no-any-return]


def nullable_as_json_schema(node: Any) -> Any:
    """``node`` with every ``{..., "nullable": true}`` schema turned into ``{"anyOf": [{...}, {"type": "null"}]}``."""
    if isinstance(node, list):
        return [nullable_as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: nullable_as_json_schema(value) for key, value in node.items()}
    if converted.pop("nullable", False) is True:
        keep = {
            key: converted.pop(key) for key in ("description", "title", "default", "deprecated") if key in converted
        }
        return {**keep, "anyOf": [converted, {"type": "null"}]}
    return converted


@functools.cache
def validator(component: str) -> Draft202012Validator:
    """A validator for ``#/components/schemas/<component>``, its $refs resolved within the document."""
    resource = Resource.from_contents(document(), default_specification=DRAFT202012)
    registry: Registry = Registry().with_resource(URI, resource)
    return Draft202012Validator({"$ref": f"{URI}#/components/schemas/{component}"}, registry=registry)


def violations(component: str, instance: Any) -> list[str]:
    """Where ``instance`` breaks the spec's ``component`` schema, one line each (empty: it conforms)."""
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message[:300]}"
        for error in validator(component).iter_errors(instance)
    ]


REQUEST_SCHEMAS = {
    "chat": "CreateChatCompletionRequest",
    "completions": "CreateCompletionRequest",
    "responses": "CreateResponse",
}


def request_parameters(api: str) -> list[str]:
    """The top-level parameters of OpenAI's request for ``api`` (a key of REQUEST_SCHEMAS), allOf parts included."""
    schemas = document()["components"]["schemas"]

    def properties(name: str) -> dict[str, Any]:
        node = schemas[name]
        found: dict[str, Any] = {}
        for part in node.get("allOf", [node]):
            if "$ref" in part:
                found.update(properties(part["$ref"].rsplit("/", 1)[1]))
            found.update(part.get("properties", {}))
        return found

    return sorted(properties(REQUEST_SCHEMAS[api]))


class SpecCheck:
    """An httpx response hook: every JSON reply checked against its route's OpenAPI schema, errors against
    ErrorResponse. ``schemas``: (method, path regex after /v3, component) of each route checked; a 200 of another
    route is left to its own tests, as are event streams and the raw bytes of ``/content`` routes."""

    def __init__(self, schemas: list[tuple[str, str, str]]) -> None:
        self.schemas = schemas
        self.problems: list[str] = []
        self.checked = 0

    def __call__(self, response: httpx.Response) -> None:
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            return
        response.read()
        path = response.request.url.path.removeprefix("/v3")
        method = response.request.method
        if response.status_code != 200:
            component = "ErrorResponse"
        else:
            found = [c for m, p, c in self.schemas if m == method and re.fullmatch(p, path)]
            if not found or path.endswith("/content"):
                return
            component = found[0]
        self.checked += 1
        problems = violations(component, response.json())
        if component == "Response":  # null, not OpenAI's string, as the Open Responses schema wants it
            problems = [problem for problem in problems if problem != "user: None is not of type 'string'"]
        self.problems += [f"{method} {path} {component}: {problem}" for problem in problems]
