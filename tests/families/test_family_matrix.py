"""Every family of tests/families/table.py served by one ovserve, asked what users ask, through the openai client.

One server serves every family model of table.py (their real chat templates and tokenizers, tiny weights; see
build.py), the REST bridge in front. Each cell of the README's family table is a test here (matrix.CELLS),
run for every family it applies to: plain chat; tools offered (the template renders them); the tool-call
history sent back as an OpenAI client sends it (``content: null``, the ids the server gave); a forced call
(``tool_choice: "required"``) unary and streamed, read back as ``tool_calls``; parallel calls off; and the
reasoning split from the reply, unary and streamed. Beside the cells: Anthropic's Messages API with thinking on, through
the official ``anthropic`` SDK, on each family that reasons (issue 48: test_messages_sdk.py runs it on tiny-chat).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import jsonschema
import openai
import pytest

from ovserve.service.engine import EngineSettings
from ovserve.service.models import ModelSpec
from ovserve.service.residency import ResidencySettings
from tests.families import matrix
from tests.families.table import THOUGHT
from tests.families.tools import ASK, SCHEMAS, TOOLS
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge
from tests.rest_bridge.test_messages_sdk import same_message, sdk

# A small KV cache each: two dozen engines share the machine (and a first grammar compile on a 150k-262k
# vocabulary takes seconds there, more than the 2 s a lone server allows).
SETTINGS = EngineSettings(max_num_seqs=8, kv_cache_blocks=256, grammar_timeout_s=60)
THINK = {"reasoning_effort": "high"}  # what turns reasoning on, under each template's own name for it
# The same through Anthropic's Messages API (reasoning_effort and thinking_token_budget underneath: ovserve.rest_bridge.
# translate.anthropic), greedy (SDK 2.x has no temperature argument: the raw body); 1,024 is Anthropic's smallest
# budget, and each family's reasoning is a few tokens, so it never binds.
MESSAGES_THINKING: dict[str, Any] = {"max_tokens": 400, "messages": ASK, "extra_body": {"temperature": 0},
                                     "thinking": {"type": "enabled", "budget_tokens": 1024}}  # fmt: skip
# Room for "required"'s up to 8 calls (ovserve.service.structured.output.MAX_PARALLEL_CALLS) with bounded arguments:
# Kimi K3's XTML call of two arguments is ~125 tokens on its stand-in vocabulary, 8 of them ~1,000.
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 1500}


# At most this many family models loaded at once, each on its first request: 81 engine processes (~250-600 MB each
# on their real vocabularies) beside the session's other servers ran CI's 24 GB machine out of memory. The cells
# are grouped by family (parametrize scope="module"), so each family loads once.
LOADED_AT_ONCE = 12


@pytest.fixture(scope="module")
def families(family_models: dict[str, Path]) -> Iterator[RunningBridge]:
    specs = [
        ModelSpec(name, path, settings=SETTINGS, load_on_request=True, **matrix.SERVE_OPTIONS.get(name, {}))
        for name, path in family_models.items()
    ]
    with served_with_bridge(specs, residency=ResidencySettings(max_loaded_models=LOADED_AT_ONCE)) as running:
        yield running


@pytest.fixture(scope="module")
def client(families: RunningBridge) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=families.url, api_key="unused", max_retries=0, timeout=120) as opened:
        yield opened


def forced(client: openai.OpenAI, family: str, **extra: Any) -> Any:
    return client.chat.completions.create(
        model=family, messages=ASK, tools=TOOLS, tool_choice="required", **GREEDY, **extra
    ).choices[0]


@pytest.fixture(scope="module")
def forced_once(client: openai.OpenAI) -> Any:
    """Each family's unary forced reply, asked once and shared by the cells that read it (greedy: the same reply
    each time): the forced, history and streamed cells, which ran it three times."""
    replies: dict[str, Any] = {}

    def reply(family: str) -> Any:
        if family not in replies:
            replies[family] = forced(client, family)
        return replies[family]

    return reply


def check_calls(calls: list[tuple[str, str]]) -> None:
    """Each call names an offered tool and its arguments are valid for that tool."""
    assert calls, "no tool calls"
    for name, arguments in calls:
        jsonschema.validate(json.loads(arguments), SCHEMAS[name])


def test_the_docs_table_is_the_matrix() -> None:
    """The docs' family table (docs/operations/formats.md) is what these tests check (python -m tests.families.matrix
    rewrites it)."""
    assert matrix.page_section() == matrix.page_table(matrix.PARSERS)


@pytest.mark.parametrize("family", sorted(matrix.PARSERS), scope="module")
def test_each_family_is_served_with_its_parsers(client: openai.OpenAI, family: str) -> None:
    """The parsers detected on its published template are the family's (matrix.PARSERS)."""
    client.chat.completions.create(model=family, messages=ASK, max_tokens=1)  # loads it (models load on request)
    listed = client.models.retrieve(family).model_dump()
    assert (listed["tool_parser"] or "none", listed["reasoning_parser"] or "none") == matrix.PARSERS[family]
    assert listed["chat_template_source"] == "chat_template.jinja"


@pytest.mark.parametrize("family", matrix.params("plain"), scope="module")
def test_plain(client: openai.OpenAI, family: str) -> None:
    """The model's answer (its script; see build.py), ended by its own end-of-turn token."""
    choice = client.chat.completions.create(model=family, messages=ASK, **GREEDY).choices[0]
    assert choice.message.role == "assistant" and choice.finish_reason == "stop"
    assert (choice.message.content or "") == matrix.reply(family) and not choice.message.tool_calls


@pytest.mark.parametrize("family", matrix.params("tools"), scope="module")
def test_tools(client: openai.OpenAI, family: str) -> None:
    """The template renders the offered tools into the prompt (it grows), and the model answers."""
    plain = client.chat.completions.create(model=family, messages=ASK, **GREEDY)
    offered = client.chat.completions.create(model=family, messages=ASK, tools=TOOLS, **GREEDY)
    assert plain.usage and offered.usage
    assert offered.usage.prompt_tokens > plain.usage.prompt_tokens + 20
    assert (offered.choices[0].message.content or "") == matrix.reply(family)


@pytest.mark.parametrize("family", matrix.params("history"), scope="module")
def test_history(client: openai.OpenAI, forced_once: Any, family: str) -> None:
    """The server's own call sent back as the openai client sends it, then the tool's result."""
    called = forced_once(family)
    assert called.message.tool_calls
    calls = [call.model_dump(exclude_none=True) for call in called.message.tool_calls]
    results = [{"role": "tool", "tool_call_id": call["id"], "content": "18 C, sunny"} for call in calls]
    history = [*ASK, {"role": "assistant", "content": None, "tool_calls": calls}, *results]
    reply = client.chat.completions.create(model=family, messages=history, tools=TOOLS, **GREEDY).choices[0]
    assert reply.message.role == "assistant"
    # and an id in another form (OpenAI's own, as a history from elsewhere carries)
    foreign = [{**calls[0], "id": "call_8f2c1e0b9a7d4c3e2f1a0b9c"}]
    history = [*ASK, {"role": "assistant", "content": None, "tool_calls": foreign},
               {"role": "tool", "tool_call_id": foreign[0]["id"], "content": "18 C"}]  # fmt: skip
    assert client.chat.completions.create(model=family, messages=history, tools=TOOLS, **GREEDY).choices


@pytest.mark.parametrize("family", matrix.params("forced"), scope="module")
def test_forced(forced_once: Any, family: str) -> None:
    choice = forced_once(family)
    assert choice.finish_reason == "tool_calls", choice
    assert not choice.message.content, choice.message.content
    check_calls([(call.function.name, call.function.arguments) for call in choice.message.tool_calls or []])


@pytest.mark.parametrize("family", matrix.params("forced_stream"), scope="module")
def test_forced_stream(client: openai.OpenAI, forced_once: Any, family: str) -> None:
    """Streamed: the deltas join into the same calls as the unary reply, names first, no content."""
    joined: dict[int, dict[str, str]] = {}
    finish, content = [], ""
    stream = client.chat.completions.create(
        model=family, messages=ASK, tools=TOOLS, tool_choice="required", stream=True, **GREEDY
    )
    for chunk in stream:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                entry = joined.setdefault(call.index, {"name": "", "arguments": ""})
                if call.function and call.function.name:
                    assert not entry["name"] and not entry["arguments"]  # the name comes first, once
                    entry["name"] = call.function.name
                if call.function and call.function.arguments:
                    entry["arguments"] += call.function.arguments
            if choice.finish_reason:
                finish.append(choice.finish_reason)
    assert finish == ["tool_calls"] and not content
    streamed = [(entry["name"], entry["arguments"]) for _, entry in sorted(joined.items())]
    check_calls(streamed)
    unary = forced_once(family)
    assert streamed == [(call.function.name, call.function.arguments) for call in unary.message.tool_calls or []]


@pytest.mark.parametrize("family", matrix.params("single"), scope="module")
def test_single(client: openai.OpenAI, family: str) -> None:
    choice = forced(client, family, parallel_tool_calls=False)
    assert choice.finish_reason == "tool_calls" and len(choice.message.tool_calls or []) == 1


@pytest.mark.parametrize("family", matrix.params("reasoning"), scope="module")
def test_reasoning(client: openai.OpenAI, family: str) -> None:
    """With reasoning on, the family's model writes its reasoning block, then its answer (see build.py)."""
    message = client.chat.completions.create(model=family, messages=ASK, **GREEDY, **THINK).choices[0].message
    thought = message.model_dump().get("reasoning_content") or ""
    assert (thought, message.content or "") == (THOUGHT, matrix.reply(family))


@pytest.mark.parametrize("family", matrix.params("reasoning_stream"), scope="module")
def test_reasoning_stream(client: openai.OpenAI, family: str) -> None:
    thought, content = "", ""
    for chunk in client.chat.completions.create(model=family, messages=ASK, stream=True, **GREEDY, **THINK):
        for choice in chunk.choices:
            delta = choice.delta.model_dump()
            thought += delta.get("reasoning_content") or ""
            content += delta.get("content") or ""
    assert (thought, content) == (THOUGHT, matrix.reply(family))


@pytest.mark.parametrize("family", matrix.PAST_REASONING, scope="module")
def test_past_reasoning(families: RunningBridge, family: str) -> None:
    """A past call's reasoning, sent back as reasoning_content (OpenAI clients' form of what the server returned),
    is in the prompt the server renders, wherever the template reads it (matrix.PAST_REASONING)."""
    past = "Weighing the clouds over Paris"
    call = {"id": "call1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    history = [*ASK, {"role": "assistant", "content": None, "reasoning_content": past, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": "call1", "content": "Sunny."}]  # fmt: skip
    with httpx.Client(base_url=families.url, timeout=120) as http:
        tokens = http.post("/tokenize", json={"model": family, "messages": history}).raise_for_status().json()
        text = http.post("/detokenize", json={"model": family, "tokens": tokens["tokens"]}).raise_for_status().json()
    assert past in text["prompt"]


@pytest.fixture(scope="module")
def claude(families: RunningBridge) -> Iterator[anthropic.Anthropic]:
    with sdk(families.url, api_key="unused") as opened:
        yield opened


@pytest.mark.parametrize("family", matrix.params("reasoning"), scope="module")
def test_messages_thinking(claude: anthropic.Anthropic, family: str) -> None:
    """Anthropic's thinking: a thinking block holding the family's reasoning, then its answer; the SDK's stream
    helper assembles the unary message."""
    unary = claude.messages.create(model=family, **MESSAGES_THINKING)
    kinds = [block.type for block in unary.content]
    thought = "".join(block.thinking for block in unary.content if block.type == "thinking")
    text = "".join(block.text for block in unary.content if block.type == "text")
    assert kinds[0] == "thinking" and "tool_use" not in kinds and unary.stop_reason == "end_turn", unary
    assert (thought, text) == (THOUGHT, matrix.reply(family)), unary
    with claude.messages.stream(model=family, **MESSAGES_THINKING) as stream:
        deltas = [event.delta for event in stream if event.type == "content_block_delta"]
        same_message(unary, stream.get_final_message())
    assert "".join(delta.thinking for delta in deltas if delta.type == "thinking_delta") == THOUGHT
