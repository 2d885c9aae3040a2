"""Tokens and text: the codec's two backends agree, detokenisation streams exactly, steps coalesce per request."""

from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path

import openvino_genai as ov_genai
import pytest

from ovserve.service.engine import EngineError, FinishReason, SequenceDelta, Update
from ovserve.service.engine.detokenizer import Pending, SequenceText, detokenize_step
from ovserve.service.engine.generation import Mailbox as _Mailbox
from ovserve.service.workers.codec import TokenCodec

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


@pytest.fixture(scope="module")
def codecs(tiny_chat_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, TokenCodec]:
    """The model's codec, and one on a copy without tokenizer.json (openvino_genai's tokenizer)."""
    bare = tmp_path_factory.mktemp("model") / "tiny-chat"
    shutil.copytree(tiny_chat_dir, bare)
    (bare / "tokenizer.json").unlink()
    found = {"fast": TokenCodec(tiny_chat_dir), "openvino": TokenCodec(bare)}
    assert [codec.backend for codec in found.values()] == ["tokenizers", "openvino_genai"]
    return found


def _ids(tokenizer: ov_genai.Tokenizer, text: str) -> list[int]:
    return [int(t) for t in tokenizer.encode(text, add_special_tokens=False).input_ids.data[0]]


@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_both_codecs_encode_as_openvino_genai(codecs, tokenizer, add_special_tokens: bool) -> None:
    rng = random.Random(3)
    alphabet = "abc XYZ 09 .,;!?-_'\"\n\t<>|{}[]éü東京😀"
    texts = TEXTS + ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80))) for _ in range(300)]
    for text in texts:
        expected = [int(t) for t in tokenizer.encode(text, add_special_tokens=add_special_tokens).input_ids.data[0]]
        for codec in codecs.values():
            assert codec.encode(text, add_special_tokens=add_special_tokens) == expected, text


@pytest.mark.parametrize("skip", [True, False])
def test_both_codecs_decode_windows_alike(codecs, tokenizer, skip: bool) -> None:
    windows = [_ids(tokenizer, text) for text in TEXTS]
    windows += [window[:cut] for window in windows for cut in (1, 3, len(window) // 2)] + [[]]
    fast = codecs["fast"].decode_windows(windows, skip)
    assert fast == codecs["openvino"].decode_windows(windows, skip)
    assert fast[0] == tokenizer.decode(windows[0], skip_special_tokens=skip)


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


@pytest.mark.parametrize("backend", ["fast", "openvino"])
def test_streamed_text_equals_whole_decode(codecs, tokenizer, backend: str) -> None:
    decode = codecs[backend].decode_windows
    rng = random.Random(7)
    for text in TEXTS:
        ids = _ids(tokenizer, text)
        for skip in (True, False):
            whole = tokenizer.decode(ids, skip_special_tokens=skip)
            for _ in range(20):
                assert _stream(decode, ids, rng, skip) == whole


def test_incomplete_character_waits_for_its_last_byte(codecs, tokenizer) -> None:
    ids = _ids(tokenizer, "😀")
    assert len(ids) > 1  # a byte-level token per byte (or pair) of the emoji
    sequence, decode = SequenceText(), codecs["fast"].decode_windows
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


def test_a_skipping_decode_keeps_the_special_tokens_of_the_parsers_markup(tmp_path: Path, tiny_chat_dir: Path) -> None:
    """Mistral's ``[TOOL_CALLS]`` is a special token: skipped, the tool parser would never see the call."""
    from tokenizers import AddedToken, Tokenizer

    fast = Tokenizer.from_file(str(tiny_chat_dir / "tokenizer.json"))
    fast.add_special_tokens([AddedToken("[TOOL_CALLS]", special=True), AddedToken("[ARGS]", special=True)])
    fast.save(str(tmp_path / "tokenizer.json"))
    plain, keeping = TokenCodec(tmp_path), TokenCodec(tmp_path, ("[TOOL_CALLS]", "<other markup>"))
    ids = plain.encode('[TOOL_CALLS][{"name": "f"}]<|im_end|>[ARGS]', add_special_tokens=False)
    assert plain.decode_windows([ids], True) == ['[{"name": "f"}]']
    assert keeping.decode_windows([ids], True) == ['[TOOL_CALLS][{"name": "f"}]']  # end of turn, [ARGS] skipped
    assert keeping.decode_windows([ids], False) == plain.decode_windows([ids], False)
    assert keeping.decode_windows([ids[1:]], True) == plain.decode_windows([ids[1:]], True)


def test_a_skipping_decode_keeps_a_checkpoints_suffixed_markup_tokens(tmp_path: Path, tiny_chat_dir: Path) -> None:
    """Hunyuan 4 checkpoints suffix their structural special tokens (``<tool_call:6124c78e>``); the hy_v4 format's
    markup writes them plain, and its parser reads them unsuffixed: skipped, the call would never reach it."""
    from tokenizers import AddedToken, Tokenizer

    fast = Tokenizer.from_file(str(tiny_chat_dir / "tokenizer.json"))
    suffixed = ["<tool_call:6124c78e>", "</tool_call:6124c78e>", "<tool_calls:6124c78e>", "<other:6124c78e>"]
    fast.add_special_tokens([AddedToken(text, special=True) for text in suffixed])
    fast.save(str(tmp_path / "tokenizer.json"))
    keeping = TokenCodec(tmp_path, ("<tool_calls>", "<tool_call>", "</tool_call>"))
    ids = keeping.encode("".join(suffixed) + "<|im_end|>", add_special_tokens=False)
    assert keeping.decode_windows([ids], True) == ["".join(suffixed[:3])]  # <other:...> and the end skipped
