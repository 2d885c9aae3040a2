"""The generic tool format's conversation (service/api/generic_tools.py), on templates that show no tool format.

First the rewrite alone, on published templates (Gemma 3 and 2, Phi-3.5, SmolLM3) rendered by both template
engines (openvino_genai's minja, and Jinja2 as transformers sets it up): the tools appear in the prompt, a
conversation with past calls and results renders whole, and roles alternate where the template demands it.
Then end to end: tiny-chat served with the Gemma 3 template as its chat_template.jinja and tool_parser
"generic", through the real server, the bridge and the openai client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import jinja2
import jinja2.sandbox
import jsonschema
import openai
import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import chat_pb2
from ovserve.service.api import chat
from ovserve.service.api.generic_tools import (
    TemplateRoles,
    generic_conversation,
    template_roles,
    tools_prompt,
    written_for,
)
from ovserve.service.engine import TemplateError
from ovserve.service.engine.chat_template import minja_render
from ovserve.service.models import ModelRegistry, ModelSpec
from ovserve.service.parsing import OutputFormat
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.fakes import FakeEngine, fake_model, splits, text
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge
from tests.rpc import parse

TEMPLATES = Path(__file__).resolve().parents[2] / "data" / "chat_templates"
GEMMA3, GEMMA2 = "google-gemma-3-270m-it.jinja", "google-gemma-2-2b-it.jinja"
PHI35, SMOLLM3 = "microsoft-Phi-3.5-mini-instruct.jinja", "HuggingFaceTB-SmolLM3-3B.jinja"
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}},
                    "required": ["city"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "set_alarm", "description": "Set an alarm.",
     "parameters": {"type": "object", "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23}},
                    "required": ["hour"], "additionalProperties": False}}},
]  # fmt: skip
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
CALLS = [
    {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    {"id": "call_b", "type": "function", "function": {"name": "set_alarm", "arguments": '{"hour": 7}'}},
]
# A conversation as clients send it back: a system prompt, a question, two parallel calls and their results.
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Weather in Paris, and wake me at 7?"},
    {"role": "assistant", "content": None, "tool_calls": CALLS},
    {"role": "tool", "tool_call_id": "call_a", "content": "Sunny, 21 C"},
    {"role": "tool", "tool_call_id": "call_b", "content": "Alarm set"},
]
WRITTEN_CALLS = (
    '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
    '{"name": "set_alarm", "arguments": {"hour": 7}}]}'
)
Render = Callable[[list[dict[str, Any]]], str]


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(TINY_CHAT))


def _raise(message: str) -> None:
    raise jinja2.TemplateError(message)


def jinja2_renderer(text: str) -> Render:
    """The template rendered by Jinja2 as transformers sets it up (no polyfills of any kind)."""
    environment = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    environment.globals["raise_exception"] = _raise
    compiled = environment.from_string(text)

    def render(messages: list[dict[str, Any]]) -> str:
        try:
            return compiled.render(messages=messages, bos_token="<bos>", add_generation_prompt=True)
        except jinja2.TemplateError as error:
            raise TemplateError(str(error)) from error

    return render


def minja_renderer(tokenizer: ov_genai.Tokenizer, text: str) -> Render:
    """The template rendered by openvino_genai's minja, as the server renders it (its polyfills included)."""

    def render(messages: list[dict[str, Any]]) -> str:
        try:
            return minja_render(tokenizer, text, messages, None, {}, True)
        except Exception as error:
            raise TemplateError(str(error)) from error

    return render


def renderer(engine: str, name: str, tokenizer: ov_genai.Tokenizer) -> Render:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    return minja_renderer(tokenizer, text) if engine == "minja" else jinja2_renderer(text)


# What each template (by Jinja2, without polyfills) renders of each role, as the probes find it: Gemma 2 refuses
# a system message, Gemma 2 and 3 refuse a tool message and two turns of one role; Phi-3.5 drops a tool message;
# SmolLM3 renders one as a user turn.
NATIVE = {
    GEMMA3: TemplateRoles(system=True, tool=False, repeats=False),
    GEMMA2: TemplateRoles(system=False, tool=False, repeats=False),
    PHI35: TemplateRoles(system=True, tool=False, repeats=True),
    SMOLLM3: TemplateRoles(system=True, tool=True, repeats=True),
}


@pytest.mark.parametrize("name", list(NATIVE))
def test_the_probes_find_what_each_template_renders(name: str) -> None:
    assert template_roles(jinja2_renderer((TEMPLATES / name).read_text(encoding="utf-8"))) == NATIVE[name]


def test_the_conversation_as_sent_fails_on_these_templates() -> None:
    """What the rewrite is for: Gemma refuses the conversation as clients send it; Phi-3.5 drops the results."""
    for name in (GEMMA3, GEMMA2):
        with pytest.raises(TemplateError):
            jinja2_renderer((TEMPLATES / name).read_text(encoding="utf-8"))(HISTORY)
    as_templates_get_it = [{**message, "content": message["content"] or ""} for message in HISTORY]
    assert "Sunny" not in jinja2_renderer((TEMPLATES / PHI35).read_text(encoding="utf-8"))(as_templates_get_it)


@pytest.mark.parametrize("engine", ["minja", "jinja2"])
@pytest.mark.parametrize("name", list(NATIVE))
def test_tools_and_tool_history_render_on_each_engine(name: str, engine: str, tokenizer: ov_genai.Tokenizer) -> None:
    render = renderer(engine, name, tokenizer)
    roles = template_roles(render)
    for history in (HISTORY, HISTORY[1:]):  # with a system prompt of the client's, and without
        prompt = render(written_for(roles, history, TOOLS))
        assert tools_prompt(TOOLS) in prompt
        for tool in TOOLS:
            assert json.dumps(tool["function"]) in prompt  # name, description and schema, one line each
        assert WRITTEN_CALLS in prompt  # the calls as the model writes them
        assert "Sunny, 21 C" in prompt and "Alarm set" in prompt
        assert ("Answer briefly." in prompt) == (history is HISTORY)
        assert prompt.index("Answer briefly." if history is HISTORY else "get_weather") < prompt.index("Weather in")


@pytest.mark.parametrize("engine", ["minja", "jinja2"])
@pytest.mark.parametrize("name", [GEMMA3, GEMMA2])
def test_gemma_turns_alternate(name: str, engine: str, tokenizer: ov_genai.Tokenizer) -> None:
    render = renderer(engine, name, tokenizer)
    messages = written_for(template_roles(render), [*HISTORY, {"role": "user", "content": "Thanks!"}], TOOLS)
    roles = [message["role"] for message in messages]
    assert roles[roles[0] == "system" :] == ["user", "assistant", "user"]  # the results and "Thanks!" one turn
    prompt = render(messages)
    turns = [turn.split("\n", 1)[0] for turn in prompt.split("<start_of_turn>")[1:]]
    assert turns == ["user", "model", "user", "model"]


def test_a_system_role_refused_is_folded_into_the_first_user_turn() -> None:
    messages = written_for(NATIVE[GEMMA2], HISTORY, TOOLS)
    assert messages[0]["role"] == "user"
    assert (
        messages[0]["content"]
        == "Answer briefly.\n\n" + tools_prompt(TOOLS) + "\n\nWeather in Paris, and wake me at 7?"
    )
    only_calls = written_for(NATIVE[GEMMA2], [{"role": "assistant", "content": "Hi"}], TOOLS)
    assert [m["role"] for m in only_calls] == ["user", "assistant"]  # a user turn of its own when none comes first


def test_results_are_named_by_their_calls_where_the_template_renders_no_tool_message() -> None:
    messages = written_for(NATIVE[PHI35], HISTORY, TOOLS)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "user"]  # repeats accepted
    assert [json.loads(m["content"]) for m in messages[3:]] == [
        {"tool_response": {"name": "get_weather", "content": "Sunny, 21 C"}},
        {"tool_response": {"name": "set_alarm", "content": "Alarm set"}},
    ]
    assert messages[2] == {"role": "assistant", "content": WRITTEN_CALLS}  # no tool_calls left for the template
    kept = written_for(NATIVE[SMOLLM3], HISTORY, TOOLS)
    assert kept[3:] == HISTORY[3:]  # a template that renders tool messages gets them as they are


def test_text_beside_calls_comes_first() -> None:
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Let me look.", "tool_calls": CALLS}]
    assert written_for(NATIVE[PHI35], history, [])[1]["content"] == "Let me look.\n" + WRITTEN_CALLS


def test_only_generic_models_with_tools_or_tool_history_are_rewritten() -> None:
    engine = FakeEngine()
    generic = dataclasses.replace(fake_model(engine), output_format=OutputFormat("generic"))
    plain = [{"role": "user", "content": "Hi"}]
    assert generic_conversation(generic, plain, []) == (plain, [])
    assert generic_conversation(fake_model(engine), HISTORY, TOOLS) == (HISTORY, TOOLS)  # hermes: the template's
    messages, tools = generic_conversation(generic, plain, TOOLS)
    assert tools is None and messages[0] == {"role": "system", "content": tools_prompt(TOOLS)}
    messages, tools = generic_conversation(generic, HISTORY, [])  # history alone: calls written, nothing described
    assert tools is None and messages[0] == HISTORY[0] and messages[2]["content"] == WRITTEN_CALLS


# ---- end to end: tiny-chat with the Gemma 3 template, tool_parser "generic" ----


@pytest.fixture(scope="module")
def gemma_bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBridge]:
    """tiny-chat, with Gemma 3's template beside it as chat_template.jinja, served with the generic format."""
    copy = tmp_path_factory.mktemp("generic") / "tiny-gemma3"
    shutil.copytree(TINY_CHAT, copy)
    shutil.copyfile(TEMPLATES / GEMMA3, copy / "chat_template.jinja")
    spec = ModelSpec("tiny-gemma3", copy, settings=TEST_SETTINGS, tool_parser="generic")
    with served_with_bridge([spec]) as bridge:
        yield bridge


@pytest.fixture(scope="module")
def client(gemma_bridge: RunningBridge) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=gemma_bridge.url, api_key="k", max_retries=0) as opened:
        yield opened


ASK = [{"role": "user", "content": "What is the weather like in Paris?"}]
CHOICES = {"required": "required", "named": {"type": "function", "function": {"name": "set_alarm"}}}


def checked(calls: list[tuple[str, str]], allowed: list[str]) -> list[str]:
    """The calls' names, each one of ``allowed`` with arguments valid for its tool."""
    assert calls
    for name, arguments in calls:
        assert name in allowed
        jsonschema.validate(json.loads(arguments), SCHEMAS[name])
    return [name for name, _ in calls]


@pytest.mark.parametrize("choice", list(CHOICES))
def test_forced_calls_unary_and_streamed(client: openai.OpenAI, choice: str) -> None:
    allowed = ["set_alarm"] if choice == "named" else list(SCHEMAS)
    fields: dict[str, Any] = {"model": "tiny-gemma3", "messages": ASK, "tools": TOOLS, "max_tokens": 400}
    reply = client.chat.completions.create(**fields, tool_choice=CHOICES[choice], temperature=0)
    message = reply.choices[0].message
    assert reply.choices[0].finish_reason == "tool_calls" and not message.content, message
    names = checked([(c.function.name, c.function.arguments) for c in message.tool_calls or []], allowed)
    assert len(names) == 1 or choice == "required"

    joined: dict[int, list[str]] = {}
    finishes = []
    for chunk in client.chat.completions.create(**fields, tool_choice=CHOICES[choice], temperature=0, stream=True):
        for streamed in chunk.choices:
            assert not streamed.delta.content, streamed.delta.content
            for call in streamed.delta.tool_calls or []:
                name, arguments = joined.setdefault(call.index, ["", ""])
                joined[call.index] = [name + (call.function.name or ""), arguments + (call.function.arguments or "")]
            finishes += [streamed.finish_reason] if streamed.finish_reason else []
    assert finishes == ["tool_calls"]
    assert checked([(name, arguments) for name, arguments in joined.values()], allowed) == names  # greedy: the same


def as_sent(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history`` as OpenAI's API carries it: each call's arguments a JSON text."""
    sent = []
    for message in history:
        calls = [
            {**call, "function": {**call["function"], "arguments": text_of(call["function"]["arguments"])}}
            for call in message.get("tool_calls", [])
        ]
        sent.append({**message, "tool_calls": calls} if calls else message)
    return sent


def text_of(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def test_tool_history_renders_and_answers(client: openai.OpenAI, gemma_bridge: RunningBridge) -> None:
    sent = as_sent(HISTORY)
    reply = client.chat.completions.create(model="tiny-gemma3", messages=sent, tools=TOOLS, max_tokens=8)
    assert reply.choices[0].finish_reason in ("stop", "length", "tool_calls")
    # The prompt the server rendered (tokenised, then read back): the calls, both results in one user turn.
    with httpx.Client(base_url=gemma_bridge.url) as http:
        ids = http.post("/tokenize", json={"model": "tiny-gemma3", "messages": sent}).raise_for_status().json()
        prompt = http.post("/detokenize", json={"model": "tiny-gemma3", "tokens": ids["tokens"]}).json()["prompt"]
    assert "<start_of_turn>model\n" + WRITTEN_CALLS + "<end_of_turn>" in prompt
    results = prompt.split("<start_of_turn>user\n")[-1]
    assert "Sunny, 21 C" in results and "Alarm set" in results and prompt.endswith("<start_of_turn>model\n")


def test_auto_reads_the_models_json_back_as_calls(client: openai.OpenAI) -> None:
    """With tool_choice auto the model writes what it likes; when that is the generic JSON, it is a call.
    (tiny-chat writes that JSON on its own only by chance: an answer format that is the call's object holds it to
    the JSON, so whichever the grammar takes, a call or the answer, the reply is a call list.)"""
    one_call = {"type": "object", "properties": {"tool_calls": {"type": "array", "minItems": 1, "maxItems": 1,
                "items": {"type": "object", "properties": {"name": {"const": "get_weather"},
                                                           "arguments": SCHEMAS["get_weather"]},
                          "required": ["name", "arguments"], "additionalProperties": False}}},
                "required": ["tool_calls"], "additionalProperties": False}  # fmt: skip
    answer_format = {"type": "json_schema", "json_schema": {"name": "call", "schema": one_call}}
    fields: dict[str, Any] = {"model": "tiny-gemma3", "messages": ASK, "tools": TOOLS, "tool_choice": "auto",
                              "response_format": answer_format, "parallel_tool_calls": False, "max_tokens": 200,
                              "temperature": 0}  # fmt: skip
    reply = client.chat.completions.create(**fields).choices[0]
    assert reply.finish_reason == "tool_calls" and not reply.message.content, reply.message
    names = checked([(c.function.name, c.function.arguments) for c in reply.message.tool_calls or []], list(SCHEMAS))
    assert len(names) == 1
    joined: dict[int, list[str]] = {}
    for chunk in client.chat.completions.create(**fields, stream=True):
        for streamed in chunk.choices:
            assert not streamed.delta.content, streamed.delta.content
            for call in streamed.delta.tool_calls or []:
                name, arguments = joined.setdefault(call.index, ["", ""])
                joined[call.index] = [name + (call.function.name or ""), arguments + (call.function.arguments or "")]
    assert checked([(name, arguments) for name, arguments in joined.values()], list(SCHEMAS)) == names


SCRIPTED_REPLY = 'Let me check.\n{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}'


def test_auto_reads_a_reply_of_text_and_json_however_the_engine_splits_it() -> None:
    """The model's own reply (scripted), text then its JSON, streamed through the servicers in odd pieces: the
    text is content, the JSON a call; the prompt the engine got describes the tools, the template got none."""
    for pieces in splits(SCRIPTED_REPLY, seed=44, random_cuts=20)[::7]:
        engine = FakeEngine()
        engine.script(text(*pieces))
        registry = ModelRegistry([dataclasses.replace(fake_model(engine), output_format=OutputFormat("generic"))])
        request = parse(chat_pb2.StreamChatCompletionRequest, {"model": "fake", "messages": ASK, "tools": TOOLS})
        chunks = asyncio.run(_collect(chat.stream_chat_completion(registry, request)))
        deltas = [choice.delta for chunk in chunks for choice in chunk.choices]
        calls = [call for delta in deltas for call in delta.tool_calls]
        assert "".join(delta.content for delta in deltas) == "Let me check.", pieces
        assert [call.function.name for call in calls if call.function.name] == ["get_weather"], pieces
        assert json.loads("".join(call.function.arguments for call in calls)) == {"city": "Paris"}, pieces
        prompt = engine.decode(engine.generations[0].prompt_ids)
        # (the tools reach it through protobuf's Struct: its numbers are floats, so the lines are compared in part)
        assert tools_prompt(TOOLS).split("\n")[0] in prompt and '{"name": "set_alarm", "description": "Set' in prompt
        assert "<tools>" not in prompt  # what the fake engine's template writes for tools it is given


async def _collect(stream: Any) -> list[Any]:
    return [chunk async for chunk in stream]
