"""Incremental detokenisation of every running sequence, all at once at each hand-over.

Decoding token by token is wrong (a multi-byte character can span tokens; some
tokenizers drop a word's leading space when it is decoded alone). So each
sequence keeps its ids and two offsets, as vLLM does: ``ids[prefix:read]`` is
text already sent; decoding ``ids[prefix:]`` and removing that prefix's text
gives the new text. Text ending in U+FFFD (an incomplete UTF-8 sequence) waits
for the next token, unless the sequence has ended.

The decoding itself is TokenCodec's (codec.py): the ``tokenizers`` library on
the model's tokenizer.json, ~1 us a window, where openvino_genai's batched
decode cost ~45 us a call, a fifth of the engine process's time on the bundled
tiny-chat (cProfile on EngineCore: 67 us of decode against 230 us of step()
per step at one stream).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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
