"""The reasoning budget end to end: tiny-chat under Nemotron 3 Nano's template, through the bridge and openai's client.

With thinking on, the template ends the prompt with ``<think>\\n``, and tiny-chat never closes the block by itself
(it reasons to max_tokens: the family probe's forced cells failed so before the budget). A forced call gets the
default budget, so the call comes after reasoning; ``thinking_token_budget`` ends the block after exactly that many
tokens; a reasoning effort without it ends the block after its share of max_tokens, chat and Responses. The
mechanism over scripted engine requests: tests/service/api/test_reasoning_budget.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from tokenizers import Tokenizer

from ovserve.service.api.reasoning_budget import FORCED_LOGPROB, default_budget, effort_budget
from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge

TEMPLATE = Path(__file__).resolve().parents[1] / "data" / "chat_templates" / "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja"
MODEL = "tiny-nemotron3"
ASK = [{"role": "user", "content": "What is the weather like in Paris?"}]
# A bounded city, so a random model's call closes well within the tokens left after the reasoning.
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": CITY}}]
THINKING = {"reasoning_effort": "high"}  # the template's enable_thinking: the prompt opens <think>
END = "</think>\n\n"  # what the server writes to end the block (think's end, then a blank line)
MAX_TOKENS = 500
OWN = "tiny-chat-own-template"


@pytest.fixture(scope="module")
def served() -> Iterator[RunningBridge]:
    specs = [
        ModelSpec(MODEL, TINY_CHAT, settings=TEST_SETTINGS, chat_template=TEMPLATE),
        ModelSpec(OWN, TINY_CHAT, settings=TEST_SETTINGS),  # its own template: the model opens <think> itself
    ]
    with served_with_bridge(specs) as running:
        yield running


@pytest.fixture(scope="module")
def client(served: RunningBridge) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url, api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(TINY_CHAT / "tokenizer.json"))


def create(client: openai.OpenAI, **fields: Any) -> Any:
    body = {"temperature": 0, "max_tokens": MAX_TOKENS, **fields}
    extra = {name: body.pop(name) for name in ("thinking_token_budget", "min_tokens", *THINKING) if name in body}
    return client.chat.completions.create(model=MODEL, messages=ASK, extra_body=extra, **body)  # type: ignore[call-overload]


def check_call(calls: list[tuple[str, str]]) -> None:
    assert [name for name, _ in calls] == ["get_weather"]
    assert isinstance(json.loads(calls[0][1])["city"], str)


def test_a_budget_past_max_tokens_leaves_the_forced_call_out(client: openai.OpenAI) -> None:
    """What the default budget is for: a forced call's grammar lets the reasoning run until the block's end, and
    tiny-chat never writes it; with a budget that cannot be spent within max_tokens, no call comes."""
    reply = create(client, tools=TOOLS, tool_choice="required", thinking_token_budget=MAX_TOKENS, **THINKING)
    choice = reply.choices[0]
    assert choice.finish_reason == "length" and not choice.message.tool_calls
    assert choice.message.model_dump().get("reasoning_content") and reply.usage.completion_tokens == MAX_TOKENS


@pytest.mark.parametrize("tool_choice", ["required", {"type": "function", "function": {"name": "get_weather"}}])
def test_a_forced_call_comes_after_reasoning(client: openai.OpenAI, tool_choice: Any) -> None:
    reply = create(client, tools=TOOLS, tool_choice=tool_choice, parallel_tool_calls=False, **THINKING)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    reasoning = choice.message.model_dump().get("reasoning_content")
    assert reasoning
    check_call([(call.function.name, call.function.arguments) for call in choice.message.tool_calls])
    # The default budget was spent, then the end markup, then the call: more than the budget, within max_tokens.
    assert default_budget(MAX_TOKENS) < reply.usage.completion_tokens <= MAX_TOKENS


def test_a_forced_call_comes_after_reasoning_streamed(client: openai.OpenAI) -> None:
    stream = create(client, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, stream=True,
                    stream_options={"include_usage": True}, **THINKING)  # fmt: skip
    reasoning, content, finish, usage = "", "", [], None
    calls: dict[int, dict[str, str]] = {}
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            reasoning += choice.delta.model_dump().get("reasoning_content") or ""
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                entry = calls.setdefault(call.index, {"name": "", "arguments": ""})
                entry["name"] += call.function.name or ""
                entry["arguments"] += call.function.arguments or ""
            if choice.finish_reason:
                finish.append(choice.finish_reason)
    assert finish == ["tool_calls"] and reasoning and not content
    check_call([(entry["name"], entry["arguments"]) for _, entry in sorted(calls.items())])
    unary = create(client, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, **THINKING)
    assert reasoning == unary.choices[0].message.model_dump()["reasoning_content"]  # greedy: the same sequence
    assert usage is not None and usage.completion_tokens == unary.usage.completion_tokens


def reasoning_tokens_before_end(entries: list[Any], tokenizer: Tokenizer) -> int:
    """How many tokens came before the end markup the server wrote (its tokens, each with FORCED_LOGPROB)."""
    ids = tokenizer.encode(END, add_special_tokens=False).ids
    end = [tokenizer.decode([token], skip_special_tokens=False) for token in ids]
    texts = [entry.token for entry in entries]
    starts = [i for i in range(len(texts)) if texts[i : i + len(end)] == end]
    assert starts, (texts[:20], end)
    first = starts[0]
    assert all(entry.logprob == FORCED_LOGPROB for entry in entries[first : first + len(end)])
    return first


@pytest.mark.parametrize("budget", [4, 0])
def test_thinking_token_budget_ends_the_block_after_that_many_tokens(
    client: openai.OpenAI, tokenizer: Tokenizer, budget: int
) -> None:
    reply = create(client, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, logprobs=True,
                   thinking_token_budget=budget, **THINKING)  # fmt: skip
    choice = reply.choices[0]
    entries = choice.logprobs.content
    assert reasoning_tokens_before_end(entries, tokenizer) == budget
    assert len(entries) == reply.usage.completion_tokens  # every token sent has its entry, the end markup's too
    assert choice.finish_reason == "tool_calls"
    check_call([(call.function.name, call.function.arguments) for call in choice.message.tool_calls])
    reasoning = choice.message.model_dump().get("reasoning_content") or ""
    assert reasoning.strip() == "".join(entry.token for entry in entries[:budget]).strip()  # those tokens' text


def test_thinking_token_budget_streamed_is_the_same(client: openai.OpenAI, tokenizer: Tokenizer) -> None:
    fields = {"tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False, "logprobs": True,
              "thinking_token_budget": 4, **THINKING}  # fmt: skip
    entries: list[Any] = []
    reasoning = ""
    for chunk in create(client, stream=True, **fields):
        for choice in chunk.choices:
            reasoning += choice.delta.model_dump().get("reasoning_content") or ""
            entries += choice.logprobs.content if choice.logprobs and choice.logprobs.content else []
    assert reasoning_tokens_before_end(entries, tokenizer) == 4
    unary = create(client, **fields).choices[0]
    assert reasoning == unary.message.model_dump()["reasoning_content"]
    assert [entry.token for entry in entries] == [entry.token for entry in unary.logprobs.content]


def test_thinking_token_budget_without_tools_ends_the_block_and_answers(
    client: openai.OpenAI, tokenizer: Tokenizer
) -> None:
    reply = create(client, logprobs=True, thinking_token_budget=4, max_tokens=40, **THINKING)
    choice = reply.choices[0]
    assert reasoning_tokens_before_end(choice.logprobs.content, tokenizer) == 4
    assert choice.message.model_dump().get("reasoning_content") and choice.message.content  # an answer after it
    assert reply.usage.completion_tokens == len(choice.logprobs.content) and choice.finish_reason == "stop"


def test_min_tokens_counts_the_whole_output_across_the_budgets_two_phases(client: openai.OpenAI) -> None:
    # the answer's phase has fewer tokens left than min_tokens: its minimum is what the reasoning did not write
    # (the engine refuses a minimum above the maximum: this request failed before)
    reply = create(client, thinking_token_budget=4, max_tokens=40, min_tokens=38, **THINKING)
    assert reply.usage.completion_tokens >= 38 and reply.choices[0].message.content


def test_n_choices_each_get_their_budget(client: openai.OpenAI, tokenizer: Tokenizer) -> None:
    reply = create(client, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, logprobs=True, n=2,
                   temperature=1.0, seed=3, thinking_token_budget=4, **THINKING)  # fmt: skip
    assert sorted(choice.index for choice in reply.choices) == [0, 1]
    for choice in reply.choices:
        assert reasoning_tokens_before_end(choice.logprobs.content, tokenizer) == 4
        assert choice.finish_reason == "tool_calls"
        check_call([(call.function.name, call.function.arguments) for call in choice.message.tool_calls])
    assert reply.usage.completion_tokens == sum(len(choice.logprobs.content) for choice in reply.choices)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"thinking_token_budget": -1}, "must be at least 0"),
        ({"thinking_token_budget": 4, "best_of": 2}, "beam search"),
    ],
)
def test_refusals_name_the_field(served: RunningBridge, fields: dict[str, Any], message: str) -> None:
    body = {"model": MODEL, "messages": ASK, "max_tokens": 8, "temperature": 0, **fields}
    reply = http_request(served.port, "POST", "/v3/chat/completions", body)
    assert reply.status == 400, reply.body[:300]
    error = reply.json()["error"]
    assert error["param"] == "thinking_token_budget" and message in error["message"]


def test_a_block_the_model_opens_is_counted_from_its_begin(client: openai.OpenAI, tokenizer: Tokenizer) -> None:
    """tiny-chat's own template leaves the block to the model, which writes ``<think>`` first: the budget counts
    the tokens after it."""
    reply = client.chat.completions.create(
        model=OWN, messages=ASK, temperature=0, max_tokens=60, logprobs=True,
        extra_body={"thinking_token_budget": 4, **THINKING},
    )  # fmt: skip
    choice = reply.choices[0]
    texts = [entry.token for entry in choice.logprobs.content]
    opened = next(k for k in range(len(texts) + 1) if "<think>" in "".join(texts[:k]))
    assert reasoning_tokens_before_end(choice.logprobs.content, tokenizer) - opened == 4
    assert choice.message.model_dump().get("reasoning_content") and choice.message.content


EFFORT_TOKENS = 40  # max_tokens of the effort tests: low's budget 8, high's 32, room to answer after either


def reasoning_and_answer(client: openai.OpenAI, effort: str, **fields: Any) -> tuple[str, str, Any]:
    """Chat under ``effort`` alone (no thinking_token_budget), streamed or not: (reasoning, content, logprobs)."""
    body = {"logprobs": True, "max_tokens": EFFORT_TOKENS, "reasoning_effort": effort, **fields}
    if not fields.get("stream"):
        message = create(client, **body).choices[0]
        reasoning = message.message.model_dump().get("reasoning_content") or ""
        return reasoning, message.message.content or "", message.logprobs.content
    reasoning, content, entries = "", "", []
    for chunk in create(client, **body):
        for choice in chunk.choices:
            reasoning += choice.delta.model_dump().get("reasoning_content") or ""
            content += choice.delta.content or ""
            entries += choice.logprobs.content if choice.logprobs and choice.logprobs.content else []
    return reasoning, content, entries


@pytest.mark.parametrize("stream", [False, True])
def test_a_low_effort_ends_the_block_sooner_than_a_high_one(
    client: openai.OpenAI, tokenizer: Tokenizer, stream: bool
) -> None:
    """tiny-chat never ends its block: each effort's share of max_tokens (OpenRouter's mapping) ends it."""
    low, low_answer, low_entries = reasoning_and_answer(client, "low", stream=stream)
    high, high_answer, high_entries = reasoning_and_answer(client, "high", stream=stream)
    assert reasoning_tokens_before_end(low_entries, tokenizer) == effort_budget("low", EFFORT_TOKENS) == 8
    assert reasoning_tokens_before_end(high_entries, tokenizer) == effort_budget("high", EFFORT_TOKENS) == 32
    assert low_answer and high_answer  # each answered after the block the server ended
    assert len(low) < len(high) and high.startswith(low.rstrip())  # greedy: the same reasoning, cut sooner


def test_an_explicit_budget_wins_over_the_effort(client: openai.OpenAI, tokenizer: Tokenizer) -> None:
    _, _, entries = reasoning_and_answer(client, "low", thinking_token_budget=12)
    assert reasoning_tokens_before_end(entries, tokenizer) == 12


def respond(client: openai.OpenAI, reasoning: dict[str, Any], *, stream: bool = False) -> Any:
    """A Responses call under ``reasoning`` (its max_tokens is OpenRouter's field: sent as the body has it)."""
    fields: dict[str, Any] = {"model": MODEL, "input": ASK[0]["content"], "temperature": 0,
                              "max_output_tokens": EFFORT_TOKENS, "extra_body": {"reasoning": reasoning}}  # fmt: skip
    if not stream:
        return client.responses.create(**fields)
    ends = ("response.completed", "response.incomplete")  # the answer may run to max_output_tokens
    (done,) = [event.response for event in client.responses.create(stream=True, **fields) if event.type in ends]
    return done


def responses_reasoning(response: Any) -> str:
    return "".join(part.text for item in response.output if item.type == "reasoning" for part in item.content or [])


@pytest.mark.parametrize("stream", [False, True])
def test_responses_reasoning_effort_ends_the_block_sooner_when_low(client: openai.OpenAI, stream: bool) -> None:
    low, high = respond(client, {"effort": "low"}, stream=stream), respond(client, {"effort": "high"}, stream=stream)
    low_tokens = low.usage.output_tokens_details.reasoning_tokens
    high_tokens = high.usage.output_tokens_details.reasoning_tokens
    assert 0 < low_tokens < high_tokens, (low_tokens, high_tokens)
    assert low.output_text and high.output_text  # an answer after each block
    assert responses_reasoning(high).startswith(responses_reasoning(low).rstrip())
    # reasoning.max_tokens (OpenRouter's field) is the budget itself, and wins over the effort
    asked = respond(client, {"effort": "high", "max_tokens": 8}, stream=stream)
    assert responses_reasoning(asked) == responses_reasoning(low)  # low's share of 40 is 8 tokens too


def test_responses_reasoning_max_tokens_is_echoed(served: RunningBridge) -> None:
    reasoning = {"effort": "high", "max_tokens": 8}
    body = {"model": MODEL, "input": "hi", "max_output_tokens": 16, "temperature": 0, "reasoning": reasoning}
    reply = http_request(served.port, "POST", "/v3/responses", body)
    assert reply.status == 200, reply.body[:300]
    assert reply.json()["reasoning"] == {**reasoning, "summary": None}  # OpenAI's keys, and the budget sent


def test_responses_reasoning_max_tokens_refusals_name_the_field(served: RunningBridge) -> None:
    body = {"model": MODEL, "input": "hi", "max_output_tokens": 8, "reasoning": {"max_tokens": -1}}
    reply = http_request(served.port, "POST", "/v3/responses", body)
    assert reply.status == 400, reply.body[:300]
    error = reply.json()["error"]
    assert error["param"] == "reasoning.max_tokens" and "must be at least 0" in error["message"]


def test_an_effort_beside_logit_bias_only_turns_thinking_on(client: openai.OpenAI, tokenizer: Tokenizer) -> None:
    """The biased lane has no budget: the effort, a hint, is not refused there (an explicit budget is)."""
    banned = tokenizer.encode("</think>", add_special_tokens=False).ids[0]
    reply = create(client, max_tokens=EFFORT_TOKENS, reasoning_effort="low", logit_bias={str(banned): -100})
    assert reply.choices[0].finish_reason == "length"  # the block was not ended: no budget on the lane
    assert (reply.choices[0].message.model_dump().get("reasoning_content") or "").strip()
    with pytest.raises(openai.BadRequestError, match="reasoning budget"):
        create(client, max_tokens=EFFORT_TOKENS, thinking_token_budget=4, logit_bias={str(banned): -100})
