"""Decoding the XML-style calls of Qwen3-Coder and GLM-4.5+: one tagged member per argument.

Qwen3-Coder (the block between ``<tool_call>`` and ``</tool_call>``)::

    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>

GLM-4.5/4.6/4.7::

    get_weather
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>

A string value is written as raw text, anything else as JSON; which one a
value is follows the tool's parameter schema when the request gave it (as
vLLM's parsers do), otherwise JSON if it reads as JSON, else the text. A block
that is not exactly this markup is not a call (the caller keeps it as text).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from ovserve.service.parsing.calls import Call
from ovserve.service.parsing.markup import tag_name

Schemas = Mapping[str, Any]  # function name -> its parameters' JSON schema

_QWEN3_FUNCTION = re.compile(r"\s*<function=([^>]*)>")
_QWEN3_PARAMETER = re.compile(r"\s*<parameter=([^>]*)>(.*?)</parameter>", re.DOTALL)
_QWEN3_END = re.compile(r"\s*</function>\s*")
_GLM_NAME = re.compile(r"\s*([^<]*)")
_GLM_ARGUMENT = re.compile(r"\s*<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def qwen3_coder_call(block: str, schemas: Schemas | None = None) -> list[Call] | None:
    """The call in a Qwen3-Coder ``<tool_call>`` block; None when the block is not one."""
    function = _QWEN3_FUNCTION.match(block)
    if function is None or not tag_name(name := function.group(1).strip()):
        return None
    arguments, position = {}, function.end()
    while parameter := _QWEN3_PARAMETER.match(block, position):
        # The template writes a line break after the opening tag and before the closing one: not the value's.
        raw = parameter.group(2).removeprefix("\n").removesuffix("\n")
        key = parameter.group(1).strip()
        if not key:
            return None
        arguments[key] = typed_value(raw, argument_schema(schemas, name, key))
        position = parameter.end()
    if not _QWEN3_END.fullmatch(block, position):
        return None
    return [(name, json.dumps(arguments, ensure_ascii=False))]


def glm45_call(block: str, schemas: Schemas | None = None) -> list[Call] | None:
    """The call in a GLM-4.5+ ``<tool_call>`` block; None when the block is not one."""
    head = _GLM_NAME.match(block)
    assert head is not None  # matches any text, possibly empty
    if not tag_name(name := head.group(1).strip()):
        return None
    arguments, position = {}, head.end()
    while argument := _GLM_ARGUMENT.match(block, position):
        key = argument.group(1).strip()
        if not key:
            return None
        arguments[key] = typed_value(argument.group(2), argument_schema(schemas, name, key))
        position = argument.end()
    if block[position:].strip():
        return None
    return [(name, json.dumps(arguments, ensure_ascii=False))]


def typed_value(raw: str, schema: Any = None) -> Any:
    """An argument's value from its text: the text itself where the schema says string only; otherwise
    its JSON value when it reads as JSON of a type the schema allows (any type, without a schema);
    else the text (a model that writes a bad value gets it back as a string, as vLLM does)."""
    types = json_types(schema)
    if types == {"string"}:
        return raw
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # RecursionError: nesting past the decoder's stack ("[[[[...")
        value = _python_value(raw) if types is not None and types & _PYTHON_SPELLED else _NOT_PYTHON
        if value is _NOT_PYTHON:
            return raw
    kind = _JSON_TYPES.get(type(value), "number")
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if types is None or kind in types or (kind == "number" and "integer" in types and whole):
        return value
    return raw


# Types a template may write in Python's spelling (Seed-OSS's renders values with Jinja's ``string``: True, None,
# {'a': 1}), which vLLM's parsers read too; only where the schema declares such a type.
_PYTHON_SPELLED = {"boolean", "null", "object", "array"}
_PYTHON_NAMES = {"True": True, "False": False, "None": None}
MAX_PYTHON_LITERAL = 64 * 1024  # characters: a container's literal past this stays text
_NOT_PYTHON = object()


def _python_value(raw: str) -> Any:
    """``raw`` read as a Python literal of a JSON value (a name, or a dict or list of literals); _NOT_PYTHON
    when it is not one. literal_eval evaluates no code; its own limits (nesting) raise, and are caught."""
    text = raw.strip()
    if text in _PYTHON_NAMES:
        return _PYTHON_NAMES[text]
    if not text.startswith(("{", "[")) or len(text) > MAX_PYTHON_LITERAL:
        return _NOT_PYTHON
    try:
        value = ast.literal_eval(text)
        return json.loads(json.dumps(value, allow_nan=False))  # JSON's values only (no sets, bytes, NaN)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_PYTHON


def json_types(schema: Any) -> set[str] | None:
    """The JSON types a schema's value may have (``"integer"`` stays apart from ``"number"``); None when
    the schema does not say (no ``type``, ``enum``, ``const``, ``anyOf`` or ``oneOf`` to tell)."""
    if not isinstance(schema, dict):
        return None
    types: set[str] = set()
    declared = schema.get("type")
    types.update([declared] if isinstance(declared, str) else declared if isinstance(declared, list) else [])
    values = [schema["const"]] if "const" in schema else schema.get("enum") or []
    types.update(_JSON_TYPES.get(type(value), "number") for value in values)
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            sub_types = json_types(sub)
            if sub_types is None:
                return None
            types |= sub_types
    if types and schema.get("nullable") is True:
        types.add("null")
    return types or None


def argument_schema(schemas: Schemas | None, function: str, key: str) -> Any:
    """The schema of argument ``key`` of ``function``; None when the request did not declare it."""
    parameters = (schemas or {}).get(function)
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    return properties.get(key) if isinstance(properties, dict) else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: Python reads them, JSON has none
