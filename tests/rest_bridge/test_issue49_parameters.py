"""Issue 49's parameters through the openai client, every reply checked against OpenAI's OpenAPI document.

Each parameter's behaviour is tested beside its code (test_greedy_choices, test_logit_bias, test_custom_tools,
test_context_management, test_min_tokens_stop_ids, test_assistant_prefill, test_reasoning_budget_served, ...); here
one request each goes through ``spec_checked_client``, so the bodies those features write are the document's shapes
(errors as its ErrorResponse), and the deprecated function pair of OpenAI's document (an assistant message's
``function_call`` answered by a ``function`` role message, without ``functions``) is served.
Streamed chunks are checked in test_openai_spec's matrix.
"""

from __future__ import annotations

import re
from typing import Any

import openai
import pytest

MODEL = "tiny-chat"
SCHEMAS = [
    ("POST", r"/chat/completions", "CreateChatCompletionResponse"),
    ("POST", r"/completions", "CreateCompletionResponse"),
    ("POST", r"/responses", "Response"),
]
HI: Any = [{"role": "user", "content": "Tell me a short story."}]
DIGITS = {"type": "grammar", "grammar": {"syntax": "lark", "definition": "start: /[0-9]{1,3}/"}}


@pytest.fixture
def client(spec_checked_client: openai.OpenAI) -> openai.OpenAI:
    return spec_checked_client


def chat(client: openai.OpenAI, **fields: Any) -> Any:
    fields.setdefault("max_tokens", 12)
    return client.chat.completions.create(model=MODEL, messages=fields.pop("messages", HI), **fields)


def test_chat_parameters_write_the_documents_shapes(client: openai.OpenAI) -> None:
    greedy = chat(client, n=2, temperature=0)
    assert len(greedy.choices) == 2 and greedy.choices[0].message.content == greedy.choices[1].message.content
    chat(client, logit_bias={"1159": -100}, extra_body={"bad_words": ["time"], "min_tokens": 2, "stop_token_ids": [13]})
    prefilled = chat(
        client, messages=[*HI, {"role": "assistant", "content": "Once upon"}],
        extra_body={"continue_final_message": True, "add_generation_prompt": False},
    )  # fmt: skip
    assert (prefilled.choices[0].message.content or "").startswith("Once upon")
    chat(client, extra_body={"thinking_token_budget": 4, "grammar": 'root ::= "yes" | "no"'})
    assert chat(client, extra_body={"structured_outputs": {"choice": ["yes", "no"]}}).choices[0].message.content in (
        "yes", "no",
    )  # fmt: skip
    chat(client, prompt_cache_key="k", prompt_cache_retention="in_memory")  # type: ignore[call-overload]


def test_chat_custom_tool_call_is_the_documents_custom_call(client: openai.OpenAI) -> None:
    tool: Any = {"type": "custom", "custom": {"name": "count", "format": DIGITS}}
    reply = chat(client, tools=[tool], tool_choice={"type": "custom", "custom": {"name": "count"}}, max_tokens=300)
    (call,) = reply.choices[0].message.tool_calls or []
    assert call.type == "custom" and re.fullmatch("[0-9]{1,3}", call.custom.input)  # type: ignore[union-attr]


def test_the_deprecated_function_pair_without_functions(client: openai.OpenAI) -> None:
    """OpenAI's document still lists an assistant message's ``function_call`` and the ``function`` role: a request
    with tools (not ``functions``) may carry that history; the function message answers the call."""
    messages: Any = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "function_call": {"name": "weather", "arguments": '{"city": "Paris"}'}},
        {"role": "function", "name": "weather", "content": "sunny"},
    ]
    reply = chat(client, messages=messages)
    assert reply.choices[0].message.content is not None and reply.choices[0].message.function_call is None
    with pytest.raises(openai.BadRequestError) as caught:  # a function message with no call of its name before it
        chat(client, messages=[messages[0], {"role": "function", "name": "other", "content": "x"}])
    assert caught.value.body["param"] == "messages[1].name"  # type: ignore[index]


def test_completions_logprobs_0_and_text_offset(client: openai.OpenAI) -> None:
    prompt = "Once upon a time"
    reply = client.completions.create(model=MODEL, prompt=prompt, max_tokens=4, logprobs=0, n=2, temperature=0)
    for choice in reply.choices:
        logprobs = choice.logprobs
        assert logprobs is not None and logprobs.text_offset and logprobs.text_offset[0] == len(prompt)
        assert all(len(top) == 1 for top in logprobs.top_logprobs or [])  # the chosen token alone
    assert reply.choices[0].text == reply.choices[1].text  # n greedy choices


def test_responses_parameters_write_the_documents_shapes(client: openai.OpenAI) -> None:
    flat = {"type": "grammar", "syntax": "lark", "definition": "start: /[0-9]{1,3}/"}  # the Responses API's form
    tools: Any = [{"type": "custom", "name": "count", "format": flat}]
    called = client.responses.create(
        model=MODEL, input="Count.", tools=tools, tool_choice={"type": "custom", "name": "count"},
        max_output_tokens=300, store=False,
    )  # fmt: skip
    (call,) = [item for item in called.output if item.type == "custom_tool_call"]
    assert re.fullmatch("[0-9]{1,3}", call.input)  # type: ignore[union-attr]
    kept = client.responses.create(
        model=MODEL, input="Hi", max_output_tokens=4, store=False, prompt_cache_retention="in_memory",
        extra_body={"context_management": [{"type": "compaction", "compact_threshold": 1000}]},
    )  # fmt: skip
    assert kept.prompt_cache_retention == "in_memory"


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"n": 2, "temperature": 0, "logit_bias": {"999999": 1}}, "logit_bias"),
        ({"extra_body": {"min_tokens": -1}}, "min_tokens"),
        ({"extra_body": {"thinking_token_budget": -2}}, "thinking_token_budget"),
        ({"extra_body": {"grammar": "root ::= missing"}}, "grammar"),
    ],
)
def test_refusals_are_the_documents_error(client: openai.OpenAI, fields: dict[str, Any], param: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        chat(client, **fields)
    assert str(caught.value.body["param"]).startswith(param), caught.value.body  # type: ignore[index]
