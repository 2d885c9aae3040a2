"""Which parsers a model's output needs: named by configuration, or recognised in its chat template."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from service.parsing import calls
from service.parsing.markup import HERMES, LLAMA3_JSON, MISTRAL, PYTHONIC, THINK, CallMarkup, ThinkMarkup
from service.parsing.reasoning import ThinkSplitter
from service.parsing.tools import CallIds, TaggedCallParser, TrailingCallParser
from service.parsing.turn import ToolParser, TurnParser


def openai_call_id(index: int, name: str) -> str:
    """OpenAI's form of a tool-call id: ``call_`` and 24 random hex digits."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class ToolFormat:
    """One tool-call format: a new parser for each turn, the markup that parser reads, and the form of the
    call ids the family's chat template accepts back (``call_id(index in the turn, function name)``)."""

    parser: Callable[[CallIds], ToolParser]
    markup: CallMarkup
    call_id: CallIds = openai_call_id
    # A call id a client sends back, in the form the family's template accepts (the same id always
    # gives the same one, so a call and its result still match).
    fit_call_id: Callable[[str], str] = str


def mistral_call_id(index: int, name: str) -> str:
    """Mistral's templates accept exactly 9 letters and digits as a call id."""
    return uuid.uuid4().hex[:9]


def mistral_fit_call_id(call_id: str) -> str:
    """Any call id as 9 letters and digits: kept when it is that already, else a digest of it."""
    if len(call_id) == 9 and call_id.isascii() and call_id.isalnum():
        return call_id
    return hashlib.sha256(call_id.encode()).hexdigest()[:9]


_HERMES = ToolFormat(lambda ids: TaggedCallParser(calls.hermes_call, ids), HERMES)
_PYTHONIC = ToolFormat(lambda ids: TrailingCallParser(calls.pythonic_calls, ids, (calls.PYTHON_TAG, "[")), PYTHONIC)
# --tool-parser names (with vLLM's aliases) -> the format.
TOOL_PARSERS: dict[str, ToolFormat] = {
    "hermes": _HERMES,
    "qwen": _HERMES,
    "llama3_json": ToolFormat(
        lambda ids: TrailingCallParser(calls.llama3_json_calls, ids, (calls.PYTHON_TAG, "{")), LLAMA3_JSON
    ),
    "pythonic": _PYTHONIC,
    "llama3_pythonic": _PYTHONIC,
    "mistral": ToolFormat(
        lambda ids: TrailingCallParser(calls.mistral_calls, ids, ("[{",), (calls.MISTRAL_TAG,)),
        MISTRAL,
        call_id=mistral_call_id,
        fit_call_id=mistral_fit_call_id,
    ),
}
# --reasoning-parser names -> their block's delimiters: every family known here writes <think>...</think>.
REASONING_PARSERS: dict[str, ThinkMarkup] = {"think": THINK, "qwen3": THINK, "deepseek_r1": THINK}
NONE = "none"  # either flag: no parsing of that kind

# A chat template that writes this markup -> the tool parser it needs (first match wins).
TEMPLATE_TOOL_MARKUP = [
    ("<tool_call>", "hermes"),
    ("[TOOL_CALLS]", "mistral"),
    ("[func_name1(", "pythonic"),  # Llama 3.2 / 4 pythonic system prompt
    ("<|python_tag|>", "llama3_json"),
    ('"parameters": dictionary of argument name', "llama3_json"),
]


@dataclass(frozen=True)
class OutputFormat:
    """A model's output parsers, by name; None: the model's output is not parsed that way."""

    tool_parser: str | None = None
    reasoning_parser: str | None = None

    @classmethod
    def choose(cls, tool_parser: str | None, reasoning_parser: str | None, chat_template: str) -> OutputFormat:
        """The configured parsers, or those the chat template's markup calls for."""
        if tool_parser is None:
            tool_parser = next((name for markup, name in TEMPLATE_TOOL_MARKUP if markup in chat_template), None)
        if reasoning_parser is None and THINK.begin in chat_template:
            reasoning_parser = "think"
        return cls(None if tool_parser == NONE else tool_parser, None if reasoning_parser == NONE else reasoning_parser)

    def fit_call_id(self, call_id: str) -> str:
        """A call id sent back by a client, in the form this model's template accepts."""
        return call_id if self.tool_parser is None else TOOL_PARSERS[self.tool_parser].fit_call_id(call_id)

    @property
    def call_markup(self) -> CallMarkup | None:
        """How this model writes tool calls; None when its output is not parsed for them."""
        return None if self.tool_parser is None else TOOL_PARSERS[self.tool_parser].markup

    @property
    def think_markup(self) -> ThinkMarkup | None:
        """The delimiters of this model's reasoning block; None when its output is not parsed for one."""
        return None if self.reasoning_parser is None else REASONING_PARSERS[self.reasoning_parser]

    def parser(self, *, prompt_tail: str = "", tools: bool = True, max_calls: int | None = None) -> TurnParser:
        """A parser for one turn.

        ``prompt_tail``: the end of the rendered prompt (a template that ends
        it with an open ``<think>`` makes the output start inside the block);
        ``tools``: whether the request offered tools (without, tool markup is
        left as text, as vLLM does); ``max_calls``: 1 for parallel_tool_calls false.
        """
        reasoning = None
        if (think := self.think_markup) is not None:
            opened = prompt_tail.rfind(think.begin) > prompt_tail.rfind(think.end)
            reasoning = ThinkSplitter(opened=opened, open_tag=think.begin, close_tag=think.end)
        tool = None
        if tools and self.tool_parser is not None:
            chosen = TOOL_PARSERS[self.tool_parser]
            tool = chosen.parser(chosen.call_id)
        return TurnParser(reasoning, tool, max_calls)


def parser_name_problem(kind: str, name: str) -> str | None:
    """Why ``name`` is not a known ``kind`` ("tool" or "reasoning") parser; None when it is."""
    known = set(TOOL_PARSERS if kind == "tool" else REASONING_PARSERS) | {NONE}
    return None if name in known else f"unknown {kind} parser {name!r}; known: {', '.join(sorted(known))}"
