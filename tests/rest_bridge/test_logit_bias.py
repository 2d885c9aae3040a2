"""logit_bias and bad_words end to end: the openai client, the bridge, the service and the engine's biased lane."""

from __future__ import annotations

import grpc
import openai
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.api.logit_bias import MAX_BAD_WORDS, MAX_LOGIT_BIAS
from ovserve.service.workers.codec import TokenCodec
from tests.conftest import TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rest_bridge.test_disconnect import engine_stats, open_stream, wait_idle

MODEL = "tiny-chat"
STORY = [{"role": "user", "content": "Tell me a short story."}]
CODEC = TokenCodec(TINY_CHAT)


def chat(client: openai.OpenAI, max_tokens: int = 16, **extra: object) -> openai.types.chat.ChatCompletion:
    """A greedy chat answer to STORY (``extra`` in extra_body)."""
    return client.chat.completions.create(
        model=MODEL, messages=STORY, temperature=0, max_tokens=max_tokens, extra_body=extra or None
    )


def ids(text: str) -> list[int]:
    """The text's tokens (a greedy answer tokenises back to the tokens it was written as)."""
    tokens = CODEC.encode(text, add_special_tokens=False)
    assert CODEC.decode_windows([tokens], True)[0] == text
    return tokens


def test_plus_100_on_one_token_makes_the_answer_that_token_repeated(client: openai.OpenAI) -> None:
    (token,) = CODEC.encode(" Paris", add_special_tokens=False)[:1]
    forced = chat(client, max_tokens=6, logit_bias={str(token): 100})
    assert forced.choices[0].message.content == CODEC.decode_windows([[token] * 6], True)[0]
    assert forced.choices[0].finish_reason == "length" and forced.usage.completion_tokens == 6
    completion = client.completions.create(
        model=MODEL, prompt="Once", max_tokens=5, temperature=0, logit_bias={str(token): 100}
    )
    assert completion.choices[0].text == CODEC.decode_windows([[token] * 5], True)[0]


def test_minus_100_on_the_greedy_answers_first_token_bans_it(client: openai.OpenAI) -> None:
    greedy = chat(client).choices[0].message.content
    first = ids(greedy)[0]
    banned = chat(client, logit_bias={str(first): -100}).choices[0].message.content
    assert banned != greedy and first not in ids(banned)
    streamed = client.chat.completions.create(
        model=MODEL, messages=STORY, temperature=0, max_tokens=16, stream=True, logit_bias={str(first): -100}
    )
    assert "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices) == banned


def test_bad_words_keep_a_word_out_of_a_greedy_answer_that_had_it(client: openai.OpenAI) -> None:
    greedy = chat(client, max_tokens=24).choices[0].message.content
    word = max((word for word in greedy.split()[1:] if word.isalpha()), key=len)  # one written mid-sentence
    kept_out = chat(client, max_tokens=24, bad_words=[word]).choices[0].message.content
    assert f" {word}" in f" {greedy}" and f" {word}" not in f" {kept_out}"


def test_an_empty_bias_stays_on_the_pipeline_and_n_greedy_choices_agree(client: openai.OpenAI) -> None:
    greedy = chat(client).choices[0].message.content
    assert chat(client, logit_bias={}).choices[0].message.content == greedy
    token = ids(greedy)[0]
    two = client.chat.completions.create(
        model=MODEL, messages=STORY, temperature=0, max_tokens=16, n=2, logit_bias={str(token): -100}
    )
    assert len(two.choices) == 2 and two.choices[0].message.content == two.choices[1].message.content
    sampled = client.chat.completions.create(
        model=MODEL, messages=STORY, max_tokens=16, n=3, seed=7, logit_bias={str(token): -100}
    )
    assert sorted(choice.index for choice in sampled.choices) == [0, 1, 2]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"logit_bias": {"1": 101}}, "logit_bias"),
        ({"logit_bias": {"999999": 1}}, "logit_bias"),
        ({"logit_bias": {"x": 1}}, "logit_bias"),
        ({"logit_bias": {str(i): 1 for i in range(MAX_LOGIT_BIAS + 1)}}, "logit_bias"),
        ({"bad_words": ["w"] * (MAX_BAD_WORDS + 1)}, "bad_words"),
        ({"bad_words": [" "]}, "bad_words"),
        ({"bad_words": ["w" * 101]}, "bad_words"),
        ({"logit_bias": {"1": 5}, "response_format": {"type": "json_object"}}, "logit_bias"),
        ({"bad_words": ["the"], "guided_regex": "[a-z]+"}, "bad_words"),
    ],
)
def test_bounds_and_unserved_combinations_are_400_naming_the_field(
    bridge: RunningBridge, body: dict[str, object], param: str
) -> None:
    reply = http_request(
        bridge.port, "POST", "/v3/chat/completions", {"model": MODEL, "messages": STORY, "max_tokens": 4, **body}
    )
    assert reply.status == 400, reply.body
    assert reply.json()["error"]["param"].startswith(param), reply.json()


def test_beam_search_with_a_bias_is_refused_on_completions(bridge: RunningBridge) -> None:
    body = {"model": MODEL, "prompt": "Once", "max_tokens": 4, "best_of": 2, "temperature": 0, "logit_bias": {"1": 1}}
    reply = http_request(bridge.port, "POST", "/v3/completions", body)
    assert reply.status == 400 and reply.json()["error"]["param"] == "logit_bias"
    assert "beam search" in reply.json()["error"]["message"]


def test_grpc_takes_the_field_and_refuses_bad_bounds_with_bad_request_details(bridge: RunningBridge) -> None:
    with grpc.insecure_channel(bridge.server.target) as channel:
        stub = chat_pb2_grpc.ChatServiceStub(channel)
        request = chat_pb2.CreateChatCompletionRequest(model=MODEL, max_tokens=3, temperature=0)
        request.messages.add(role="user", content="Hi")
        request.logit_bias["5"] = 100.0
        reply = stub.CreateChatCompletion(request)
        assert reply.choices[0].message.content == CODEC.decode_windows([[5] * 3], True)[0]
        request.logit_bias["5"] = -250.0
        with pytest.raises(grpc.RpcError) as refused:
            stub.CreateChatCompletion(request)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "logit_bias['5']" in (refused.value.details() or "")


def test_a_biased_stream_dropped_mid_way_frees_the_lane(bridge: RunningBridge) -> None:
    body = {
        "model": MODEL, "messages": STORY, "max_tokens": 1500, "ignore_eos": True, "temperature": 0,
        "stream": True, "logit_bias": {"5": -100},
    }  # fmt: skip
    sockets = [open_stream(bridge.port, "/v3/chat/completions", body) for _ in range(3)]
    assert engine_stats(bridge).running == 3  # all three decode on the lane (1500 tokens each)
    for sock in sockets:
        sock.close()
    assert wait_idle(bridge).idle
    again = http_request(bridge.port, "POST", "/v3/chat/completions", {**body, "stream": False, "max_tokens": 4})
    assert again.status == 200 and again.json()["usage"]["completion_tokens"] == 4


def test_alternatives_and_logprobs_come_with_a_biased_answer(client: openai.OpenAI) -> None:
    (token,) = CODEC.encode(" Paris", add_special_tokens=False)[:1]
    reply = client.chat.completions.create(
        model=MODEL, messages=STORY, temperature=0, max_tokens=4, logprobs=True, top_logprobs=3,
        logit_bias={str(token): 100},
    )  # fmt: skip
    content = reply.choices[0].logprobs.content
    assert len(content) == 4 and all(len(entry.top_logprobs) == 3 for entry in content)
    # the model's own distribution, before the bias: the forced token is usually not its most likely
    assert all(entry.logprob <= entry.top_logprobs[0].logprob + 1e-6 for entry in content)
