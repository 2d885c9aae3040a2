"""Every OpenAI chat, completions and Responses parameter is honoured, accepted with no effect, mapped or refused.

The table (rest_bridge/openai_parameters.py) plus the contract's fields must
cover every parameter of OpenAI's OpenAPI document; each table entry is sent to
the real server; the docs' table (docs/api/parameters.md) is the one the code writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from ovserve.clients.v1 import chat_pb2, completion_pb2, response_pb2
from ovserve.rest_bridge import openai_parameters
from ovserve.rest_bridge.openai_parameters import ACCEPTED, MAPPED, REFUSED
from tests.conformance import document, request_parameters
from tests.rest_bridge.conftest import RunningBridge, http_request

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = {
    "chat": chat_pb2.CreateChatCompletionRequest,
    "completions": completion_pb2.CreateCompletionRequest,
    "responses": response_pb2.CreateResponseRequest,
}
TABLES = openai_parameters.TABLES
PATHS = {"chat": "/v3/chat/completions", "completions": "/v3/completions", "responses": "/v3/responses"}
BASE = {
    "chat": {"model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3},
    "completions": {"model": "tiny-chat", "prompt": "Once", "max_tokens": 3},
    "responses": {"model": "tiny-chat", "input": "Hi", "max_output_tokens": 3, "store": False},
}
# A value a real client sends for each table entry that is accepted, and one that asks for what is refused.
TAKEN = {
    "service_tier": "auto", "prompt_cache_key": "user-42", "prompt_cache_retention": "24h",
    "prompt_cache_options": {"mode": "auto"}, "safety_identifier": "hash-1", "verbosity": "low",
    "prediction": {"type": "content", "content": "Hello"}, "modalities": ["text"], "audio": None,
    "moderation": None, "web_search_options": None, "prompt": None,
    "stream_options": {"include_obfuscation": False}, "priority": 0,
}  # fmt: skip
REFUSED_VALUES = {
    "audio": {"voice": "alloy", "format": "wav"}, "moderation": {"model": "x"},
    "web_search_options": {"search_context_size": "low"}, "modalities": ["text", "audio"],
    "prompt": {"id": "pmpt_1"},
}  # fmt: skip


@pytest.mark.parametrize("api", list(CONTRACT))
def test_the_table_and_the_contract_cover_every_parameter_of_openais_document(api: str) -> None:
    fields = set(CONTRACT[api].DESCRIPTOR.fields_by_name)
    missing = [name for name in request_parameters(api) if name not in fields and name not in TABLES[api]]
    assert not missing, f"{api}: OpenAI parameters neither in the contract nor in openai_parameters: {missing}"
    if api == "responses":  # stream_options is the table's (include_obfuscation only)
        return
    ours = CONTRACT[api].DESCRIPTOR.fields_by_name["stream_options"].message_type.fields_by_name
    spec = document()["components"]["schemas"]["ChatCompletionStreamOptions"]
    named = set(spec.get("properties") or spec["anyOf"][0]["properties"])
    assert named <= set(ours) | set(openai_parameters.NESTED["stream_options"])


CASES = [(api, name) for api, table in TABLES.items() for name, entry in table.items() if entry.status != MAPPED]


@pytest.mark.parametrize(("api", "name"), CASES, ids=[f"{api}-{name}" for api, name in CASES])
def test_each_table_entry_does_what_the_table_says(bridge: RunningBridge, api: str, name: str) -> None:
    entry = TABLES[api][name]
    taken = http_request(bridge.port, "POST", PATHS[api], {**BASE[api], name: TAKEN[name]})
    assert taken.status == 200, taken.body  # accepted values (and the empty form of a refused one) pass
    if entry.status == REFUSED or name in REFUSED_VALUES:
        refused = http_request(bridge.port, "POST", PATHS[api], {**BASE[api], name: REFUSED_VALUES[name]})
        assert refused.status == 400, refused.body
        error = refused.json()["error"]
        assert error["param"] == name and ("not served" in error["message"] or "only text" in error["message"])
    assert entry.status in (ACCEPTED, REFUSED)


def test_include_obfuscation_is_accepted(bridge: RunningBridge) -> None:
    body = {**BASE["chat"], "stream": True, "stream_options": {"include_usage": True, "include_obfuscation": False}}
    reply = http_request(bridge.port, "POST", PATHS["chat"], body)
    assert reply.status == 200 and reply.events()[-1] == "[DONE]"
    assert json.loads(reply.events()[-2])["usage"] is not None  # include_usage still honoured beside it
    bad = http_request(bridge.port, "POST", PATHS["chat"], {**body, "stream_options": {"include_obfuscation": "x"}})
    assert bad.status == 400 and bad.json()["error"]["param"] == "stream_options.include_obfuscation"


CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"name": "get_weather", "description": "Weather in a city.", "parameters": CITY}


def test_deprecated_functions_are_tools_and_the_reply_speaks_their_form(client: openai.OpenAI) -> None:
    """Older LangChain sends functions / function_call: the call comes back as message.function_call."""
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    reply = client.chat.completions.create(
        model="tiny-chat", messages=messages, functions=[WEATHER], function_call={"name": "get_weather"}, max_tokens=40
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "function_call" and choice.message.tool_calls is None
    assert choice.message.function_call is not None and choice.message.function_call.name == "get_weather"
    arguments = json.loads(choice.message.function_call.arguments)
    assert isinstance(arguments.get("city"), str)
    streamed = list(client.chat.completions.create(
        model="tiny-chat", messages=messages, functions=[WEATHER], function_call={"name": "get_weather"},
        max_tokens=40, stream=True,
    ))  # fmt: skip
    fragments = [c.choices[0].delta.function_call for c in streamed if c.choices and c.choices[0].delta.function_call]
    assert fragments and fragments[0].name == "get_weather"
    assert json.loads("".join(f.arguments or "" for f in fragments)) == arguments
    assert [c.choices[0].finish_reason for c in streamed if c.choices][-1] == "function_call"
    # The function's result goes back as a "function" message after the assistant's function_call.
    history = [*messages, {"role": "assistant", "content": None, "function_call": {"name": "get_weather",
               "arguments": choice.message.function_call.arguments}},
               {"role": "function", "name": "get_weather", "content": '{"temp_c": 21}'}]  # fmt: skip
    final = client.chat.completions.create(model="tiny-chat", messages=history, functions=[WEATHER], max_tokens=8)
    assert final.choices[0].message.role == "assistant"


def test_functions_with_tools_is_refused(bridge: RunningBridge) -> None:
    body = {**BASE["chat"], "functions": [WEATHER], "tools": [{"type": "function", "function": WEATHER}]}
    reply = http_request(bridge.port, "POST", PATHS["chat"], body)
    assert reply.status == 400 and reply.json()["error"]["param"] == "functions"


def test_the_docs_table_is_the_one_the_code_writes() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    import readme_flags

    page = readme_flags.PARAMETERS_PAGE.read_text(encoding="utf-8")
    assert readme_flags.parameter_table() in page
