"""Model output parsing: reasoning and tool calls split out of generated text, incrementally.

``OutputFormat`` (per model) makes a ``TurnParser`` (per turn); fed text
deltas, it hands back ``Piece``s (reasoning text, content text, tool call
started / arguments / finished) and, at the end, the whole ``ParsedTurn``.
Each format also declares its markup as data (``CallMarkup``, ``ThinkMarkup``),
which the grammar of a forced tool call writes.
"""

from ovserve.service.parsing.formats import (
    REASONING_PARSERS,
    TOOL_PARSERS,
    OutputFormat,
    ToolFormat,
    parser_name_problem,
)
from ovserve.service.parsing.markup import CallMarkup, ThinkMarkup
from ovserve.service.parsing.pieces import (
    ContentDelta,
    ParsedCall,
    ParsedTurn,
    Piece,
    ReasoningDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallStarted,
)
from ovserve.service.parsing.turn import TurnParser

__all__ = [
    "REASONING_PARSERS",
    "TOOL_PARSERS",
    "CallMarkup",
    "ContentDelta",
    "OutputFormat",
    "ParsedCall",
    "ParsedTurn",
    "Piece",
    "ReasoningDelta",
    "ThinkMarkup",
    "ToolCallArguments",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolFormat",
    "TurnParser",
    "parser_name_problem",
]
