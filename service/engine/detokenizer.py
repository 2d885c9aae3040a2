"""Incremental detokenisation of every running sequence in one batched decode call per step.

Decoding token by token is wrong (a multi-byte character can span tokens; some
tokenizers drop a word's leading space when it is decoded alone) and decoding
each sequence separately is slow (a TextStreamer write costs ~100 us, a batched
decode of 32 sequences ~40 us; benchmarks/step_loop.py). So each sequence keeps
its ids and two offsets, as vLLM does: ``ids[prefix:read]`` is text already
sent; decoding ``ids[prefix:]`` and removing that prefix's text gives the new
text. Text ending in U+FFFD (an incomplete UTF-8 sequence) waits for the next
token, unless the sequence has ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import openvino_genai as ov_genai

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


def detokenize_step(tokenizer: ov_genai.Tokenizer, pending: Sequence[Pending]) -> None:
    """Fill in ``text`` of every pending item with as few decode calls as possible (one per setting)."""
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
        if skip:
            texts = tokenizer.decode(windows, skip_special_tokens=True)
        else:
            # A batched decode pads ragged windows with the pad token, which is
            # invisible only when special tokens are skipped: decode one by one.
            texts = [tokenizer.decode(window, skip_special_tokens=False) if window else "" for window in windows]
        for position, item in enumerate(group):
            sent, full = texts[2 * position], texts[2 * position + 1]
            if full.endswith(REPLACEMENT_CHARACTER) and not item.final:
                continue  # the character is not complete yet
            item.text = full[len(sent) :]
            sequence = item.sequence
            sequence.prefix_offset, sequence.read_offset = sequence.read_offset, len(sequence.ids)
