"""The engine's output path: detokenisation (tokenizers and openvino_genai agree) and per-request coalescing."""

from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path

import openvino_genai as ov_genai
import pytest

from service.engine import EngineError, FinishReason, SequenceDelta, Update
from service.engine.detokenizer import Pending, SequenceText, _openvino_decoder, detokenize_step, window_decoder
from service.engine.engine import _Mailbox

TEXTS = [
    "The capital of France is Paris.",
    "naïve café, 東京タワー and 😀🚀 emoji split across byte tokens",
    "<|im_start|>assistant\n<think>plan</think>answer<|im_end|>",
    "  leading spaces,\ttabs\nand newlines  ",
    '{"city": "Zürich", "n": [1, 2.5, -3e4]}',
]


@pytest.fixture(scope="module")
def tokenizer(tiny_chat_dir: Path) -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(tiny_chat_dir))


def _ids(tokenizer: ov_genai.Tokenizer, text: str) -> list[int]:
    return [int(t) for t in tokenizer.encode(text, add_special_tokens=False).input_ids.data[0]]


@pytest.mark.parametrize("skip", [True, False])
def test_tokenizers_decoder_matches_openvino_genai(tiny_chat_dir: Path, tokenizer, skip: bool) -> None:
    fast, reference = window_decoder(tiny_chat_dir), _openvino_decoder(tokenizer)
    windows = [_ids(tokenizer, text) for text in TEXTS]
    windows += [window[:cut] for window in windows for cut in (1, 3, len(window) // 2)]
    assert fast(windows, skip) == reference(windows, skip)


def _stream(decode, ids: list[int], rng: random.Random, skip: bool) -> str:
    """Feed ``ids`` in random pieces, as engine steps would, and join the text each step releases."""
    sequence, text, position = SequenceText(skip), "", 0
    while position < len(ids):
        step = rng.randint(1, 3)
        new = ids[position : position + step]
        position += step
        pending = Pending(sequence, new, final=position >= len(ids))
        detokenize_step(decode, [pending])
        text += pending.text
    return text


@pytest.mark.parametrize("fallback", [False, True], ids=["tokenizers", "openvino_genai"])
def test_streamed_text_equals_whole_decode(tiny_chat_dir: Path, tokenizer, tmp_path: Path, fallback: bool) -> None:
    model_dir = tiny_chat_dir
    if fallback:  # a model directory without tokenizer.json decodes with openvino_genai
        model_dir = tmp_path / "model"
        shutil.copytree(tiny_chat_dir, model_dir)
        (model_dir / "tokenizer.json").unlink()
    decode = window_decoder(model_dir)
    rng = random.Random(7)
    for text in TEXTS:
        ids = _ids(tokenizer, text)
        for skip in (True, False):
            whole = tokenizer.decode(ids, skip_special_tokens=skip)
            for _ in range(20):
                assert _stream(decode, ids, rng, skip) == whole


def test_incomplete_character_waits_for_its_last_byte(tiny_chat_dir: Path, tokenizer) -> None:
    ids = _ids(tokenizer, "😀")
    assert len(ids) > 1  # a byte-level token per byte (or pair) of the emoji
    sequence, decode = SequenceText(), window_decoder(tiny_chat_dir)
    first = Pending(sequence, ids[:1], final=False)
    detokenize_step(decode, [first])
    rest = Pending(sequence, ids[1:], final=False)
    detokenize_step(decode, [rest])
    assert (first.text, rest.text) == ("", "😀")


def _update(index: int, ids: list[int], text: str, reason: FinishReason | None = None, finished: bool = False):
    return Update([SequenceDelta(index, ids, text, [-0.5] * len(ids), reason)], finished=finished)


def test_mailbox_merges_what_the_reader_has_not_taken() -> None:
    async def scenario() -> list[Update]:
        mailbox, taken = _Mailbox(), []
        mailbox.put(_update(0, [1], "a"))
        mailbox.put(_update(0, [2, 3], "bc"))
        mailbox.put(Update([SequenceDelta(1, [9], "z")]))  # a second choice shows up
        taken.append(await mailbox.get())
        mailbox.put(_update(0, [4], "d", FinishReason.LENGTH, finished=True))
        taken.append(await mailbox.get())
        return taken

    first, last = asyncio.run(scenario())
    assert [(d.index, d.token_ids, d.text, len(d.logprobs)) for d in first.sequences] == [
        (0, [1, 2, 3], "abc", 3),
        (1, [9], "z", 0),
    ]
    assert not first.finished
    assert last.finished and last.sequences[0].finish_reason is FinishReason.LENGTH


def test_mailbox_hands_over_output_before_the_error_and_waits_when_empty() -> None:
    async def scenario() -> tuple[Update, str, bool]:
        mailbox = _Mailbox()
        waiter = asyncio.create_task(mailbox.get())
        await asyncio.sleep(0.01)
        waited = not waiter.done()
        mailbox.put(_update(0, [5], "x"))
        first = await waiter
        mailbox.put(_update(0, [6], "y"))
        mailbox.put(EngineError("engine step failed"))
        second = await mailbox.get()
        with pytest.raises(EngineError) as raised:
            await mailbox.get()
        assert second.sequences[0].text == "y"
        return first, str(raised.value), waited

    first, message, waited = asyncio.run(scenario())
    assert waited and first.sequences[0].token_ids == [5]
    assert message == "engine step failed"
