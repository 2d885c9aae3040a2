"""The generic tool format, for a model whose chat template shows none: the tools described in the system turn,
calls written as one JSON object under a grammar (what llama.cpp does), read back as calls.

Each table here is merged into service.parsing.formats' own (TOOL_PARSERS, REASONING_PARSERS, ALIASES and the
template markup tables), so a format is written once, here, and named on the command line like any other.
"""

from __future__ import annotations

from service.parsing.markup import ThinkMarkup
from service.parsing.tool_format import ToolFormat

# --tool-parser name -> its format.
TOOL_FORMATS: dict[str, ToolFormat] = {}
# --reasoning-parser name -> its block's delimiters.
REASONING_FORMATS: dict[str, ThinkMarkup] = {}
# Other servers' names (vLLM's, OVMS's) for these formats: {"tool": {alias: name}, "reasoning": {...}}.
ALIASES: dict[str, dict[str, str]] = {"tool": {}, "reasoning": {}}
# Template markup (a string, or several that must all appear) -> the parser it calls for (checked after
# formats.py's own entries, in this order).
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = []
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = []
