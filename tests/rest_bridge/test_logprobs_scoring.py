"""Alternatives and prompt logprobs, end to end on tiny-chat, checked against a direct forward pass.

The reference is the model's IR compiled here with the OpenVINO runtime and run once over the whole sequence
(prompt and output): log-softmax of its logits at every position. The server's answers (chat top_logprobs,
completions logprobs with echo, max_tokens 0, Responses top_logprobs, vLLM's prompt_logprobs) must be the
reference's top-k by value, with its values, within VALUES (the server scores the same IR fed chunk by chunk,
and the CPU plugin keeps its KV cache in u8, so values drift with their magnitude: measured up to 2.5e-3 at -9.7
on tiny-chat), i.e. within 2e-3 + 1e-3 x |value|.
"""

from __future__ import annotations

import functools
import itertools
import json
from typing import Any

import numpy as np
import openai
import openvino as ov
import pytest
from tokenizers import Tokenizer

from ovserve.service.api import logprobs
from ovserve.service.models import BUNDLED_MODELS_DIR, BUNDLED_SPECULATIVE
from tests.conftest import REFERENCE_PROPERTIES
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge
from tests.rest_bridge.test_disconnect import CHAT_STREAM, engine_stats, open_stream, wait_idle

MODEL = "tiny-chat"
VALUES = 2e-3  # absolute tolerance on logprobs, plus RELATIVE of the value (see the module's docstring)
RELATIVE = 1e-3


def near(value: float) -> Any:
    """``value`` within the tolerance the scoring is held to."""
    return pytest.approx(value, abs=VALUES, rel=RELATIVE)


def slack(value: float) -> float:
    return VALUES + RELATIVE * abs(value)


STORY = "Once upon a time there was a little cat who"


@functools.cache
def _compiled() -> Any:
    # In f32, as the test server computes (tests/conftest.py's TEST_SETTINGS).
    return ov.Core().compile_model(str(BUNDLED_MODELS_DIR / MODEL / "openvino_model.xml"), "CPU", REFERENCE_PROPERTIES)


@functools.cache
def _tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(BUNDLED_MODELS_DIR / MODEL / "tokenizer.json"))


def text_of(token: int) -> str:
    return _tokenizer().decode([token], skip_special_tokens=False)


def reference(ids: list[int]) -> np.ndarray:
    """Row i: the log-distribution of token i+1 given tokens 0..i (one forward pass over the whole sequence)."""
    request = _compiled().create_infer_request()
    request.reset_state()
    count = len(ids)
    request.infer({
        "input_ids": np.array([ids], dtype=np.int64),
        "attention_mask": np.ones((1, count), dtype=np.int64),
        "position_ids": np.arange(count, dtype=np.int64)[np.newaxis],
        "beam_idx": np.zeros(1, dtype=np.int32),
    })  # fmt: skip
    logits = request.get_tensor("logits").data[0].astype(np.float64)
    peak = logits.max(axis=1, keepdims=True)
    return (logits - peak - np.log(np.exp(logits - peak).sum(axis=1, keepdims=True)))[:-1]


def assert_top(row: np.ndarray, got: list[tuple[str, float]], k: int) -> None:
    """``got`` is the row's k most likely tokens, most likely first, with their values (ties within VALUES may
    swap places)."""
    assert len(got) == k
    order = np.argsort(-row, kind="stable")
    for position, (text, value) in enumerate(got):
        assert value == near(row[order[position]])
        expected = row[order[position]]
        tied = [text_of(int(t)) for t in np.flatnonzero(np.abs(row - expected) <= 2 * slack(expected))]
        assert text in tied
    assert all(a >= b - slack(b) for (_, a), (_, b) in itertools.pairwise(got))


def tokenize(bridge: RunningBridge, **body: Any) -> list[int]:
    reply = http_request(bridge.port, "POST", "/v3/tokenize", {"model": MODEL, **body})
    assert reply.status == 200, reply.body
    return list(json.loads(reply.body)["tokens"])


def chat_ids(bridge: RunningBridge, messages: list[dict[str, Any]]) -> list[int]:
    return tokenize(bridge, messages=messages, add_generation_prompt=True)


def ids_of(entries: list[Any]) -> list[int]:
    """Token ids of logprobs entries, by their text (tiny-chat's token texts are unique, bar specials)."""
    vocabulary = {text_of(token): token for token in range(_tokenizer().get_vocab_size())}
    return [vocabulary[entry.token] for entry in entries]


ASK = [{"role": "user", "content": "Tell me a story about a cat."}]


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("sampling", [{"temperature": 0}, {"temperature": 1.0, "seed": 7}], ids=["greedy", "seeded"])
def test_chat_alternatives_are_the_models_top_k(
    client: openai.OpenAI, bridge: RunningBridge, stream: bool, sampling: dict[str, Any]
) -> None:
    fields: dict[str, Any] = {"model": MODEL, "messages": ASK, "max_tokens": 12, "logprobs": True,
                              "top_logprobs": 5, **sampling}  # fmt: skip
    if stream:
        chunks = [c for c in client.chat.completions.create(stream=True, **fields) if c.choices]
        entries = [e for c in chunks if c.choices[0].logprobs for e in c.choices[0].logprobs.content or []]
    else:
        logprobs = client.chat.completions.create(**fields).choices[0].logprobs
        assert logprobs is not None and logprobs.content
        entries = logprobs.content
    output = ids_of(entries)
    prompt = chat_ids(bridge, ASK)
    rows = reference(prompt + output)[len(prompt) - 1 :]
    for row, token, entry in zip(rows, output, entries, strict=True):
        assert entry.logprob == near(row[token])
        assert_top(row, [(top.token, top.logprob) for top in entry.top_logprobs], 5)


def test_chat_streamed_and_unary_alternatives_are_equal(client: openai.OpenAI) -> None:
    fields: dict[str, Any] = {"model": MODEL, "messages": ASK, "max_tokens": 16, "logprobs": True,
                              "top_logprobs": 20, "temperature": 0}  # fmt: skip
    unary = client.chat.completions.create(**fields).choices[0].logprobs
    chunks = [c for c in client.chat.completions.create(stream=True, **fields) if c.choices]
    streamed = [e for c in chunks if c.choices[0].logprobs for e in c.choices[0].logprobs.content or []]
    assert unary is not None and [e.model_dump() for e in unary.content or []] == [e.model_dump() for e in streamed]
    assert all(len(entry.top_logprobs) == 20 for entry in streamed)


def test_the_scored_chosen_logprob_agrees_with_the_samplers(client: openai.OpenAI) -> None:
    """The same seeded sample with top_logprobs 0 (the sampler's logprobs) and 3 (the scoring copy's)."""
    fields: dict[str, Any] = {"model": MODEL, "messages": ASK, "max_tokens": 24, "logprobs": True,
                              "temperature": 1.0, "seed": 3}  # fmt: skip
    sampler = client.chat.completions.create(top_logprobs=0, **fields).choices[0].logprobs
    scored = client.chat.completions.create(top_logprobs=3, **fields).choices[0].logprobs
    assert sampler is not None and scored is not None
    assert [e.token for e in sampler.content or []] == [e.token for e in scored.content or []]
    assert [e.logprob for e in scored.content or []] == pytest.approx(
        [e.logprob for e in sampler.content or []], abs=VALUES, rel=RELATIVE
    )


def test_n_choices_each_get_their_own_sequences_alternatives(client: openai.OpenAI, bridge: RunningBridge) -> None:
    reply = client.chat.completions.create(
        model=MODEL, messages=ASK, max_tokens=8, n=3, temperature=1.0, seed=5, logprobs=True, top_logprobs=2
    )
    prompt = chat_ids(bridge, ASK)
    assert len({choice.message.content for choice in reply.choices}) > 1  # the choices differ
    for choice in reply.choices:
        assert choice.logprobs is not None and choice.logprobs.content
        output = ids_of(choice.logprobs.content)
        rows = reference(prompt + output)[len(prompt) - 1 :]
        for row, token, entry in zip(rows, output, choice.logprobs.content, strict=True):
            assert entry.logprob == near(row[token])
            assert_top(row, [(top.token, top.logprob) for top in entry.top_logprobs], 2)


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_completions_echo_scores_the_prompt_then_the_output(client: openai.OpenAI, stream: bool) -> None:
    prompt = _tokenizer().encode(STORY).ids
    fields: dict[str, Any] = {"model": MODEL, "prompt": prompt, "max_tokens": 6, "temperature": 0, "echo": True,
                              "logprobs": 3}  # fmt: skip
    if stream:
        chunks = [c for c in client.completions.create(stream=True, **fields) if c.choices]
        text = "".join(c.choices[0].text for c in chunks)
        parts = [c.choices[0].logprobs for c in chunks if c.choices[0].logprobs]
        tokens = [t for p in parts for t in p.tokens or []]
        values = [v for p in parts for v in p.token_logprobs or []]
        tops = [t for p in parts for t in p.top_logprobs or []]
        offsets = [o for p in parts for o in p.text_offset or []]
    else:
        choice = client.completions.create(**fields).choices[0]
        assert choice.logprobs is not None
        text, tokens = choice.text, list(choice.logprobs.tokens or [])
        values, tops = list(choice.logprobs.token_logprobs or []), list(choice.logprobs.top_logprobs or [])
        offsets = list(choice.logprobs.text_offset or [])
    assert text.startswith(_tokenizer().decode(prompt, skip_special_tokens=False))
    assert tokens[: len(prompt)] == [text_of(t) for t in prompt]
    vocabulary = {text_of(token): token for token in range(_tokenizer().get_vocab_size())}
    sequence = [vocabulary[token] for token in tokens]
    rows = reference(sequence)
    assert values[0] is None and tops[0] in ({}, None)  # the first prompt token has nothing before it
    for position in range(1, len(sequence)):
        row = rows[position - 1]
        assert values[position] == near(row[sequence[position]])
        best = sorted(tops[position].items(), key=lambda item: -item[1])
        # The 3 most likely, and the chosen token besides when it is not one of them (OpenAI's logprobs+1).
        chosen = text_of(sequence[position])
        assert chosen in dict(best) and len(best) in (3, 4)
        alternatives = best if len(best) == 3 else [(t, v) for t, v in best if t != chosen]
        assert_top(row, alternatives, 3)
    assert offsets == sorted(offsets) and offsets[0] == 0


def test_max_tokens_0_with_echo_scores_the_prompt_alone(client: openai.OpenAI) -> None:
    prompt = _tokenizer().encode(STORY).ids
    reply = client.completions.create(
        model=MODEL, prompt=[prompt, prompt[:5]], max_tokens=0, echo=True, logprobs=1, temperature=0
    )
    assert [c.finish_reason for c in reply.choices] == ["length", "length"]
    assert reply.usage is not None and reply.usage.completion_tokens == 0
    for choice, ids in zip(reply.choices, [prompt, prompt[:5]], strict=True):
        assert choice.logprobs is not None
        assert choice.logprobs.tokens == [text_of(t) for t in ids]
        rows = reference(ids)
        values = choice.logprobs.token_logprobs or []
        assert values[0] is None
        assert values[1:] == pytest.approx([rows[i - 1][ids[i]] for i in range(1, len(ids))], abs=VALUES, rel=RELATIVE)


def test_prompt_logprobs_give_ranks_and_alternatives(bridge: RunningBridge) -> None:
    prompt = _tokenizer().encode(STORY).ids
    body = {"model": MODEL, "prompt": prompt, "max_tokens": 2, "prompt_logprobs": 4, "temperature": 0}
    reply = http_request(bridge.port, "POST", "/v3/completions", body)
    assert reply.status == 200, reply.body
    entries = json.loads(reply.body)["choices"][0]["prompt_logprobs"]
    assert len(entries) == len(prompt) and entries[0] is None
    rows = reference(prompt)
    for position in range(1, len(prompt)):
        row, token, entry = rows[position - 1], prompt[position], entries[position]
        own = entry[str(token)]
        assert own["logprob"] == near(row[token])
        # its rank: 1 + the tokens more likely (within VALUES of it, either way)
        margin = slack(row[token])
        assert 1 + (row > row[token] + margin).sum() <= own["rank"] <= 1 + (row > row[token] - margin).sum()
        assert own["decoded_token"] == text_of(token)
        # the prompt's token and the 4 most likely: 4 entries of rank 1-4 (the prompt's token among them or not)
        ranked = sorted((v["rank"], v["decoded_token"], v["logprob"]) for v in entry.values())
        assert len(entry) == (4 if own["rank"] <= 4 else 5)
        assert_top(row, [(text, value) for rank, text, value in ranked if rank <= 4], 4)


def test_chat_prompt_logprobs_unary_and_streamed(bridge: RunningBridge) -> None:
    body = {"model": MODEL, "messages": ASK, "max_tokens": 3, "prompt_logprobs": 0, "temperature": 0}
    unary = json.loads(http_request(bridge.port, "POST", "/v3/chat/completions", body).body)["prompt_logprobs"]
    reply = http_request(bridge.port, "POST", "/v3/chat/completions", {**body, "stream": True})
    chunks = [json.loads(line[6:]) for line in reply.body.decode().splitlines() if line.startswith("data: {")]
    streamed = [chunk["prompt_logprobs"] for chunk in chunks if chunk.get("prompt_logprobs")]
    assert streamed == [unary]  # on one chunk only
    prompt = chat_ids(bridge, ASK)
    rows = reference(prompt)
    assert len(unary) == len(prompt) and unary[0] is None
    for position in range(1, len(prompt)):
        (only,) = unary[position].values()  # prompt_logprobs 0: the prompt's own token alone
        assert only["logprob"] == near(rows[position - 1][prompt[position]])


def test_responses_top_logprobs_are_the_models_top_k(client: openai.OpenAI, bridge: RunningBridge) -> None:
    fields: dict[str, Any] = {"model": MODEL, "input": "Tell me a story about a cat.", "max_output_tokens": 8,
                              "top_logprobs": 4, "temperature": 0, "store": False}  # fmt: skip
    unary = client.responses.create(**fields)
    part = unary.output[0].content[0]  # type: ignore[union-attr]
    entries = part.logprobs  # type: ignore[union-attr]
    assert entries
    events = list(client.responses.create(stream=True, **fields))
    streamed = [e for event in events if event.type == "response.output_text.delta" for e in event.logprobs]
    assert [e.model_dump() for e in streamed] == [e.model_dump() for e in entries]
    prompt = chat_ids(bridge, ASK)
    output = ids_of(entries)
    rows = reference(prompt + output)[len(prompt) - 1 :]
    for row, entry in zip(rows, entries, strict=True):
        assert_top(row, [(top.token, top.logprob) for top in entry.top_logprobs], 4)


def test_a_vision_model_refuses_alternatives_naming_the_field() -> None:
    from ovserve.service.models import BUNDLED_VISION, ModelSpec

    spec = ModelSpec(BUNDLED_VISION, BUNDLED_MODELS_DIR / BUNDLED_VISION)
    with served_with_bridge([spec]) as running:
        body = {"model": BUNDLED_VISION, "messages": ASK, "max_tokens": 2, "logprobs": True, "top_logprobs": 2}
        reply = http_request(running.port, "POST", "/v3/chat/completions", body)
        assert reply.status == 400
        assert json.loads(reply.body)["error"]["param"] == "top_logprobs"
        chosen = http_request(running.port, "POST", "/v3/chat/completions", {**body, "top_logprobs": 0})
        assert chosen.status == 200, chosen.body


def test_dropped_scored_streams_leave_the_engine_and_its_scorer_idle(bridge: RunningBridge) -> None:
    """Clients that leave mid-stream: their scoring is dropped with their requests (stats.scoring back to 0)."""
    body = {**CHAT_STREAM, "logprobs": True, "top_logprobs": 5, "prompt_logprobs": 3}
    sockets = [open_stream(bridge.port, "/v3/chat/completions", body) for _ in range(4)]
    assert not engine_stats(bridge).idle
    for sock in sockets:
        sock.close()
    stats = wait_idle(bridge)
    assert stats.idle and stats.scoring == 0, stats


def test_a_prompt_too_long_to_score_is_refused_naming_its_field(
    bridge: RunningBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logprobs, "MAX_REQUEST_SCORES", 60)  # 10 prompt tokens at 5 alternatives each
    prompt = _tokenizer().encode(STORY).ids
    assert len(prompt) > 10
    for body, field in [
        ({"prompt": prompt, "prompt_logprobs": 5}, "prompt"),
        ({"prompts": [prompt[:5], prompt], "echo": True, "logprobs": 5}, "prompt"),
    ]:
        body = {"model": MODEL, "max_tokens": 2, **body}
        if "prompts" in body:  # the bridge's form of a batch: a list of token lists
            body["prompt"] = body.pop("prompts")
        reply = http_request(bridge.port, "POST", "/v3/completions", body)
        assert reply.status == 400, reply.body
        error = json.loads(reply.body)["error"]
        assert error["param"].startswith(field) and "at most 10 tokens" in error["message"]
    short = {"model": MODEL, "max_tokens": 2, "prompt": prompt[:10], "prompt_logprobs": 5}
    assert http_request(bridge.port, "POST", "/v3/completions", short).status == 200


def test_a_speculative_models_alternatives_are_its_main_models(client: openai.OpenAI, bridge: RunningBridge) -> None:
    """tiny-chat-speculative hands over several tokens a step (its draft's); they are scored by the main model."""
    reply = client.chat.completions.create(
        model=BUNDLED_SPECULATIVE, messages=ASK, max_tokens=12, logprobs=True, top_logprobs=3, temperature=0
    )
    logprobs_ = reply.choices[0].logprobs
    assert logprobs_ is not None and logprobs_.content
    prompt = chat_ids(bridge, ASK)
    output = ids_of(logprobs_.content)
    rows = reference(prompt + output)[len(prompt) - 1 :]
    for row, token, entry in zip(rows, output, logprobs_.content, strict=True):
        assert entry.logprob == near(row[token])
        assert_top(row, [(top.token, top.logprob) for top in entry.top_logprobs], 3)
