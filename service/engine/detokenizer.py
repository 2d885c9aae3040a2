"""Incremental detokenisation of every running sequence, once per step.

Decoding token by token is wrong (a multi-byte character can span tokens; some
tokenizers drop a word's leading space when it is decoded alone). So each
sequence keeps its ids and two offsets, as vLLM does: ``ids[prefix:read]`` is
text already sent; decoding ``ids[prefix:]`` and removing that prefix's text
gives the new text. Text ending in U+FFFD (an incomplete UTF-8 sequence) waits
for the next token, unless the sequence has ended.

The decoding itself is the Hugging Face ``tokenizers`` library's, from the
model's tokenizer.json, when there is one: its decode of a short window costs
under 1 us, while openvino_genai's Tokenizer.decode (an OpenVINO model run)
costs ~45 us a call even batched, which on the bundled tiny-chat was a fifth of
the engine process's time (measured with cProfile on EngineCore: 67 us of
decode against 230 us of step() per step at one stream). A model directory
without tokenizer.json falls back to openvino_genai's batched decode.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import openvino_genai as ov_genai

log = logging.getLogger(__name__)

REPLACEMENT_CHARACTER = "\ufffd"


@dataclass
class SequenceText:
    """Detokenisation state of one output sequence."""

    skip_special_tokens: bool = True
    ids: list[int] = field(default_factory=list)
    prefix_offset: int = 0
    read_offset: int = 0


@dataclass
class Pending:
    """One sequence's new tokens of this step, waiting for their text."""

    sequence: SequenceText
    new_ids: list[int]
    final: bool  # the sequence ended: flush whatever is held back
    text: str = ""


# Texts of token-id windows, decoded with or without special tokens.
WindowDecoder = Callable[[list[list[int]], bool], list[str]]


def window_decoder(model_dir: Path) -> WindowDecoder:
    """The fastest faithful decoder of ``model_dir``: tokenizer.json through ``tokenizers``, else openvino_genai."""
    path = model_dir / "tokenizer.json"
    if path.is_file():
        try:
            from tokenizers import Tokenizer

            return _hf_decoder(Tokenizer.from_file(str(path)))
        except Exception as error:  # a tokenizer.json this tokenizers release cannot read
            log.warning("%s: %s; detokenising with openvino_genai instead", path, error)
    # One thread and no core pinning: a decode is too small to share, and pinning contends with the engine.
    return _openvino_decoder(ov_genai.Tokenizer(str(model_dir), INFERENCE_NUM_THREADS=1, ENABLE_CPU_PINNING=False))


def _hf_decoder(tokenizer) -> WindowDecoder:  # type: ignore[no-untyped-def]
    def decode(windows: list[list[int]], skip_special_tokens: bool) -> list[str]:
        # One call per window: decode_batch would hand a few microseconds of work to a thread pool.
        return [tokenizer.decode(window, skip_special_tokens=skip_special_tokens) for window in windows]

    return decode


def _openvino_decoder(tokenizer: ov_genai.Tokenizer) -> WindowDecoder:
    def decode(windows: list[list[int]], skip_special_tokens: bool) -> list[str]:
        if skip_special_tokens:
            return list(tokenizer.decode(windows, skip_special_tokens=True))
        # A batched decode pads ragged windows with the pad token, which is
        # invisible only when special tokens are skipped: decode one by one.
        return [tokenizer.decode(window, skip_special_tokens=False) if window else "" for window in windows]

    return decode


def detokenize_step(decode: WindowDecoder, pending: Sequence[Pending]) -> None:
    """Fill in ``text`` of every pending item (one decoder call per skip_special_tokens setting)."""
    for skip in (True, False):
        group = [item for item in pending if item.sequence.skip_special_tokens is skip]
        if not group:
            continue
        windows: list[list[int]] = []
        for item in group:
            sequence = item.sequence
            sequence.ids += item.new_ids
            windows.append(sequence.ids[sequence.prefix_offset : sequence.read_offset])
            windows.append(sequence.ids[sequence.prefix_offset :])
        texts = decode(windows, skip)
        for position, item in enumerate(group):
            sent, full = texts[2 * position], texts[2 * position + 1]
            if full.endswith(REPLACEMENT_CHARACTER) and not item.final:
                continue  # the character is not complete yet
            item.text = full[len(sent) :]
            sequence = item.sequence
            sequence.prefix_offset, sequence.read_offset = sequence.read_offset, len(sequence.ids)
