"""Model output parsing: reasoning and tool calls split out of generated text, incrementally.

``OutputFormat`` (per model) makes a ``TurnParser`` (per turn); fed text
deltas, it hands back ``Piece``s (reasoning text, content text, tool call
started / arguments / finished) and, at the end, the whole ``ParsedTurn``.
"""

from service.parsing.formats import REASONING_PARSERS, TOOL_PARSERS, OutputFormat, parser_name_problem
from service.parsing.pieces import (
    ContentDelta,
    ParsedCall,
    ParsedTurn,
    Piece,
    ReasoningDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallStarted,
)
from service.parsing.turn import TurnParser

__all__ = [
    "REASONING_PARSERS",
    "TOOL_PARSERS",
    "ContentDelta",
    "OutputFormat",
    "ParsedCall",
    "ParsedTurn",
    "Piece",
    "ReasoningDelta",
    "ToolCallArguments",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnParser",
    "parser_name_problem",
]
