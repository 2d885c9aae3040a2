"""Assistant prefill (issue 49): vLLM's ``continue_final_message`` and ``add_generation_prompt`` on tiny-chat through
the openai client, unary and streamed, and the tokenize route rendering a prefill by the same rule.

The model continues the final assistant message; the answer begins with that text (llama.cpp's answer), and its
reasoning and tool calls are parsed from the prefill and the continuation together.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rest_bridge.test_tools_openai import SYSTEM, TOOLS

MODEL = "tiny-chat"
HELLO = {"role": "user", "content": "Hello"}
CONTINUE = {"continue_final_message": True}


def chat(client: openai.OpenAI, messages: list[dict[str, Any]], **fields: Any) -> Any:
    extra = {name: fields.pop(name) for name in ("continue_final_message", "add_generation_prompt") if name in fields}
    fields = {"temperature": 0, "max_tokens": 40, **fields}
    return client.chat.completions.create(model=MODEL, messages=messages, extra_body=extra, **fields)  # type: ignore[call-overload]


def streamed(client: openai.OpenAI, messages: list[dict[str, Any]], **extra: Any) -> tuple[str, str, str | None]:
    content, reasoning, finish = "", "", None
    for chunk in client.chat.completions.create(  # type: ignore[call-overload]
        model=MODEL, messages=messages, temperature=0, max_tokens=40, stream=True, extra_body=extra
    ):
        for choice in chunk.choices:
            content += choice.delta.content or ""
            reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
            finish = choice.finish_reason or finish
    return content, reasoning, finish


def test_the_model_continues_the_final_assistant_message_and_the_answer_begins_with_it(
    client: openai.OpenAI, bridge: RunningBridge
) -> None:
    prefilled = [HELLO, {"role": "assistant", "content": "Hello! How"}]
    continued = chat(client, prefilled, **CONTINUE).choices[0]
    assert continued.message.content.startswith("Hello! How") and continued.finish_reason == "stop"
    # the continuation is what the model writes after the prompt cut inside that message (tokenize renders it)
    body = {"model": MODEL, "messages": prefilled, **CONTINUE}
    ids = http_request(bridge.port, "POST", "/v3/tokenize", body).json()["tokens"]
    raw = client.completions.create(model=MODEL, prompt=ids, temperature=0, max_tokens=40).choices[0].text
    assert continued.message.content == "Hello! How" + raw and raw
    assert streamed(client, prefilled, **CONTINUE) == (continued.message.content, "", "stop")
    # a prefill steers the answer: a start the model would not write, continued, echoed first
    steered = chat(client, [HELLO, {"role": "assistant", "content": "Goodbye"}], **CONTINUE, n=2)
    assert [choice.message.content[: len("Goodbye")] for choice in steered.choices] == ["Goodbye", "Goodbye"]
    # without continue_final_message, a final assistant message is history: closed, and a new turn opened
    assert (
        chat(client, prefilled, max_tokens=1).usage.prompt_tokens
        > chat(client, prefilled, **CONTINUE, max_tokens=1).usage.prompt_tokens
    )


def test_a_prefilled_think_opens_the_reasoning_and_a_prefilled_tool_call_opens_a_call(client: openai.OpenAI) -> None:
    thinking = [HELLO, {"role": "assistant", "content": "<think>\nThe user greets me"}]
    reply = chat(client, thinking, **CONTINUE, max_tokens=60).choices[0].message
    reasoning = (reply.model_extra or {}).get("reasoning_content") or ""
    assert reasoning.startswith("The user greets me") and "<think>" not in (reply.content or "")
    content, streamed_reasoning, _ = streamed(client, thinking, **CONTINUE)
    assert streamed_reasoning.startswith("The user greets me") and "<think>" not in content

    ask = [SYSTEM, {"role": "user", "content": "What's the weather like in Paris?"}]
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    reply = chat(client, [*ask, {"role": "assistant", "content": call}], **CONTINUE, tools=TOOLS).choices[0]
    assert reply.finish_reason == "tool_calls" and reply.message.tool_calls, reply
    first = reply.message.tool_calls[0].function
    assert first.name == "get_weather" and json.loads(first.arguments) == {"city": "Paris"}
    assert "<tool_call>" not in (reply.message.content or "")


def test_add_generation_prompt_false_renders_no_assistant_opening(bridge: RunningBridge, client: openai.OpenAI) -> None:
    with_opening = chat(client, [HELLO], max_tokens=1).usage.prompt_tokens
    without = chat(client, [HELLO], max_tokens=1, add_generation_prompt=False).usage.prompt_tokens
    assert without < with_opening
    body = {"model": MODEL, "messages": [HELLO], "add_generation_prompt": False}
    assert http_request(bridge.port, "POST", "/v3/tokenize", body).json()["count"] == without


def test_tokenize_renders_a_prefill_as_chat_does(bridge: RunningBridge, client: openai.OpenAI) -> None:
    prefilled = [HELLO, {"role": "assistant", "content": "Hello! How"}]
    counted = chat(client, prefilled, **CONTINUE, max_tokens=1).usage.prompt_tokens
    body = {"model": MODEL, "messages": prefilled, "continue_final_message": True, "return_token_strs": True}
    reply = http_request(bridge.port, "POST", "/v3/tokenize", body).json()
    assert reply["count"] == counted and "".join(reply["token_strs"]).endswith("assistant\nHello! How")


@pytest.mark.parametrize(
    ("messages", "extra", "param", "message"),
    [
        ([HELLO], CONTINUE, "continue_final_message", "the last message must be the assistant's"),
        ([HELLO, {"role": "assistant", "content": "Hi"}], {**CONTINUE, "add_generation_prompt": True},
         "add_generation_prompt", "cannot be true with continue_final_message"),
        ([HELLO, {"role": "assistant", "content": "Hi"}], {**CONTINUE, "response_format": {"type": "json_object"}},
         "continue_final_message", "cannot be combined with an output constraint"),
    ],
)  # fmt: skip
def test_refusals_name_the_field(
    client: openai.OpenAI, bridge: RunningBridge, messages: Any, extra: dict[str, Any], param: str, message: str
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=MODEL, messages=messages, extra_body=extra)
    error = raised.value.body
    assert isinstance(error, dict) and error["param"] == param and message in error["message"], error
    if "response_format" not in extra:  # the tokenize route refuses by the same rule
        body = {"model": MODEL, "messages": messages, **extra}
        reply = http_request(bridge.port, "POST", "/v3/tokenize", body)
        assert reply.status == 400 and reply.json()["error"]["param"] == param
