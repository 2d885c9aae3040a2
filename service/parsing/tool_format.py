"""One tool-call format as data: its turn parser, the markup that parser reads (and a forced call's grammar
writes), and the form of call ids its family's chat template accepts back.

Every format module (formats.py's own, formats_json.py, formats_xml.py) describes its formats with these.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ovserve.service.parsing import calls
from ovserve.service.parsing.markup import CallMarkup
from ovserve.service.parsing.tagged_calls import Schemas
from ovserve.service.parsing.tools import CallIds, Decoder, KeepsCompleteCalls, TaggedCallParser
from ovserve.service.parsing.turn import ToolParser


def openai_call_id(index: int, name: str) -> str:
    """OpenAI's form of a tool-call id: ``call_`` and 24 random hex digits."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class ToolFormat:
    """One tool-call format: a new parser for each turn, the markup that parser reads, and the form of the
    call ids the family's chat template accepts back (``call_id(index in the turn, function name)``).

    ``parser(call ids, schemas)``: ``schemas`` are the offered tools' parameter schemas by function name, by
    which formats that write argument values as untyped text (Qwen3-Coder, GLM) type them; others ignore them.
    """

    parser: Callable[[CallIds, Schemas], ToolParser]
    markup: CallMarkup
    call_id: CallIds = openai_call_id
    # A call id a client sends back, in the form the family's template accepts (the same id always
    # gives the same one, so a call and its result still match).
    fit_call_id: Callable[[str], str] = str
    # Special tokens the parser reads that ``markup`` does not contain (the engine keeps them in the text).
    extra: tuple[str, ...] = ()
    typed: bool = False  # its parser reads the schemas (the others take none: a request's need not be converted)
    # The probe call (ovserve.service.parsing.detection: get_weather with {"city": "Paris", "days": 3}) as templates of
    # this format write it where that differs from ``markup``'s writing (Devstral's [ARGS], Gemma 4's own
    # literals): format detection looks for these too.
    written: tuple[str, ...] = ()
    # Markup of this format that also ends a reasoning block the model left open, and starts the content: Kimi K2
    # and DeepSeek V4 may open their calls without closing their reasoning (vLLM's kimi_k2 and deepseek_v4
    # reasoning parsers end it there). Whatever reasoning format serves the model (their blocks are <think>'s).
    ends_reasoning: tuple[str, ...] = ()
    # How a text reply opens in this format (Functionary v3.2's "all" recipient): removed from the content when a
    # request offers no tools, where the format's parser (which reads it otherwise) is not used.
    text_openings: tuple[str, ...] = ()
    # The parser of a reply to a request that offers no tools, where the format frames its text in markup the
    # engine keeps (Inkling's blocks): the framing taken out, calls left as text. None: the reply is read as text.
    text_parser: Callable[[], ToolParser] | None = None
    # The role a tool's result is written under for a template that drops OpenAI's tool_calls (calls written into
    # the content, OutputFormat.calls_in_content), where the family's role is not "tool": GLM's "observation".
    result_role: str = "tool"

    def new_parser(self, schemas: Schemas) -> ToolParser:
        """A parser for one turn, with this format's call ids; a parser that can is given the markup, so a list
        the output cuts short keeps its complete calls (``ovserve.service.parsing.cut_lists``)."""
        parser = self.parser(self.call_id, schemas)
        if isinstance(parser, KeepsCompleteCalls):
            parser.keep_complete_calls(self.markup)
        return parser


def mistral_call_id(index: int, name: str) -> str:
    """Mistral's templates accept exactly 9 letters and digits as a call id."""
    return uuid.uuid4().hex[:9]


def mistral_fit_call_id(call_id: str) -> str:
    """Any call id as 9 letters and digits: kept when it is that already, else a digest of it."""
    if len(call_id) == 9 and call_id.isascii() and call_id.isalnum():
        return call_id
    return hashlib.sha256(call_id.encode()).hexdigest()[:9]


def kimi_call_id(index: int, name: str) -> str:
    """Kimi K2's form of a call id: ``functions.<name>:<index>``, as its templates write it."""
    return f"functions.{name}:{index}"


def section_format(
    decode: Decoder, markup: CallMarkup, call_id: CallIds = openai_call_id, ends_reasoning: tuple[str, ...] = ()
) -> ToolFormat:
    """A format whose calls sit in a section between ``markup.opening`` and ``markup.closing``, amid text."""
    return ToolFormat(
        lambda ids, _: TaggedCallParser(decode, ids, markup.opening, markup.closing),
        markup,
        call_id=call_id,
        ends_reasoning=ends_reasoning,
    )


def typed_format(decode: Callable[[str, Schemas | None], list[calls.Call] | None], markup: CallMarkup) -> ToolFormat:
    """A format of ``<tool_call>`` blocks whose argument values are typed by the request's tool schemas."""
    return ToolFormat(
        lambda ids, schemas: TaggedCallParser(lambda block: decode(block, schemas), ids), markup, typed=True
    )
