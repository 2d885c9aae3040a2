"""Byte-level BPE tokenizer for the bundled models, trained locally.

Layout follows Qwen2: a regex split then byte-level encoding (so any UTF-8 input
is encodable and decoding is lossless), no BOS, ChatML control tokens. Control
and tag tokens are appended after the learned vocabulary as *added tokens* so
each is always a single id:

* special (dropped by ``skip_special_tokens``): ``<|endoftext|>``,
  ``<|im_start|>``, ``<|im_end|>``;
* not special (kept in decoded text, so tool-call and reasoning parsers can see
  them, as in Qwen): ``<tool_call>``, ``</tool_call>``, ``<think>``,
  ``</think>``, ``<tool_response>``, ``</tool_response>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TAG_TOKENS = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>", "</tool_response>"]
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
# Letter runs, digit runs, punctuation runs and whitespace runs, each its own
# pre-token (see train_tokenizer for why spaces are not glued to words).
PRE_TOKENIZER_PATTERN = r"\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+|\s+"


def train_tokenizer(texts: Iterable[str], vocab_size: int, chat_template: str) -> Any:
    """Train the BPE model on ``texts`` and wrap it as a transformers fast
    tokenizer (what optimum-intel and openvino-tokenizers convert from).

    ``vocab_size`` counts the added tokens too, so the embedding matrix has
    exactly that many rows.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    markers = SPECIAL_TOKENS + TAG_TOKENS

    def strip_markers(stream: Iterable[str]) -> Iterable[str]:
        # The markers become added tokens below; keep them out of BPE training
        # so no merges are wasted on fragments such as "<tool".
        for text in stream:
            for marker in markers:
                text = text.replace(marker, "\n")
            yield text

    tok = Tokenizer(models.BPE())
    # Words never carry their leading space (unlike GPT-2's " Paris"): a
    # value in the user's text and the same value inside JSON ('"Paris"') are
    # then the same token, which a 2-layer model can copy with plain
    # attention. A separate space token per word is the price.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRE_TOKENIZER_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(markers),
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(strip_markers(texts), trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAG_TOKENS])

    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
    )
    hf.chat_template = chat_template
    return hf


def save_tokenizer(hf_tokenizer: Any, out_dir: Path) -> None:
    """Write tokenizer.json / tokenizer_config.json / chat_template.jinja."""
    out_dir.mkdir(parents=True, exist_ok=True)
    hf_tokenizer.save_pretrained(str(out_dir))


def pad_vocabulary(spec: dict[str, Any], vocab_size: int, filler: str) -> dict[str, Any]:
    """A tokenizer.json ``spec`` (BPE or WordPiece) with filler tokens appended to its model's vocabulary until
    it has exactly ``vocab_size`` ids; ``filler`` is their name with ``{}`` for the id (``<|filler_{}|>``).

    The real-size models (real_size.py) use it to give a small bundled tokenizer a real model's vocabulary
    size. A filler has no merges and cannot be a whole word after pre-tokenisation (it contains punctuation),
    so encoding never produces one and real text is tokenised as before; fillers only make every id the
    embedding has decodable. The spec is changed in place and returned.
    """
    vocab: dict[str, int] = spec["model"]["vocab"]
    taken = set(vocab.values()) | {t["id"] for t in spec["added_tokens"]}
    used = len(taken)
    if taken != set(range(used)):
        raise ValueError("tokenizer ids are not contiguous from 0")
    if vocab_size < used:
        raise ValueError(f"vocab_size {vocab_size} is smaller than the tokenizer ({used} ids)")
    # The added tokens get their (same) ids in the model's vocabulary too, so it has no holes before the
    # fillers; they are still matched as added tokens first.
    for added in spec["added_tokens"]:
        vocab[added["content"]] = added["id"]
    for token_id in range(used, vocab_size):
        vocab[filler.format(token_id)] = token_id
    return spec
