"""Incremental detokenisation: token ids in, printable text out, one sequence at a time."""

from __future__ import annotations

import openvino_genai as ov_genai


class IncrementalDetokenizer:
    """Turns a growing token sequence into text deltas.

    openvino_genai's TextStreamer keeps back text that is not final yet (a
    multi-byte character split across tokens, a word whose spacing depends on
    the next token) and releases it when the next tokens settle it.
    """

    def __init__(self, tokenizer: ov_genai.Tokenizer, *, skip_special_tokens: bool = True) -> None:
        self._pending: list[str] = []
        self._streamer = ov_genai.TextStreamer(tokenizer, self._collect, {"skip_special_tokens": skip_special_tokens})

    def _collect(self, text: str) -> ov_genai.StreamingStatus:
        self._pending.append(text)
        return ov_genai.StreamingStatus.RUNNING

    def push(self, token_ids: list[int]) -> str:
        """Add tokens; return the text that became printable."""
        if token_ids:
            self._streamer.write(token_ids)
        return self._drain()

    def finish(self) -> str:
        """Flush the text held back for the last tokens."""
        self._streamer.end()
        return self._drain()

    def _drain(self) -> str:
        text = "".join(self._pending)
        self._pending.clear()
        return text
