"""vLLM's ``min_tokens`` and ``stop_token_ids`` (issue 49) on tiny-chat, through the openai client (extra_body: they
are not OpenAI's) on chat, completions and Responses, unary and streamed; their bounds refused naming the field.

tiny-chat answers "Hello" greedily with "Hello! How can I help you today?" and ends its turn; ``min_tokens`` past
that length keeps it writing, and a ``stop_token_ids`` entry naming a token of that answer ends it there.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from tokenizers import Tokenizer

from tests.conftest import TINY_CHAT

MODEL = "tiny-chat"
HELLO = [{"role": "user", "content": "Hello"}]
PROMPT = "Once upon a time"


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(TINY_CHAT / "tokenizer.json"))


def chat(client: openai.OpenAI, **extra: Any) -> Any:
    return client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=40, temperature=0, extra_body=extra)  # type: ignore[call-overload]


def streamed_chat(client: openai.OpenAI, **extra: Any) -> tuple[str, str | None]:
    text, finish = "", None
    for chunk in client.chat.completions.create(  # type: ignore[call-overload]
        model=MODEL, messages=HELLO, max_tokens=40, temperature=0, stream=True, extra_body=extra
    ):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    return text, finish


def test_min_tokens_writes_past_the_end_of_turn(client: openai.OpenAI) -> None:
    plain = chat(client)
    assert plain.choices[0].finish_reason == "stop"
    least = plain.usage.completion_tokens + 8
    longer = chat(client, min_tokens=least)
    assert longer.usage.completion_tokens >= least
    assert longer.choices[0].message.content.startswith(plain.choices[0].message.content)
    assert streamed_chat(client, min_tokens=least)[0] == longer.choices[0].message.content
    completion = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=60, temperature=0)
    if completion.choices[0].finish_reason == "stop":  # tiny-chat ends its story: min_tokens goes past that end
        more = client.completions.create(
            model=MODEL, prompt=PROMPT, max_tokens=60, temperature=0,
            extra_body={"min_tokens": completion.usage.completion_tokens + 4},
        )  # fmt: skip
        assert more.usage.completion_tokens >= completion.usage.completion_tokens + 4
    # Over Responses too: a min_tokens of max_output_tokens writes all of them
    response = client.responses.create(
        model=MODEL, input="Hello", max_output_tokens=30, temperature=0, extra_body={"min_tokens": 30}
    )
    assert response.usage is not None and response.usage.output_tokens == 30


def test_stop_token_ids_end_the_output_at_that_token(client: openai.OpenAI, tokenizer: Tokenizer) -> None:
    plain = chat(client).choices[0].message.content
    assert "How" in plain
    how = tokenizer.token_to_id("How")
    assert how is not None
    stopped = chat(client, stop_token_ids=[how]).choices[0]
    # vLLM's behaviour: a stop token that is not a special token stays in the text
    assert stopped.message.content == plain[: plain.index("How") + len("How")]
    assert stopped.finish_reason == "stop"
    assert streamed_chat(client, stop_token_ids=[how]) == (stopped.message.content, "stop")
    # min_tokens holds a stop token id back as it holds the end of turn back
    held = chat(client, stop_token_ids=[how], min_tokens=6).choices[0].message.content
    assert held != stopped.message.content and len(held) > len(stopped.message.content)
    completion = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=30, temperature=0)
    text = completion.choices[0].text
    word = next(w for w in text.split() if tokenizer.token_to_id(w) is not None and w not in PROMPT)
    stop = {"stop_token_ids": [tokenizer.token_to_id(word)]}
    cut = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=30, temperature=0, extra_body=stop)
    assert cut.choices[0].text == text[: text.index(word) + len(word)]
    assert cut.choices[0].finish_reason == "stop"


@pytest.mark.parametrize(
    ("extra", "param", "message"),
    [
        ({"min_tokens": -1}, "min_tokens", "must be at least 0"),
        ({"min_tokens": 41}, "min_tokens", "must be at most max_tokens (40)"),
        ({"stop_token_ids": [10**6]}, "stop_token_ids[0]", "is not a token id of 'tiny-chat'"),
        ({"stop_token_ids": [1, -1]}, "stop_token_ids[1]", "is not a token id"),
        ({"stop_token_ids": list(range(65))}, "stop_token_ids", "at most 64 token ids"),
    ],
)
def test_bounds_are_refused_naming_the_field(
    client: openai.OpenAI, extra: dict[str, Any], param: str, message: str
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        chat(client, **extra)
    error = raised.value.body
    assert isinstance(error, dict) and error["param"] == param and message in error["message"], error
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=40, extra_body=extra)
    assert isinstance(raised.value.body, dict) and raised.value.body["param"] == param
