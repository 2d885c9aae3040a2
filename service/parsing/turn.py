"""One assistant turn's parser: reasoning first, then content and tool calls."""

from __future__ import annotations

from typing import Protocol

from ovserve.service.parsing.pieces import (
    ContentDelta,
    ParsedTurn,
    Piece,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallStarted,
)
from ovserve.service.parsing.reasoning import ThinkSplitter


class ToolParser(Protocol):
    """Content text in, content and tool-call pieces out (see ovserve.service.parsing.tools)."""

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta."""
        ...

    def finish(self) -> list[Piece]:
        """What is held back, at the end."""
        ...


class TurnParser:
    """Fed an assistant turn's text deltas, hands back typed pieces; ``result`` is the whole turn.

    ``feed`` may hold text back (a tag may be starting); ``finish`` releases
    it, and must be called once at the end. Pieces of the same text split
    any way join into the same ``result``.
    """

    def __init__(
        self, reasoning: ThinkSplitter | None = None, tools: ToolParser | None = None, max_calls: int | None = None
    ) -> None:
        self._reasoning = reasoning
        self._tools = tools
        self._max_calls = max_calls
        self.result = ParsedTurn()

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta of model output."""
        if not text:
            return []
        pieces: list[Piece] = []
        if self._reasoning is not None:
            pieces, text = self._reasoning.feed(text)  # type: ignore[assignment]
        return self._keep(pieces + self._content(text))

    def finish(self) -> list[Piece]:
        """Pieces for what is still held back; the output has ended."""
        pieces: list[Piece] = []
        if self._reasoning is not None:
            pieces, text = self._reasoning.finish()  # type: ignore[assignment]
            pieces += self._content(text)
            self.result.in_reasoning = self._reasoning.in_reasoning
        if self._tools is not None:
            pieces += self._tools.finish()
        return self._keep(pieces)

    def _content(self, text: str) -> list[Piece]:
        if self._tools is not None:
            return self._tools.feed(text)
        return [ContentDelta(text)] if text else []

    def _keep(self, pieces: list[Piece]) -> list[Piece]:
        """Drop calls beyond ``max_calls`` (parallel_tool_calls: false) and fold the rest into ``result``."""
        kept = []
        for piece in pieces:
            is_call = isinstance(piece, ToolCallStarted | ToolCallArguments | ToolCallFinished)
            if is_call and self._max_calls is not None and piece.index >= self._max_calls:  # type: ignore[union-attr]
                continue
            self.result.add(piece)
            kept.append(piece)
        return kept
