"""Fill in the middle: the prompt a code model was trained on to write what goes between a prefix and a suffix.

A completion request with a ``suffix`` (OpenAI's legacy completions parameter) asks for the text that goes
between the prompt and the suffix. Code models learn that from prompts in "PSM" order: a prefix token, the
text before the gap, a suffix token, the text after it, a middle token, after which the model writes the gap
and ends its turn. Each family names the three tokens its own way; a model serves ``suffix`` when its
vocabulary holds one family's three (as llama.cpp's /infill finds them, by their text).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Each family's prefix, suffix and middle tokens, as its vocabulary spells them.
FIM_TOKENS: tuple[tuple[str, str, str], ...] = (
    ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),  # Qwen2.5-Coder, Qwen3-Coder, CodeGemma
    ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),  # StarCoder, StarCoder2, SantaCoder, Granite Code
    ("<fim-prefix>", "<fim-suffix>", "<fim-middle>"),  # the hyphenated spelling llama.cpp reads too
    # DeepSeek-Coder: its own names (begin, hole, end), the same order.
    ("<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"),  # noqa: RUF001
    ("▁<PRE>", "▁<SUF>", "▁<MID>"),  # Code Llama (SentencePiece pieces)
    ("<PRE>", "<SUF>", "<MID>"),  # Code Llama as some conversions store it
    ("<|code_prefix|>", "<|code_suffix|>", "<|code_middle|>"),  # GLM-4, CodeGeeX4
)


@dataclass(frozen=True)
class InfillTokens:
    """One model's fill-in-the-middle tokens, and the special tokens its tokenizer opens every text with."""

    prefix: int
    suffix: int
    middle: int
    names: tuple[str, str, str]
    lead: tuple[int, ...] = ()  # e.g. Code Llama's <s>: what encode(text, add_special_tokens=True) puts first

    def prompt(self, before: list[int], after: list[int]) -> list[int]:
        """The prompt that asks for what goes between ``before`` and ``after`` (token ids without specials)."""
        return [*self.lead, self.prefix, *before, self.suffix, *after, self.middle]


def find_infill_tokens(
    token_id: Callable[[str], int | None], encode: Callable[[str, bool], list[int]]
) -> InfillTokens | None:
    """The first family of FIM_TOKENS whose three tokens are all in the vocabulary (``token_id``: a token's
    text -> its id, or None), with the special tokens ``encode`` (text, add_special_tokens) opens a text
    with; None when the model has none."""
    for names in FIM_TOKENS:
        ids = [token_id(name) for name in names]
        if all(id_ is not None for id_ in ids):
            prefix, suffix, middle = (int(id_) for id_ in ids)  # type: ignore[arg-type]
            return InfillTokens(prefix, suffix, middle, names, leading_specials(encode))
    return None


def leading_specials(encode: Callable[[str, bool], list[int]]) -> tuple[int, ...]:
    """The ids ``encode`` (text, add_special_tokens) puts before a text's own when it adds special tokens
    (a beginning-of-sequence token, for the tokenizers that add one); trailing ones (an end of sequence)
    are left out: the model writes after the middle token."""
    sample = "a"
    plain, full = encode(sample, False), encode(sample, True)
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return tuple(full[:start])
    return ()
