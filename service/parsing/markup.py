"""What each output format writes around tool calls and reasoning, as data.

A parser reads this markup; the grammar that forces a tool call
(``ovserve.service.structured.output``) writes it, so a forced call comes out in the
served model's own format and its parser reads it back (vLLM's
``ToolParser.get_structure_info`` plays this part there). Special tokens
(``<|python_tag|>``, ``[TOOL_CALLS]``) are left out where the parsers accept
the markup without them; where a format's markup is made of special tokens
(DeepSeek, Kimi K2, Granite), they are written here, and the engine keeps in the
decoded text every special token these strings contain.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

# CallMarkup.name_form -> how a function name is written in a call's opening text.
NAME_FORMS = {
    "json": lambda name: json.dumps(name, ensure_ascii=False),  # a JSON string: "get_weather"
    "bare": lambda name: name,  # the name as it is: get_weather(...), functions.get_weather
}
# CallMarkup.arguments -> the name form that dialect writes unless the markup says otherwise.
DEFAULT_NAME_FORMS = {"json": "json", "python": "bare", "qwen3_xml": "bare", "glm_xml": "bare"}


@dataclass(frozen=True)
class CallMarkup:
    """How a tool format writes a list of calls: ``opening call (separator call)* closing``.

    A call is ``begin(name)``, the arguments, then ``call_end``. ``arguments``
    is the dialect they are written in: ``"json"``, a JSON object; ``"python"``,
    keyword arguments with Python literal values (``city="Paris", days=3``).
    """

    opening: str  # before the first call
    call_begin: str  # before a call's arguments; "{name}" stands for the function's name, "{index}" for its number
    call_end: str  # after a call's arguments
    separator: str  # between two calls
    closing: str  # after the last call
    arguments: str = "json"  # a key of NAME_FORMS
    tag: str = ""  # the tag every call opens with, when calls are tagged blocks amid free text
    name: str = ""  # a key of NAME_FORMS; "" for the arguments dialect's own (DEFAULT_NAME_FORMS)
    INDEX_EBNF: ClassVar[str] = "[0-9]{1,4}"  # what a grammar writes for "{index}": a call's number
    parallel: bool = True  # False: one call per turn (gpt-oss: <|call|> ends the turn), so no separator

    @property
    def name_form(self) -> str:
        """How this markup writes a function's name (a key of NAME_FORMS)."""
        return self.name or DEFAULT_NAME_FORMS[self.arguments]

    def begin(self, name: str, index: int = 0) -> str:
        """The text that opens call number ``index`` (in the turn) of function ``name``, up to its arguments."""
        return str(index).join(self.begin_parts(name))

    def begin_parts(self, name: str) -> list[str]:
        """The fixed pieces of the text that opens a call of ``name``, split where ``call_begin`` has
        ``{index}`` (Kimi K2's ``functions.get_weather:0``): a grammar writes digits between them."""
        written = NAME_FORMS[self.name_form](name)
        return [part.replace("{name}", written) for part in self.call_begin.split("{index}")]

    def begin_ebnf(self, name: str) -> str:
        """The text that opens a call of ``name`` as an EBNF expression (digits for ``{index}``)."""
        return f" {self.INDEX_EBNF} ".join(spaced_ebnf(part) for part in self.begin_parts(name))

    def name_problem(self, name: str) -> str | None:
        """Why this markup cannot write a call of ``name``; None when it can."""
        if self.arguments == "python" and (not name.isidentifier() or keyword.iskeyword(name)):
            return f"{json.dumps(name)} is not a Python identifier, and this model writes calls as Python"
        if self.arguments in TAGGED_ARGUMENTS and not tag_name(name):
            return f"{json.dumps(name)} cannot be written inside this model's call tags (no spaces, < or >)"
        if self.quotes_name and '"' in name:  # the quote would end the name's attribute: read back as text
            return f"{json.dumps(name)} cannot be written between the double quotes this model writes a name in"
        return None

    @property
    def quotes_name(self) -> bool:
        """Whether a call's name is written as it is between double quotes (``<invoke name="get_weather">``)."""
        return self.name_form == "bare" and '"{name}"' in self.call_begin


def spaced_ebnf(text: str) -> str:
    """Markup text as an EBNF expression in which a space after ``:``, ``,`` or ``;`` is optional.

    OpenVINO GenAI hands XGrammar a SentencePiece vocabulary as it is stored (``▁Paris``), so under a
    grammar such a model (Mistral, Gemma) has no token that writes a space: a literal space would be a
    dead end. Those spaces separate JSON or Python pieces (``{"name": "f"``, ``a(x=1), b(y=2)``), which
    every parser reads with or without them; other models keep writing them.
    """
    expressions: list[str] = []
    for position, piece in enumerate(re.split(r"(?<=[:,;]) ", text)):
        expressions += ['" "?'] if position else []
        expressions += [json.dumps(piece, ensure_ascii=False)] if piece else []
    return " ".join(expressions) or '""'


@dataclass(frozen=True)
class TaggedArguments:
    """Arguments written one tagged member each, ``key_begin name key_end value value_end`` (XML-style formats).

    A string value is the raw text; any other value is JSON. A parser reads a
    value up to the first of ``stops``, so a raw string cannot hold one.
    """

    key_begin: str
    key_end: str  # between the argument's name and its value
    value_end: str  # "{key}" in it stands for the argument's name (MiniMax-M3 closes each value with its own tag)
    stops: tuple[str, ...]  # where a parser ends a value (or the whole call): closing tags, each starting with "<"
    # key_end before a value written as JSON, where the markup tells the two apart (DeepSeek's DSML:
    # string="true" before raw text, string="false" before JSON); "" when key_end stands before both.
    json_key_end: str = ""

    def write(self, arguments: Mapping[str, Any]) -> str:
        """``arguments`` as this dialect's members: a string as raw text, any other value as JSON."""
        return "".join(
            self.key_begin
            + key
            + (self.key_end if isinstance(value, str) else self.json_key_end or self.key_end)
            + (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
            + self.value_end.replace("{key}", key)
            for key, value in arguments.items()
        )


def tag_name(name: str) -> bool:
    """Whether ``name`` can stand between tags as a function or argument name: no whitespace, ``<`` or ``>``."""
    return bool(name) and not any(char.isspace() or char in "<>" for char in name)


DSML = "｜DSML｜"  # noqa: RUF001 (DeepSeek V3.2+'s markup prefix: full-width bars, as its tokenizer has them)
GCML = "｜GCML｜"  # noqa: RUF001 (GigaChat 3.5's markup prefix, full-width bars like DSML)
MINIMAX_NS = "]<]minimax[>["  # MiniMax-M3's namespace token, before each of its call tags
# CallMarkup.arguments -> how the tagged dialects write a call's arguments.
TAGGED_ARGUMENTS = {
    # Qwen3-Coder: <parameter=city>\nParis\n</parameter>\n (a parser drops one line break on each side)
    "qwen3_xml": TaggedArguments("<parameter=", ">\n", "\n</parameter>\n", ("</parameter>", "</tool_call>")),
    # GLM-4.5/4.6/4.7: <arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n
    "glm_xml": TaggedArguments(
        "<arg_key>", "</arg_key>\n<arg_value>", "</arg_value>\n", ("</arg_value>", "</tool_call>")
    ),
    # Seed-OSS: <parameter=city>Paris</parameter>\n inside <seed:tool_call><function=NAME>
    # (ovserve.service.parsing.calls_xml)
    "seed_xml": TaggedArguments(
        "<parameter=", ">", "</parameter>\n", ("</parameter>", "</function>", "</seed:tool_call>")
    ),
    # MiniMax-M2: <parameter name="city">Paris</parameter>\n inside <invoke name="NAME">
    "minimax_xml": TaggedArguments(
        '<parameter name="', '">', "</parameter>\n", ("</parameter>", "</invoke>", "</minimax:tool_call>")
    ),
    # DeepSeek V3.2 / V4 (DSML, "<{DSML}" below): <{DSML}parameter name="city" string="true">Paris</{DSML}parameter>\n,
    # string="false" before a value written as JSON
    "dsml": TaggedArguments(
        f'<{DSML}parameter name="',
        '" string="true">',
        f"</{DSML}parameter>\n",
        (f"</{DSML}parameter>", f"</{DSML}invoke>"),
        json_key_end='" string="false">',
    ),
    # Step3: <steptml:parameter name="city">Paris</steptml:parameter> inside <steptml:invoke name="NAME">
    "steptml": TaggedArguments(
        '<steptml:parameter name="', '">', "</steptml:parameter>", ("</steptml:parameter>", "</steptml:invoke>")
    ),
    # Hunyuan 3 (Hy3): GLM's members, every tag suffixed :opensource
    "hy_xml": TaggedArguments(
        "<arg_key:opensource>",
        "</arg_key:opensource>\n<arg_value:opensource>",
        "</arg_value:opensource>\n",
        ("</arg_value:opensource>", "</tool_call:opensource>"),
    ),
    # MiniCPM5: <param name="city">Paris</param> inside <function name="NAME">
    "minicpm_xml": TaggedArguments('<param name="', '">', "</param>", ("</param>", "</function>")),
    # Kimi K3 (XTML): <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>; a JSON value's
    # type names its kind (a grammar writes "number" for every one; its parser reads them all)
    "xtml": TaggedArguments(
        '<|open|>argument key="',
        '" type="string"<|sep|>',
        "<|close|>argument<|sep|>",
        ("<|close|>",),
        json_key_end='" type="number"<|sep|>',
    ),
    # MiniMax-M3: ]<]minimax[>[<city>Paris]<]minimax[>[</city> (MINIMAX_NS before each tag; the model nests
    # objects and arrays as elements, a grammar writes them as JSON: ovserve.service.parsing.calls_xml reads both)
    "minimax_m3_xml": TaggedArguments(
        f"{MINIMAX_NS}<", ">", f"{MINIMAX_NS}</{{key}}>", (MINIMAX_NS[MINIMAX_NS.index("<") :],)
    ),
    # Solar Open 2: <|tool_arg:start|>city<|tool_arg:value|>Paris<|tool_arg:end|> after <|tool_call:start|>NAME\n
    "solar_args": TaggedArguments(
        "<|tool_arg:start|>", "<|tool_arg:value|>", "<|tool_arg:end|>", ("<|tool_arg:end|>", "<|tool_call:end|>")
    ),
    # GigaChat 3.5 (GCML): DSML's members under its own prefix (ovserve.service.parsing.formats_tail)
    "gcml": TaggedArguments(
        f'<{GCML}parameter name="',
        '" string="true">',
        f"</{GCML}parameter>\n",
        (f"</{GCML}parameter>", f"</{GCML}invoke>"),
        json_key_end='" string="false">',
    ),
    # DeepSeek V4.1 ("spaced DSML"): DSML's members, a space after the prefix: <{DSML} parameter name="city" ...>
    "dsml_spaced": TaggedArguments(
        f'<{DSML} parameter name="',
        '" string="true">',
        f"</{DSML} parameter>\n",
        (f"</{DSML} parameter>", f"</{DSML} invoke>"),
        json_key_end='" string="false">',
    ),
    # ATEM (Onyx / MuseGlimmer): <atem:parameter name="city">Paris</atem:parameter>\n inside <atem:invoke name="NAME">
    "atem_xml": TaggedArguments(
        '<atem:parameter name="', '">', "</atem:parameter>\n", ("</atem:parameter>", "</atem:invoke>")
    ),
    # K2 Horizon (IFM): GLM's members, every tag prefixed ifm|: <ifm|arg_key>city</ifm|arg_key><ifm|arg_value>...
    "ifm_xml": TaggedArguments(
        "<ifm|arg_key>", "</ifm|arg_key><ifm|arg_value>", "</ifm|arg_value>", ("</ifm|arg_value>", "</ifm|tool_call>")
    ),
}


@dataclass(frozen=True)
class ThinkMarkup:
    """The delimiters of a reasoning block at the start of the output.

    A grammar writes ``begin`` and ``end``; the parser also reads the other spellings some models write.
    """

    begin: str
    end: str
    other_begins: tuple[str, ...] = ()
    other_ends: tuple[str, ...] = ()
    after: str | None = None  # what a grammar writes after ``end``; None: a blank line, as most templates do
    reply: tuple[str, str] | None = None  # tags the reply is wrapped in after the block (removed from content)
    reply_prefix: str = ""  # words the reply opens with inside those tags (removed from content; needs ``reply``)
    other_reply_openings: tuple[str, ...] = ()  # other spellings of the reply's opening tag (needs ``reply``)
    # Markup that closes the turn after the reply or its calls, removed from content as the reply's closing tag is
    # (needs ``reply``): Kimi K3's message close after its response or tools channel.
    turn_end: str = ""
    # No opening the model must write: its output starts inside the block unless the prompt closed it, and
    # ``begin`` is only read (dropped) where written. Apriel's: 1.6's prompt writes the opening words, its
    # template writes a past turn's reasoning bare before [BEGIN FINAL RESPONSE], 1.5's model writes them itself.
    implicit: bool = False
    # The block stays in the content, its opening written there when the prompt opened it (vLLM's
    # minimax_m2_append_think, MiniMax's recommended parser: clients that show or resend the thought as text).
    inline: bool = False

    @property
    def begins(self) -> tuple[str, ...]:
        """Every spelling of the block's opening the parser reads."""
        return (self.begin, *self.other_begins)

    @property
    def ends(self) -> tuple[str, ...]:
        """Every spelling of the block's end the parser reads."""
        return (self.end, *self.other_ends)


# The markup of each family, as its decoder in ovserve.service.parsing.calls reads it.
HERMES = CallMarkup("", '<tool_call>\n{"name": {name}, "arguments": ', "}\n</tool_call>", "\n", "", tag="<tool_call>")
LLAMA3_JSON = CallMarkup("", '{"name": {name}, "parameters": ', "}", "; ", "")
PYTHONIC = CallMarkup("[", "{name}(", ")", ", ", "]", arguments="python")
MISTRAL = CallMarkup("[", '{"name": {name}, "arguments": ', "}", ", ", "]")
# As the chat templates write them (tests/data/chat_templates/Qwen3-Coder.jinja, GLM-4.6.jinja).
QWEN3_CODER = CallMarkup(
    "", "<tool_call>\n<function={name}>\n", "</function>\n</tool_call>", "\n", "", "qwen3_xml", tag="<tool_call>"
)
GLM45 = CallMarkup("", "<tool_call>{name}\n", "</tool_call>", "\n", "", arguments="glm_xml", tag="<tool_call>")

# DeepSeek's special tokens (full-width bars, "▁" for spaces): a section of calls, each `begin head sep body end`.
DEEPSEEK_CALLS_BEGIN, DEEPSEEK_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"  # noqa: RUF001
DEEPSEEK_CALL_BEGIN = "<｜tool▁call▁begin｜>"  # noqa: RUF001
DEEPSEEK_SEP, DEEPSEEK_CALL_END = "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"  # noqa: RUF001
# DeepSeek V3 / R1: the call's type, then its name and the arguments in a fenced JSON block; calls a line apart.
DEEPSEEK_V3 = CallMarkup(
    DEEPSEEK_CALLS_BEGIN,
    f"{DEEPSEEK_CALL_BEGIN}function{DEEPSEEK_SEP}{{name}}\n```json\n",
    f"\n```{DEEPSEEK_CALL_END}",
    "\n",
    DEEPSEEK_CALLS_END,
    name="bare",
    tag=DEEPSEEK_CALLS_BEGIN,
)
# DeepSeek V3.1: the name, then the bare arguments; calls back to back.
DEEPSEEK_V31 = CallMarkup(
    DEEPSEEK_CALLS_BEGIN,
    f"{DEEPSEEK_CALL_BEGIN}{{name}}{DEEPSEEK_SEP}",
    DEEPSEEK_CALL_END,
    "",
    DEEPSEEK_CALLS_END,
    name="bare",
    tag=DEEPSEEK_CALLS_BEGIN,
)
# Kimi K2: each call's id (functions.<name>:<index>), then its arguments.
KIMI_SECTION_BEGIN, KIMI_SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
KIMI_CALL_BEGIN, KIMI_ARGUMENTS = "<|tool_call_begin|>", "<|tool_call_argument_begin|>"
KIMI_CALL_END = "<|tool_call_end|>"
KIMI_K2 = CallMarkup(
    KIMI_SECTION_BEGIN,
    f"{KIMI_CALL_BEGIN}functions.{{name}}:{{index}}{KIMI_ARGUMENTS}",
    KIMI_CALL_END,
    "",
    KIMI_SECTION_END,
    name="bare",
    tag=KIMI_SECTION_BEGIN,
)
# gpt-oss (harmony): a commentary message to functions.NAME, its JSON arguments constrained; <|call|> ends the turn.
HARMONY = CallMarkup(
    "",
    "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>",
    "<|call|>",
    "",
    "",
    name="bare",
    tag="<|channel|>commentary to=",
    parallel=False,
)
# Gemma 4: call:NAME then the arguments object, in a tagged block; calls back to back.
GEMMA4 = CallMarkup("", "<|tool_call>call:{name}", "<tool_call|>", "", "", name="bare", tag="<|tool_call>")
# Phi-4-mini: a JSON list after the word "functools", at the end of the reply.
PHI4_MINI_JSON = CallMarkup("functools[", '{"name": {name}, "arguments": ', "}", ", ", "]")
# Granite 3.x: a JSON list after the <|tool_call|> special token.
GRANITE_TAG = "<|tool_call|>"
GRANITE = CallMarkup(GRANITE_TAG + "[", '{"name": {name}, "arguments": ', "}", ", ", "]")
THINK = ThinkMarkup("<think>", "</think>")
THINK_INLINE = dataclasses.replace(THINK, inline=True)
# gpt-oss (harmony): reasoning is the analysis channel's message; the next message opens with <|start|>assistant.
HARMONY_THINK = ThinkMarkup("<|channel|>analysis<|message|>", "<|end|>", after="<|start|>assistant")
# Gemma 4: the thought channel, the reply right after it.
GEMMA4_THINK = ThinkMarkup("<|channel>thought", "<channel|>", after="")
# Granite 3.2 (thinking=True) introduces both parts in words; quantized models were seen writing "Here's" (vLLM).
GRANITE_THINK = ThinkMarkup(
    "Here is my thought process:",
    "Here is my response:",
    other_begins=("Here's my thought process:",),
    other_ends=("Here's my response:",),
)
# Granite 3.3 and 4 (thinking=True): <think>...</think>, then the reply inside <response>...</response>.
GRANITE_TAGGED_THINK = ThinkMarkup("<think>", "</think>", reply=("<response>", "</response>"))
