"""The same request renders the same prompt in every server process (no hash-seed dependence)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ovserve.service.structured.canonical import canonical

ROOT = Path(__file__).resolve().parents[3]

# What a server process does with a request's tools and template kwargs before rendering the prompt.
PROBE = """
import json
from ovserve.clients.v1 import chat_pb2
from ovserve.service.api.chat import _template_context, _tools
from tests.rpc import parse
request = parse(chat_pb2.CreateChatCompletionRequest, {
    "model": "m", "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
               "parameters": {"type": "object", "required": ["city", "unit"], "additionalProperties": False,
                              "properties": {"unit": {"enum": ["c", "f"], "type": "string"},
                                             "city": {"type": "string", "description": "The city."}}}}}],
    "chat_template_kwargs": {"enable_thinking": True, "b": 1, "a": 2, "z": {"y": 1, "x": 2}},
})
violations = []
print(json.dumps([_tools(request, violations), _template_context(request, violations), violations]))
"""


def _render_in_process(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", PROBE]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=True, cwd=ROOT).stdout


def test_tools_and_template_kwargs_render_identically_whatever_the_hash_seed() -> None:
    outputs = {_render_in_process(seed) for seed in ("0", "1", "2", "3", "4", "5")}
    assert len(outputs) == 1, outputs
    tools, context, violations = json.loads(outputs.pop())
    assert violations == []
    parameters = tools[0]["function"]["parameters"]
    assert list(parameters) == ["type", "properties", "required", "additionalProperties"]
    assert list(parameters["properties"]) == ["city", "unit"]
    assert list(context) == ["a", "b", "enable_thinking", "z"] and list(context["z"]) == ["x", "y"]


def test_canonical_order_keeps_values_and_nesting() -> None:
    value = {"required": ["b"], "type": "object", "properties": {"b": {"type": "string"}, "a": [{"z": 1, "y": 2}]}}
    ordered = canonical(value)
    assert ordered == value  # same content
    assert list(ordered) == ["type", "properties", "required"]
    assert list(ordered["properties"]) == ["a", "b"] and list(ordered["properties"]["a"][0]) == ["y", "z"]
