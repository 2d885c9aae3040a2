"""The official openai client, sync and async, against the bridge: what a new user does first."""

from __future__ import annotations

import asyncio

import openai
import pytest

from tests.conftest import SERVED_BY_DEFAULT

MODEL = "tiny-chat"
STORY = [{"role": "user", "content": "Tell me a short story."}]


def test_chat_unary_has_openai_shape(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model=MODEL, messages=STORY, temperature=0, max_tokens=8)
    assert completion.id.startswith("chatcmpl-")
    assert completion.object == "chat.completion"
    assert completion.model == MODEL and isinstance(completion.created, int)
    assert completion.system_fingerprint is None
    (choice,) = completion.choices
    assert choice.index == 0 and choice.finish_reason == "length" and choice.logprobs is None
    assert choice.message.role == "assistant" and choice.message.content
    assert completion.usage is not None and completion.usage.completion_tokens == 8
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + 8


def test_chat_stream_role_first_finish_last_usage_chunk(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model=MODEL, messages=STORY, temperature=0, max_tokens=12, stream=True,
            stream_options={"include_usage": True},
        )
    )  # fmt: skip
    assert len({chunk.id for chunk in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    first = chunks[0].choices[0]
    assert first.delta.role == "assistant" and first.delta.content == "" and first.finish_reason is None
    content_chunks = chunks[:-1]
    assert [c.choices[0].finish_reason for c in content_chunks][-1] == "length"
    assert all(c.choices[0].finish_reason is None for c in content_chunks[:-1])
    assert all(c.usage is None for c in content_chunks)
    usage_chunk = chunks[-1]
    assert usage_chunk.choices == [] and usage_chunk.usage is not None
    assert usage_chunk.usage.completion_tokens == 12


def test_chat_stream_joins_to_unary(client: openai.OpenAI) -> None:
    unary = client.chat.completions.create(model=MODEL, messages=STORY, temperature=0, max_tokens=30)
    stream = client.chat.completions.create(model=MODEL, messages=STORY, temperature=0, max_tokens=30, stream=True)
    joined = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert joined == unary.choices[0].message.content


def test_chat_extra_body_reaches_the_service(client: openai.OpenAI) -> None:
    """OVMS/vLLM parameters go through extra_body: ignore_eos lets a greedy run reach max_tokens."""
    completion = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], temperature=0, max_tokens=40,
        extra_body={"ignore_eos": True, "top_k": 5, "repetition_penalty": 1.0, "include_stop_str_in_output": False},
    )  # fmt: skip
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None and completion.usage.completion_tokens == 40
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=MODEL, messages=STORY, extra_body={"top_k": 0})
    assert raised.value.param == "top_k"


def test_completions_unary_and_streamed(client: openai.OpenAI) -> None:
    fixed = {"model": MODEL, "prompt": "Once upon a time", "temperature": 0, "max_tokens": 16,
             "extra_body": {"ignore_eos": True}}  # fmt: skip
    unary = client.completions.create(**fixed)
    assert unary.object == "text_completion" and unary.id.startswith("cmpl-")
    assert unary.choices[0].finish_reason == "length" and unary.choices[0].logprobs is None
    assert unary.usage is not None and unary.usage.completion_tokens == 16
    chunks = list(client.completions.create(**fixed, stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == unary.choices[0].text
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 16
    assert [c.choices[0].finish_reason for c in chunks[:-1]][-1] == "length"


def test_completions_prompt_list_forms(client: openai.OpenAI) -> None:
    texts = client.completions.create(model=MODEL, prompt=["Once upon a time", "The cat"], temperature=0,
                                      max_tokens=4)  # fmt: skip
    assert sorted(c.index for c in texts.choices) == [0, 1]
    tokens = client.completions.create(model=MODEL, prompt=[[5, 6, 7], [8, 9]], temperature=0, max_tokens=4)
    assert sorted(c.index for c in tokens.choices) == [0, 1]
    one = client.completions.create(model=MODEL, prompt=[5, 6, 7], temperature=0, max_tokens=4)
    first = next(choice for choice in tokens.choices if choice.index == 0)
    assert [choice.text for choice in one.choices] == [first.text]  # a flat id list is one prompt


def test_completions_logprobs_legacy_format(client: openai.OpenAI) -> None:
    unary = client.completions.create(model=MODEL, prompt="Once upon a time", temperature=0, max_tokens=5, logprobs=1,
                                      extra_body={"ignore_eos": True})  # fmt: skip
    logprobs = unary.choices[0].logprobs
    assert logprobs is not None
    assert len(logprobs.tokens) == len(logprobs.token_logprobs) == len(logprobs.text_offset) == 5
    assert all(isinstance(top, dict) for top in logprobs.top_logprobs)
    # OpenAI counts text offsets from the prompt's start, echoed or not
    assert logprobs.text_offset[0] == len("Once upon a time") and logprobs.text_offset == sorted(logprobs.text_offset)
    assert all(logprob <= 0 for logprob in logprobs.token_logprobs)


def test_chat_logprobs(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model=MODEL, messages=STORY, temperature=0, max_tokens=5,
                                                logprobs=True)  # fmt: skip
    content = completion.choices[0].logprobs.content
    assert len(content) == 5
    assert all(entry.logprob <= 0 and entry.top_logprobs == [] for entry in content)


def test_models_list_and_retrieve(client: openai.OpenAI) -> None:
    listed = client.models.list()
    assert [model.id for model in listed.data] == SERVED_BY_DEFAULT
    model = client.models.retrieve(MODEL)
    assert model.id == MODEL and model.object == "model" and model.owned_by == "ovserve"
    with pytest.raises(openai.NotFoundError) as raised:
        client.models.retrieve("org/not-served")
    assert raised.value.code == "model_not_found"


def test_errors_are_the_right_classes_with_param(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=MODEL, messages=STORY, top_p=3)
    assert raised.value.param == "top_p" and raised.value.type == "invalid_request_error"
    assert raised.value.body["param"] == "top_p"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=MODEL, messages=STORY, stop=["ok", ""])
    assert raised.value.param == "stop"  # the service said stop_sequences[1]
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="gpt-4", messages=STORY)
    assert raised.value.param == "model" and raised.value.status_code == 404
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=MODEL, messages=STORY, extra_body={"frobnicate": 1})
    assert raised.value.param == "frobnicate"
    with pytest.raises(openai.BadRequestError) as raised:  # an error before the first event is a plain 400
        client.chat.completions.create(model=MODEL, messages=STORY, stream=True, temperature=-1)
    assert raised.value.param == "temperature"


def test_body_too_large_is_413(client: openai.OpenAI) -> None:
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x" * (11 * 1024 * 1024)}])
    assert raised.value.status_code == 413
    assert raised.value.code == "request_too_large"


def test_request_id_is_echoed(client: openai.OpenAI) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=STORY, max_tokens=2, extra_headers={"x-request-id": "trace-123"}
    )
    assert raw.headers["x-request-id"] == "trace-123"
    assert raw.parse().choices


def test_async_client_chat_completions_and_models(async_client: openai.AsyncOpenAI) -> None:
    async def scenario() -> tuple[str, str, str, list[str]]:
        async with async_client as opened:
            unary = await opened.chat.completions.create(model=MODEL, messages=STORY, temperature=0, max_tokens=20)
            stream = await opened.chat.completions.create(
                model=MODEL, messages=STORY, temperature=0, max_tokens=20, stream=True
            )
            joined = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
            completion = await opened.completions.create(model=MODEL, prompt="The cat", temperature=0, max_tokens=6)
            models = await opened.models.list()
            with pytest.raises(openai.BadRequestError) as raised:
                await opened.completions.create(model=MODEL, prompt="x", extra_body={"min_p": 2})
            assert raised.value.param == "min_p"
            ids = [model.id for model in models.data]
            return unary.choices[0].message.content or "", joined, completion.choices[0].text, ids

    unary, joined, text, ids = asyncio.run(scenario())
    assert unary and joined == unary
    assert text and ids == SERVED_BY_DEFAULT


def test_async_client_concurrent_streams(async_client: openai.AsyncOpenAI) -> None:
    """Eight concurrent greedy streams through one bridge all give the same text."""

    async def one(opened: openai.AsyncOpenAI) -> str:
        stream = await opened.chat.completions.create(
            model=MODEL, messages=STORY, temperature=0, max_tokens=24, stream=True
        )
        return "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])

    async def scenario() -> list[str]:
        async with async_client as opened:
            return await asyncio.gather(*(one(opened) for _ in range(8)))

    texts = asyncio.run(scenario())
    assert len(set(texts)) == 1 and texts[0]


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_n_choices_stream_one_choice_per_chunk(client: openai.OpenAI, api: str) -> None:
    """As OpenAI streams them: clients that read choices[0] of each chunk see every choice."""
    fields = {"model": MODEL, "n": 3, "temperature": 0.9, "seed": 5, "max_tokens": 12, "stream": True,
              "stream_options": {"include_usage": True}}  # fmt: skip
    if api == "chat":
        chunks = list(client.chat.completions.create(messages=STORY, **fields))
        unary = client.chat.completions.create(messages=STORY, **{**fields, "stream": False, "stream_options": None})
        texts = {c.index: c.message.content for c in unary.choices}
    else:
        chunks = list(client.completions.create(prompt="Once upon a time", **fields))
        unary = client.completions.create(
            prompt="Once upon a time", **{**fields, "stream": False, "stream_options": None}
        )
        texts = {c.index: c.text for c in unary.choices}
    *content, usage_chunk = chunks
    assert all(len(chunk.choices) == 1 for chunk in content)
    assert usage_chunk.choices == [] and usage_chunk.usage is not None
    assert unary.usage is not None and usage_chunk.usage.completion_tokens == unary.usage.completion_tokens
    assert all(chunk.usage is None for chunk in content)
    streamed: dict[int, str] = {}
    for chunk in content:
        (choice,) = chunk.choices
        piece = choice.delta.content if api == "chat" else choice.text
        streamed[choice.index] = streamed.get(choice.index, "") + (piece or "")
    assert streamed == texts and sorted(streamed) == [0, 1, 2]
    finished = [chunk.choices[0].index for chunk in content if chunk.choices[0].finish_reason]
    assert sorted(finished) == [0, 1, 2]


def test_n_at_default_settings_gives_n_sampled_choices(client: openai.OpenAI) -> None:
    """tiny-chat decodes greedily by default, but n > 1 with no temperature samples, as OpenAI's default does."""
    chat = client.chat.completions.create(model=MODEL, messages=STORY, n=3, max_tokens=16, seed=3)
    assert [choice.index for choice in chat.choices] == [0, 1, 2]
    assert len({choice.message.content for choice in chat.choices}) > 1  # sampled, not three greedy copies
    completion = client.completions.create(model=MODEL, prompt="Once upon a time", n=2, max_tokens=8, seed=3)
    assert len(completion.choices) == 2
    greedy = client.chat.completions.create(model=MODEL, messages=STORY, n=2, temperature=0, max_tokens=4)
    assert len({choice.message.content for choice in greedy.choices}) == 1  # greedy asked for: the same answer twice


@pytest.mark.parametrize("stream", [False, True])
def test_completions_logprobs_0_still_returns_the_chosen_tokens_logprobs(client: openai.OpenAI, stream: bool) -> None:
    """OpenAI's API always returns the sampled token's logprob; logprobs=0 asks for no alternatives beside it, so
    each position's top_logprobs holds the chosen token alone ("up to logprobs+1 elements")."""
    fields = {"model": MODEL, "prompt": "Once upon a time", "temperature": 0, "max_tokens": 5, "logprobs": 0,
              "extra_body": {"ignore_eos": True}}  # fmt: skip
    if stream:
        chunks = [c for c in client.completions.create(stream=True, **fields) if c.choices]
        parts = [c.choices[0].logprobs for c in chunks if c.choices[0].logprobs is not None]
        token_logprobs = [value for part in parts for value in part.token_logprobs or []]
        tops = [top for part in parts for top in part.top_logprobs or []]
        tokens = [token for part in parts for token in part.tokens or []]
    else:
        logprobs = client.completions.create(**fields).choices[0].logprobs
        assert logprobs is not None
        token_logprobs, tops = list(logprobs.token_logprobs or []), list(logprobs.top_logprobs or [])
        tokens = list(logprobs.tokens or [])
    assert len(token_logprobs) == 5 and all(value <= 0 for value in token_logprobs)
    assert tops == [{token: value} for token, value in zip(tokens, token_logprobs, strict=True)]  # the chosen alone
    with_one = client.completions.create(**{**fields, "logprobs": 1}).choices[0].logprobs
    # The same tokens (greedy); logprobs 1 is scored by the scoring copy of the model, 0 by the sampler: they
    # agree within 2e-3 (measured on tiny-chat: at most 7e-4, float32 logits summed in another order).
    assert with_one is not None and with_one.token_logprobs == pytest.approx(token_logprobs, abs=2e-3)
    assert all(len(top) == 1 for top in with_one.top_logprobs or [])
