"""What an output parser hands back: typed pieces as text streams in, and the whole turn at the end."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ReasoningDelta:
    """More of the model's reasoning (the text inside ``<think>...</think>``)."""

    text: str


@dataclass(frozen=True)
class ContentDelta:
    """More of the reply text, with reasoning and tool-call markup removed."""

    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """A tool call begins: its position in the turn, its id and the function's name (always before arguments)."""

    index: int
    id: str
    name: str


@dataclass(frozen=True)
class ToolCallArguments:
    """A fragment of call ``index``'s arguments; a call's fragments join into one JSON object text."""

    index: int
    fragment: str


@dataclass(frozen=True)
class ToolCallFinished:
    """Call ``index`` is complete: no more fragments follow."""

    index: int


Piece = ReasoningDelta | ContentDelta | ToolCallStarted | ToolCallArguments | ToolCallFinished


@dataclass
class ParsedCall:
    """One complete tool call: id ``call_<hex>``, function name and arguments as a JSON object text."""

    id: str
    name: str
    arguments: str


@dataclass
class ParsedTurn:
    """The whole assistant turn, as the pieces built it."""

    content: str = ""
    reasoning: str = ""
    calls: list[ParsedCall] = field(default_factory=list)
    in_reasoning: bool = False  # still inside the reasoning block when the text ended (cut off)

    def add(self, piece: Piece) -> None:
        """Fold one piece in."""
        if isinstance(piece, ContentDelta):
            self.content += piece.text
        elif isinstance(piece, ReasoningDelta):
            self.reasoning += piece.text
        elif isinstance(piece, ToolCallStarted):
            self.calls.append(ParsedCall(piece.id, piece.name, ""))
        elif isinstance(piece, ToolCallArguments):
            self.calls[piece.index].arguments += piece.fragment
