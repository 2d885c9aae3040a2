"""TokenCodec: text <-> token ids for a model directory, on the fastest faithful tokenizer it has.

openvino_genai's Tokenizer runs the model's tokenizer and detokenizer as
OpenVINO models: ~45 us per decode call even batched, and an encode that took
~1 ms in the server beside a busy engine process (its inference is handed to
an executor thread that competes with the engine's threads; ~0.13 ms alone).
The Hugging Face ``tokenizers`` library, reading the model's tokenizer.json
(the tokenizer that openvino-tokenizers converted), decodes a short window in
~1 us and encodes in the calling thread (~0.3 ms in the same spot). The two
agree token for token (tests/service/engine/test_engine_output.py; 3,000 random texts
each on Qwen2.5-, Llama-3.2-shaped and the bundled tokenizer when measured),
except that a window of invalid UTF-8 decodes to U+FFFD where OpenVINO drops
the bytes. A model directory without tokenizer.json uses openvino_genai.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

import openvino_genai as ov_genai

from ovserve.service.parsing.suffixed_tags import unsuffixed

log = logging.getLogger(__name__)

# Past these sizes a call goes through tokenizers' batch functions, which release the GIL while they work (the
# single-text ones hold it: a 4 MiB encode held a server's event loop for 14 s); below, the batch call's thread
# pool costs more than the work.
GIL_FREE_CHARS = 64 * 1024
GIL_FREE_TOKENS = 16 * 1024
# A pair's text is kept to the model's length and this many tokens more before the pair is cut: the cut text
# tokenises as the whole one did up to there (a pre-tokenized word broken at the cut is far past what is read).
PAIR_MARGIN_TOKENS = 64


class TokenCodec:
    """Encode text and decode windows of token ids for one model directory.

    ``markup``: the markup a model's output parsers read and remove from what the user sees; a decode
    that skips special tokens still writes the special tokens found in it (``[TOOL_CALLS]`` in Mistral's
    tokenizer, ``<|python_tag|>`` in Llama 3's, gpt-oss's ``<|channel|>``). Every other special token (end
    of turn, padding) is skipped as before.
    """

    def __init__(self, model_dir: Path, markup: tuple[str, ...] = ()) -> None:
        self._fast: Any = None
        path = model_dir / "tokenizer.json"
        if path.is_file():
            try:
                from tokenizers import Tokenizer

                self._fast = Tokenizer.from_file(str(path))
            except Exception as error:  # a tokenizer.json this tokenizers release cannot read
                log.warning("%s: %s; using openvino_genai's tokenizer instead", path, error)
        # One thread and no core pinning: its OpenVINO runs are too small to
        # share out, and pinned threads contend with the engine's.
        self._openvino = (
            None
            if self._fast is not None
            else ov_genai.Tokenizer(str(model_dir), INFERENCE_NUM_THREADS=1, ENABLE_CPU_PINNING=False)
        )
        self._token_texts: dict[int, str] = {}  # token_texts' cache: at most one entry per vocabulary id
        special = self.special_tokens()
        # Hunyuan 4 checkpoints suffix their structural tokens (<tool_call:6124c78e>); the markup writes them plain.
        self._kept = {id_ for text, id_ in special.items() if any(unsuffixed(text) in piece for piece in markup)}
        self._skipped = set(special.values()) - self._kept

    def special_tokens(self) -> dict[str, int]:
        """The tokenizer's special tokens (those a decode that skips special tokens leaves out): text -> id.

        Empty for a model without tokenizer.json: its openvino_genai tokenizer does not say which they are.
        """
        if self._fast is None:
            return {}
        return {token.content: id_ for id_, token in self._fast.get_added_tokens_decoder().items() if token.special}

    @functools.cached_property
    def max_token_chars(self) -> int:
        """An upper bound on the characters one token stands for: its longest vocabulary entry.

        Byte-level and SentencePiece vocabularies write a token with at least as many
        characters as it decodes to, so a text of N characters is at least
        N / max_token_chars tokens (before normalisation; callers allow a margin).
        """
        vocab = self._fast.get_vocab(with_added_tokens=True) if self._fast is not None else self._openvino_vocab
        return max((len(token) for token in vocab), default=1) or 1

    def token_id(self, text: str) -> int | None:
        """The id of the vocabulary entry spelled ``text`` (an added token's content, or a piece as the
        vocabulary stores it), or None when there is none."""
        found = self._fast.token_to_id(text) if self._fast is not None else self._openvino_vocab.get(text)
        return None if found is None else int(found)

    @functools.cached_property
    def _openvino_vocab(self) -> dict[str, int]:
        """openvino_genai's vocabulary (text -> id), built once: each get_vocab() call builds all of it."""
        assert self._openvino is not None
        return dict(self._openvino.get_vocab())

    @property
    def backend(self) -> str:
        """ "tokenizers" or "openvino_genai"."""
        return "tokenizers" if self._fast is not None else "openvino_genai"

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """Token ids of ``text``."""
        if self._fast is not None:
            if len(text) > GIL_FREE_CHARS:  # encode_batch lets go of the GIL; encode holds it throughout
                return list(self._fast.encode_batch([text], add_special_tokens=add_special_tokens)[0].ids)
            return list(self._fast.encode(text, add_special_tokens=add_special_tokens).ids)
        assert self._openvino is not None
        ids = self._openvino.encode(text, add_special_tokens=add_special_tokens).input_ids.data[0]
        return [int(token) for token in ids]

    def encode_many(self, texts: list[str], *, add_special_tokens: bool) -> list[list[int]]:
        """Token ids of each text (one batch call, without the GIL and across cores, when there is much)."""
        if self._fast is not None and sum(map(len, texts)) > GIL_FREE_CHARS:
            return [list(done.ids) for done in self._fast.encode_batch(texts, add_special_tokens=add_special_tokens)]
        return [self.encode(text, add_special_tokens=add_special_tokens) for text in texts]

    def token_texts(self, token_ids: list[int]) -> list[str]:
        """Each token's own text (special tokens kept; a partial character shows as U+FFFD).

        A token's text does not depend on its neighbours, so each id is decoded once per codec and kept: a
        million-token prompt has a few thousand distinct ids, decoded in one batch call without the GIL."""
        known = self._token_texts
        new = list({token for token in token_ids if token not in known})
        if new:
            known.update(zip(new, self.decode_windows([[token] for token in new], False), strict=True))
        return [known[token] for token in token_ids]

    def count_pair(self, first: str, second: str) -> int:
        """Tokens of a text pair as a cross-encoder reads it, for a model without tokenizer.json (with it,
        ``encode_pairs`` gives the pair's very ids): each text with its special tokens."""
        return len(self.encode(first, add_special_tokens=True)) + len(self.encode(second, add_special_tokens=True))

    def encode_pairs(self, pairs: list[tuple[str, str]], max_length: int) -> tuple[list[list[int]], list[list[int]]]:
        """A cross-encoder's input for each (query, document) pair: token ids and token types, cut to
        ``max_length`` tokens longest text first (sentence-transformers' CrossEncoder). Needs tokenizer.json.

        Each distinct text is tokenised once (a query is shared by every pair of a rerank), and only as far as
        the model can read it: a 4 MiB query paired with 1,000 documents was tokenised whole 1,000 times.
        """
        if self._fast is None:
            raise ValueError("text pairs need the model's tokenizer.json")
        texts = list({text: None for pair in pairs for text in pair})
        keep = max_length + PAIR_MARGIN_TOKENS
        encoded = {text: self._head(text, keep) for text in texts}
        pairing = self._pairing(max_length)
        done = [
            pairing.post_process(encoded[first], encoded[second], add_special_tokens=True) for first, second in pairs
        ]
        return [list(item.ids) for item in done], [list(item.type_ids) for item in done]

    def _head(self, text: str, tokens: int) -> Any:
        """tokenizers' Encoding (no special tokens) of the text's first ``tokens`` tokens at least, or of all of it.

        A prefix of the text is tokenised, longer and longer until it gives that many: a token stands for at most
        ``max_token_chars`` characters besides the spaces around it, so the first try is usually the last. The
        prefix's last word may be cut, and tokenise otherwise than whole: the caller asks for a margin of tokens
        past what it reads.
        """
        assert self._fast is not None
        size = tokens * self.max_token_chars
        while True:
            head = text[:size]
            encoded = (
                self._fast.encode_batch([head], add_special_tokens=False)[0]  # lets go of the GIL
                if len(head) > GIL_FREE_CHARS
                else self._fast.encode(head, add_special_tokens=False)
            )
            if len(encoded) >= tokens or size >= len(text):
                # Cut to what was asked: a pair's post-processing copies every token it is given, per pair
                # (a query's 133 tokens where 74 are read cost a rerank of 200 documents 1.5 times as much).
                encoded.truncate(tokens)
                return encoded
            size *= 4

    @functools.cache  # noqa: B019 (one codec per model, kept for the server's life)
    def _pairing(self, max_length: int) -> Any:
        """A copy of the tokenizer that cuts pairs to ``max_length`` (truncation is a tokenizer's state)."""
        from tokenizers import Tokenizer

        pairing = Tokenizer.from_str(self._fast.to_str())
        pairing.no_padding()
        pairing.enable_truncation(max_length, strategy="longest_first")
        return pairing

    def decode_windows(self, windows: list[list[int]], skip_special_tokens: bool) -> list[str]:
        """The text of every window of token ids."""
        if self._fast is not None:
            if not (skip_special_tokens and self._kept) and sum(map(len, windows)) > GIL_FREE_TOKENS:
                return list(self._fast.decode_batch(windows, skip_special_tokens=skip_special_tokens))  # no GIL
            # One call per window: decode_batch would hand microseconds of work to a thread pool.
            if skip_special_tokens and self._kept:
                return [self._decode_keeping(window) for window in windows]
            return [self._fast.decode(window, skip_special_tokens=skip_special_tokens) for window in windows]
        assert self._openvino is not None
        if skip_special_tokens:
            return list(self._openvino.decode(windows, skip_special_tokens=True))
        # A batched decode pads ragged windows with the pad token, which is
        # invisible only when special tokens are skipped: decode one by one.
        return [self._openvino.decode(window, skip_special_tokens=False) if window else "" for window in windows]

    def _decode_keeping(self, window: list[int]) -> str:
        """A window's text without special tokens, except the kept ones."""
        if self._kept.isdisjoint(window):  # the common case: nothing kept here, a plain skipping decode
            return str(self._fast.decode(window, skip_special_tokens=True))
        return str(self._fast.decode([t for t in window if t not in self._skipped], skip_special_tokens=False))
