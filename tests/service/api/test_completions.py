"""CompletionService end to end on the real tiny-chat."""

from __future__ import annotations

import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import common_pb2, completion_pb2
from ovserve.service.api.logprobs import text_offsets
from tests.conftest import TINY_CHAT
from tests.rpc import parse

PROMPT = "Once upon a time"


def completion_request(streaming: bool = False, **fields: object) -> completion_pb2.CreateCompletionRequest:
    """A completions request for tiny-chat; fields as in OpenAI's JSON."""
    # ignore_eos: tiny-chat is a chat model and ends a raw completion after a few words.
    body = {"model": "tiny-chat", "prompt": PROMPT, "temperature": 0, "max_tokens": 24, "ignore_eos": True, **fields}
    message_class = completion_pb2.StreamCompletionRequest if streaming else completion_pb2.CreateCompletionRequest
    return parse(message_class, body)


def texts(chunks: list[completion_pb2.StreamCompletionResponse]) -> dict[int, str]:
    """Each choice's streamed text, joined."""
    out: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            out[choice.index] = out.get(choice.index, "") + choice.text
    return out


@pytest.fixture(scope="module")
def direct() -> ov_genai.LLMPipeline:
    """tiny-chat through openvino_genai alone."""
    return ov_genai.LLMPipeline(str(TINY_CHAT), "CPU")


def direct_greedy(pipeline: ov_genai.LLMPipeline, prompt: str, max_new_tokens: int) -> str:
    config = pipeline.get_generation_config()
    config.max_new_tokens, config.do_sample, config.apply_chat_template = max_new_tokens, False, False
    config.ignore_eos = True
    return pipeline.generate([prompt], config).texts[0]  # a list gives DecodedResults (a str gives a str)


def test_greedy_matches_openvino_genai_unary_and_streamed(completions, direct) -> None:
    expected = direct_greedy(direct, PROMPT, 24)
    unary = completions.CreateCompletion(completion_request())
    streamed = list(completions.StreamCompletion(completion_request(True)))
    assert unary.choices[0].text == expected
    assert texts(streamed) == {0: expected}
    assert unary.object == "text_completion" and unary.id.startswith("cmpl-")
    assert {c.id for c in streamed} == {streamed[0].id}


def test_prompt_forms_give_one_choice_per_prompt(completions, direct) -> None:
    tokenizer = direct.get_tokenizer()
    ids = [int(t) for t in tokenizer.encode(PROMPT, add_special_tokens=True).input_ids.data[0]]
    request = completion_request(
        prompt="", prompts=[{"text": PROMPT}, {"text": "The river"}, {"token_ids": {"ids": ids}}]
    )
    response = completions.CreateCompletion(request)
    assert [c.index for c in response.choices] == [0, 1, 2]
    assert response.choices[0].text == direct_greedy(direct, PROMPT, 24)
    assert response.choices[1].text == direct_greedy(direct, "The river", 24)
    assert response.choices[2].text == response.choices[0].text  # the same prompt as token ids
    assert response.usage.prompt_tokens == 2 * len(ids) + len(tokenizer.encode("The river").input_ids.data[0])


def test_batch_with_n_numbers_choices_prompt_major(completions) -> None:
    request = completion_request(prompt="", prompts=[{"text": PROMPT}, {"text": "The river"}], n=2,
                                 temperature=1.0, seed=5, max_tokens=8)  # fmt: skip
    response = completions.CreateCompletion(request)
    assert [c.index for c in response.choices] == [0, 1, 2, 3]
    streamed = list(completions.StreamCompletion(
        completion_request(True, prompt="", prompts=[{"text": PROMPT}, {"text": "The river"}], n=2,
                           temperature=1.0, seed=5, max_tokens=8)))  # fmt: skip
    assert texts(streamed) == {c.index: c.text for c in response.choices}


def test_echo_prepends_the_prompt(completions) -> None:
    plain = completions.CreateCompletion(completion_request()).choices[0].text
    echoed = completions.CreateCompletion(completion_request(echo=True)).choices[0].text
    assert echoed == PROMPT + plain
    streamed = list(completions.StreamCompletion(completion_request(True, echo=True)))
    assert streamed[0].choices[0].text == PROMPT
    assert texts(streamed)[0] == PROMPT + plain


def test_logprobs_one_per_token_with_offsets(completions) -> None:
    response = completions.CreateCompletion(completion_request(logprobs=1, max_tokens=12, ignore_eos=True))
    logprobs = response.choices[0].logprobs
    assert len(logprobs.tokens) == len(logprobs.token_logprobs) == len(logprobs.text_offset) == 12
    assert all(lp <= 0 for lp in logprobs.token_logprobs)
    assert [dict(t.logprobs) for t in logprobs.top_logprobs] == [
        {tok: lp} for tok, lp in zip(logprobs.tokens, logprobs.token_logprobs, strict=True)
    ]
    # from the prompt's start, as OpenAI counts them
    assert logprobs.text_offset[0] == len(PROMPT)
    assert_offsets(PROMPT + response.choices[0].text, list(logprobs.tokens), list(logprobs.text_offset))
    streamed = list(completions.StreamCompletion(completion_request(True, logprobs=1, max_tokens=12, ignore_eos=True)))
    assert [lp for c in streamed for ch in c.choices for lp in ch.logprobs.token_logprobs] == pytest.approx(
        list(logprobs.token_logprobs)
    )
    # streamed offsets go on across chunks: the same as the unary ones
    assert [o for c in streamed for ch in c.choices for o in ch.logprobs.text_offset] == list(logprobs.text_offset)


SPECIAL = {"<|im_end|>", "<|im_start|>", "<s>", "</s>"}  # tokens the text leaves out (skip_special_tokens)


def assert_offsets(text: str, tokens: list[str], offsets: list[int]) -> None:
    """Each token's text stands at its offset in ``text`` (the prompt, then the choice's text); a special token
    the text leaves out stands where the text goes on; the offsets never go back."""
    assert offsets == sorted(offsets) and len(offsets) == len(tokens)
    for token, offset in zip(tokens, offsets, strict=True):
        assert token in SPECIAL or text.startswith(token, offset), (token, offset, text)


def test_text_offsets_of_n_choices_streamed_and_of_an_echo(completions) -> None:
    fields = {"logprobs": 0, "max_tokens": 16, "ignore_eos": True, "n": 2, "temperature": 1, "seed": 4}
    two = completions.CreateCompletion(completion_request(**fields))
    for choice in two.choices:
        assert choice.logprobs.text_offset[0] == len(PROMPT)
        assert_offsets(PROMPT + choice.text, list(choice.logprobs.tokens), list(choice.logprobs.text_offset))
    streamed = list(completions.StreamCompletion(completion_request(True, **fields)))
    for index in (0, 1):
        parts = [ch for c in streamed for ch in c.choices if ch.index == index]
        offsets = [o for p in parts for o in p.logprobs.text_offset]
        tokens = [t for p in parts for t in p.logprobs.tokens]
        assert offsets[0] == len(PROMPT)  # and go on across chunks (when there are several)
        assert_offsets(PROMPT + "".join(p.text for p in parts), tokens, offsets)
    echoed = completions.CreateCompletion(completion_request(echo=True, logprobs=0, max_tokens=4, ignore_eos=True))
    logprobs = echoed.choices[0].logprobs  # the prompt's tokens from 0, then the output's from the prompt's end
    assert logprobs.text_offset[0] == 0
    assert_offsets(echoed.choices[0].text, list(logprobs.tokens), list(logprobs.text_offset))


def test_usage_chunk_and_finish_reasons(completions) -> None:
    chunks = list(completions.StreamCompletion(completion_request(True, stream_options={"include_usage": True})))
    assert not chunks[-1].choices and chunks[-1].usage.completion_tokens == 24
    assert chunks[-2].choices[-1].finish_reason == common_pb2.FINISH_REASON_LENGTH


def test_stop_string(completions, direct) -> None:
    full = direct_greedy(direct, PROMPT, 24)
    stop = full.split()[2]
    response = completions.CreateCompletion(completion_request(stop_sequences=[stop, "zzzz"]))
    assert stop not in response.choices[0].text
    assert full.startswith(response.choices[0].text)
    assert response.choices[0].finish_reason == common_pb2.FINISH_REASON_STOP


@pytest.mark.parametrize("stops", [["."], [".", "!"], [",", "a ", "."], ["e"]])
@pytest.mark.parametrize("include", [False, True])
def test_stop_strings_cut_at_the_first_one_unary_and_streamed_alike(
    completions, direct, stops: list[str], include: bool
) -> None:
    """One choice always (even when the very first token holds the stop string), cut exactly at the stop."""
    expected = direct_greedy(direct, PROMPT, 40)
    first = min((expected.find(stop), -len(stop), stop) for stop in stops if stop in expected)
    position, stop = first[0], first[2]
    cut = expected[:position] + (stop if include else "")
    fields = {"max_tokens": 40, "stop_sequences": stops, "include_stop_str_in_output": include}
    unary = completions.CreateCompletion(completion_request(**fields))
    streamed = list(completions.StreamCompletion(completion_request(True, **fields)))
    assert [choice.text for choice in unary.choices] == [cut]
    assert unary.choices[0].finish_reason == common_pb2.FINISH_REASON_STOP
    assert texts(streamed) == {0: cut}
    assert [c.finish_reason for chunk in streamed for c in chunk.choices if c.finish_reason] == [
        common_pb2.FINISH_REASON_STOP
    ]


def test_logprobs_zero_gives_the_chosen_token_alone(completions) -> None:
    """OpenAI's "up to logprobs+1 elements": with logprobs 0, each position's top_logprobs is the chosen token."""
    for streaming in (False, True):
        request = completion_request(streaming, logprobs=0, max_tokens=8)
        replies = list(completions.StreamCompletion(request)) if streaming else [completions.CreateCompletion(request)]
        parts = [choice.logprobs for reply in replies for choice in reply.choices]
        tokens = [token for part in parts for token in part.tokens]
        values = [value for part in parts for value in part.token_logprobs]
        tops = [dict(top.logprobs) for part in parts for top in part.top_logprobs]
        assert len(tokens) == 8 and tops == [{token: value} for token, value in zip(tokens, values, strict=True)]


def test_text_offsets_pass_over_left_out_tokens_and_held_back_text() -> None:
    # a special token the text drops stands where the text goes on; text held back from the chunk before is passed
    assert text_offsets([".", "<|im_end|>", "\n", "user"], ".\nuser") == [0, 1, 1, 2]
    assert text_offsets(["me", " "], "é me ") == [2, 4]
    assert text_offsets(["x"], "") == [0]
