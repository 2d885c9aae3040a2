"""The long tail of other servers' tool and reasoning formats (vLLM's parsers no family here needed first): each a
format of its own, or, where the markup is one ovserve already reads, an alias of that format.

Each table here is merged into ovserve.service.parsing.formats' own (TOOL_PARSERS, REASONING_PARSERS, ALIASES and the
template markup tables), so a format is written once, here, and named on the command line like any other.
Each CallMarkup writes a call as vLLM's parser for the family documents the model writing it (no published
template of these families is vendored here); the decoders are ovserve.service.parsing.calls_tail's and the other
groups'.
"""

from __future__ import annotations

from collections.abc import Callable

from ovserve.service.parsing.calls_json import NAMED_ARGUMENTS, named_calls
from ovserve.service.parsing.calls_python import lfm2_calls, python_call_lines
from ovserve.service.parsing.calls_tail import (
    CWM_CLOSE,
    CWM_OPEN,
    HCX_ASSISTANT,
    HCX_END,
    HCX_ROLE,
    HY_V4_KEYS,
    IFM_KEYS,
    INKLING_CALL,
    INKLING_END,
    PLAMO_ARGS,
    PLAMO_ARGS_END,
    PLAMO_JSON,
    PLAMO_NAME,
    PLAMO_NAME_END,
    PLAMO_REQUEST,
    PLAMO_REQUEST_END,
    PLAMO_REQUESTS,
    PLAMO_REQUESTS_END,
    KeyedTags,
    cwm_call,
    hyperclovax_calls,
    inkling_call,
    keyed_call,
    plamo3_calls,
    step_audio_2_call,
    tagged_blocks,
)
from ovserve.service.parsing.calls_xml import XmlCallForm, xml_calls
from ovserve.service.parsing.envelope import MESSAGE, RECIPIENT, ROLE, SPECIAL_TOKENS, START, EnvelopedCallParser
from ovserve.service.parsing.formats_xml import XmlFamily
from ovserve.service.parsing.inkling import CONTENT_THINKING, END_SAMPLING, InklingCallParser, inkling_text
from ovserve.service.parsing.inkling import SPECIAL_TOKENS as INKLING_FRAMING
from ovserve.service.parsing.line_calls import LineCallParser
from ovserve.service.parsing.markup import DSML, GCML, TAGGED_ARGUMENTS, CallMarkup, ThinkMarkup
from ovserve.service.parsing.pieces import Piece
from ovserve.service.parsing.suffixed_tags import UnsuffixedCallParser
from ovserve.service.parsing.tool_format import ToolFormat
from ovserve.service.parsing.tools import CallIds, Decoder, TaggedCallParser, TrailingCallParser
from ovserve.service.parsing.turn import ToolParser

# Qwen2.5-Coder (vLLM's qwen25_coder): a call's JSON in a <tools> block (vLLM reads a JSON list there too, and
# several blocks; a forced call writes a block a call, which both read).
QWEN25_CODER_OPEN, QWEN25_CODER_CLOSE = "<tools>", "</tools>"
QWEN25_CODER = CallMarkup(
    "", f"{QWEN25_CODER_OPEN}\n{NAMED_ARGUMENTS}", f"}}\n{QWEN25_CODER_CLOSE}", "\n", "", tag=QWEN25_CODER_OPEN
)
# openPangu (vLLM's openpangu_v2 and pangu): a JSON list of calls between the tokens LFM2 puts its Python list in.
PANGU_OPEN, PANGU_CLOSE = "<|tool_call_start|>", "<|tool_call_end|>"
OPENPANGU = CallMarkup(f"{PANGU_OPEN}[", NAMED_ARGUMENTS, "}", ", ", f"]{PANGU_CLOSE}", tag=PANGU_OPEN)
# PLaMo 3: a requests section of requests, each a name and JSON arguments between tags of their own (the later
# checkpoints' form, with the JSON constraint's tags, which vLLM's parser reads; the earlier form is read too).
PLAMO3 = CallMarkup(
    PLAMO_REQUESTS, f"{PLAMO_REQUEST}{PLAMO_NAME}{{name}}{PLAMO_NAME_END}{PLAMO_ARGS}{PLAMO_JSON}",
    f"{PLAMO_ARGS_END}{PLAMO_REQUEST_END}", "", PLAMO_REQUESTS_END, tag=PLAMO_REQUESTS, name="bare",
)  # fmt: skip
# GigaChat 3.5 (GCML): DeepSeek V4's DSML section under its own prefix.
GIGACHAT35 = CallMarkup(
    f"<{GCML}tool_calls>\n", f'<{GCML}invoke name="{{name}}">\n', f"</{GCML}invoke>", "\n", f"\n</{GCML}tool_calls>",
    "gcml", tag=f"<{GCML}tool_calls>", name="bare",
)  # fmt: skip
# DeepSeek V4.1 (vLLM's deepseek_v41, "spaced DSML"): V4's section, a space after the prefix of every tag, the
# section named calls.
DEEPSEEK_V41 = CallMarkup(
    f"<{DSML} calls>\n", f'<{DSML} invoke name="{{name}}">\n', f"</{DSML} invoke>", "\n", f"\n</{DSML} calls>",
    "dsml_spaced", tag=f"<{DSML} calls>", name="bare",
)  # fmt: skip
# dots.llm (vLLM's dots): MiniMax-M2's invokes in a <dots_function_call> section.
DOTS = CallMarkup(
    "<dots_function_call>\n", '<invoke name="{name}">\n', "</invoke>", "\n", "\n</dots_function_call>",
    "minimax_xml", tag="<dots_function_call>", name="bare",
)  # fmt: skip
# Hunyuan 4 (vLLM's hy_v4): GLM-4.7's calls (the name, then the members) in a <tool_calls> section. Checkpoints
# that suffix every tag (<tool_call:SUFFIX>, read off their vocabulary by vLLM) are read with the suffix taken off;
# a grammar writes the plain tags.
HY_V4 = CallMarkup(
    "<tool_calls>", "<tool_call>{name}", "</tool_call>", "", "</tool_calls>", "glm_xml", tag="<tool_calls>",
    name="bare",
)  # fmt: skip
# K2 Horizon (IFM, its default "xml" tool_call_format): the same under ifm| tags.
K2_HORIZON = CallMarkup(
    "<ifm|tool_calls>", "<ifm|tool_call>{name}", "</ifm|tool_call>", "", "</ifm|tool_calls>", "ifm_xml",
    tag="<ifm|tool_calls>", name="bare",
)  # fmt: skip
# iQuest Coder V2: GLM-4.7's call (the name, then the members) in an <iquestcoder_tool_call> block each.
IQUEST_CODER_V2_OPEN, IQUEST_CODER_V2_CLOSE = "<iquestcoder_tool_call>", "</iquestcoder_tool_call>"
IQUEST_CODER_V2 = CallMarkup(
    "", f"{IQUEST_CODER_V2_OPEN}{{name}}", IQUEST_CODER_V2_CLOSE, "\n", "", "glm_xml", tag=IQUEST_CODER_V2_OPEN,
    name="bare",
)  # fmt: skip
# Inkling: a tool block of its own, {"name": ..., "args": {...}}; blocks back to back (the <|message_model|> the
# model writes before each is a special token the detokenizer drops, so the markup leaves it out).
INKLING = CallMarkup("", INKLING_CALL + '{"name": {name}, "args": ', "}" + INKLING_END, "", "", tag=INKLING_CALL)
# ATEM (OVMS's onyx, vLLM's muse_glimmer): each call its own message to the tool, an <atem:function_calls> section
# of MiniMax-M2-like invokes; the message envelope around it is taken out by ovserve.service.parsing.envelope.
ATEM_OPEN, ATEM_CLOSE = "<atem:function_calls>", "</atem:function_calls>"
ONYX = CallMarkup(
    "", f'{ATEM_OPEN}\n<atem:invoke name="{{name}}">\n', f"</atem:invoke>\n{ATEM_CLOSE}", "\n", "", "atem_xml",
    tag=ATEM_OPEN, name="bare",
)  # fmt: skip
ATEM_FORM = XmlCallForm('<atem:invoke name="', '">', "</atem:invoke>", TAGGED_ARGUMENTS["atem_xml"])
# Step-Audio 2: a <tool_call> block of three lines, "function", the name, the JSON arguments.
STEP_AUDIO_2 = CallMarkup("", "<tool_call>function\n{name}\n", "</tool_call>", "\n", "", name="bare", tag="<tool_call>")
# Granite 3.3 / 4.0 under a pythonic template (vLLM's granite_pythonic): a Python keyword call a line, no markup.
GRANITE_PYTHONIC = CallMarkup("", "{name}(", ")", "\n", "", arguments="python")
# HyperCLOVA X SEED Think 14B: a JSON list after its function-call role line, to the end of the reply.
HYPERCLOVAX_14B = CallMarkup(f"{HCX_ROLE}\n[", NAMED_ARGUMENTS, "}", ", ", "]")
# CWM (vLLM's cwm, "Cursor-style"): a <tool: function> block, the name then its JSON arguments (or a command line,
# which a grammar does not write).
CWM = CallMarkup("", f"{CWM_OPEN} function>\n{{name}} ", f"\n{CWM_CLOSE}", "\n", "", name="bare", tag=CWM_OPEN)


class _CommandBlocks(TaggedCallParser):
    """CWM's ``<tool: ...>`` blocks: a command line makes a call only in a closed block. One the output cut
    before its ``</tool>`` (max_tokens, a stop string) may hold half a command: it makes a call only with JSON
    arguments, which show whether they are whole."""

    def __init__(self, ids: CallIds) -> None:
        self._closed = True  # the blocks decoded are closed ones, until the output ends
        super().__init__(lambda block: cwm_call(block, commands=self._closed), ids, CWM_OPEN, CWM_CLOSE)

    def finish(self) -> list[Piece]:
        """Decode a block the output cut (JSON arguments only), or release what is held, at the end."""
        self._closed = False
        return super().finish()


def _blocks(decode: Decoder, markup: CallMarkup, open_tag: str, close_tag: str) -> ToolFormat:
    """Calls in ``open_tag ... close_tag`` blocks amid text, each block read whole by ``decode``."""
    return ToolFormat(lambda ids, _: TaggedCallParser(decode, ids, open_tag, close_tag), markup)


def _keyed_section(
    markup: CallMarkup,
    keys: KeyedTags,
    call_open: str,
    call_close: str,
    ends_reasoning: tuple[str, ...] = (),
    wrap: Callable[[TaggedCallParser], ToolParser] = lambda parser: parser,
) -> ToolFormat:
    """A section of GLM-like calls whose values are typed by the request's schemas (``wrap``: what the section
    parser is fed through)."""
    section_close = markup.closing
    return ToolFormat(
        lambda ids, schemas: wrap(
            TaggedCallParser(
                lambda text: tagged_blocks(text, call_open, call_close, lambda block: keyed_call(block, keys, schemas)),
                ids,
                markup.tag,
                section_close,
            )
        ),
        markup,
        typed=True,
        extra=keys.tags,
        ends_reasoning=ends_reasoning,
    )


def _keyed_blocks(markup: CallMarkup, keys: KeyedTags, close_tag: str) -> ToolFormat:
    """GLM-like calls a tagged block each, values typed by the request's schemas."""
    return ToolFormat(
        lambda ids, schemas: TaggedCallParser(
            lambda block: keyed_call(block, keys, schemas), ids, markup.tag, close_tag
        ),
        markup,
        typed=True,
        extra=keys.tags,
    )


def _enveloped(markup: CallMarkup, form: XmlCallForm, close_tag: str) -> ToolFormat:
    """Sections of invokes in an enveloped turn (headers and terminators dropped, the bodies read)."""
    members = form.arguments
    return ToolFormat(
        lambda ids, schemas: EnvelopedCallParser(
            TaggedCallParser(lambda block: xml_calls(block, form, schemas), ids, markup.tag, close_tag)
        ),
        markup,
        typed=True,
        extra=(*SPECIAL_TOKENS, members.key_begin, members.key_end, members.value_end),
    )


def _invokes(markup: CallMarkup, close_tag: str, invoke: str, ends_reasoning: tuple[str, ...] = ()) -> ToolFormat:
    """MiniMax-M2-like invokes (``<{invoke}invoke name="NAME">`` members ``</{invoke}invoke>``) in a section."""
    form = XmlCallForm(f'<{invoke}invoke name="', '">', f"</{invoke}invoke>", TAGGED_ARGUMENTS[markup.arguments])
    return XmlFamily(markup, markup.tag, close_tag, form, ends_reasoning=ends_reasoning).tool_format()


# --tool-parser name -> its format.
TOOL_FORMATS: dict[str, ToolFormat] = {
    "qwen25_coder": _blocks(named_calls, QWEN25_CODER, QWEN25_CODER_OPEN, QWEN25_CODER_CLOSE),
    # Its JSON list or LFM2's Python one: the same tokens hold either (lfm2_calls says why).
    "openpangu": _blocks(lfm2_calls, OPENPANGU, PANGU_OPEN, PANGU_CLOSE),
    "plamo3": _blocks(plamo3_calls, PLAMO3, PLAMO_REQUESTS, PLAMO_REQUESTS_END),
    "gigachat35": _invokes(GIGACHAT35, f"</{GCML}tool_calls>", GCML),
    "dots": _invokes(DOTS, "</dots_function_call>", ""),
    # Its reasoning may end at the section's opening, unclosed, as V4's does.
    "deepseek_v41": _invokes(DEEPSEEK_V41, f"</{DSML} calls>", f"{DSML} ", ends_reasoning=(DEEPSEEK_V41.tag,)),
    # A checkpoint's suffix taken off its tags first (ovserve.service.parsing.suffixed_tags).
    "hy_v4": _keyed_section(HY_V4, HY_V4_KEYS, "<tool_call>", "</tool_call>", wrap=UnsuffixedCallParser),
    # K2 Horizon's reasoning may end at its call section's opening, unclosed (as vLLM's k2_horizon reads it).
    "k2_horizon": _keyed_section(
        K2_HORIZON, IFM_KEYS, "<ifm|tool_call>", "</ifm|tool_call>", ends_reasoning=(K2_HORIZON.tag,)
    ),
    "iquest_coder_v2": _keyed_blocks(IQUEST_CODER_V2, HY_V4_KEYS, IQUEST_CODER_V2_CLOSE),
    # Its blocks' framing (roles, kinds, text blocks' ends) taken out of the text first.
    "inkling": ToolFormat(
        lambda ids, _: InklingCallParser(TaggedCallParser(inkling_call, ids, INKLING_CALL, INKLING_END)),
        INKLING,
        extra=INKLING_FRAMING,
        text_parser=inkling_text,
    ),
    "onyx": _enveloped(ONYX, ATEM_FORM, ATEM_CLOSE),
    # At the reply's start (the prompt ends with the header's "assistant"), or after text, in a message of its own.
    "hyperclovax_seed_think_14b": ToolFormat(
        lambda ids, _: TrailingCallParser(hyperclovax_calls, ids, (HCX_ROLE,), (f"{HCX_ASSISTANT} {HCX_ROLE}",)),
        HYPERCLOVAX_14B,
    ),
    "granite_pythonic": ToolFormat(lambda ids, _: LineCallParser(python_call_lines, ids), GRANITE_PYTHONIC),
    "step_audio_2": _blocks(step_audio_2_call, STEP_AUDIO_2, "<tool_call>", "</tool_call>"),
    "cwm": ToolFormat(lambda ids, _: _CommandBlocks(ids), CWM),
}
# PLaMo 3: its own think tags (not single tokens: a tag is written in three).
PLAMO3_THINK = ThinkMarkup("<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>")
# K2 Horizon: the block's tags name the reasoning effort the request asked for (high, medium, low).
K2_HORIZON_THINK = ThinkMarkup(
    "<ifm|think>", "</ifm|think>", other_begins=("<ifm|think_fast>", "<ifm|think_faster>"),
    other_ends=("</ifm|think_fast>", "</ifm|think_faster>"),
)  # fmt: skip
ATEM_TO_USER = f"{ROLE} {RECIPIENT}user{MESSAGE}"  # the header of a message to the user, after <|start|>
# ATEM: reasoning is the first message, to the model itself; the answer a message to the user after it, its header
# with <|start|> where the detokenizer keeps that special token (the onyx tool format keeps it for its envelope),
# without where it drops it.
ONYX_THINK = ThinkMarkup(
    "to=self<|message|>", "<|eom|>", after="", reply=(f"{START}{ATEM_TO_USER}", "<|eot|>"),
    other_reply_openings=(ATEM_TO_USER,),
)  # fmt: skip
# HyperCLOVA X SEED Think 14B: reasoning after "/think" (the prompt's or its own), to the next assistant message's
# header; ChatML's <|im_end|> closes the reply after it too.
HYPERCLOVAX_14B_THINK = ThinkMarkup(
    "/think\n", f"{HCX_END}\n<|im_start|>{HCX_ASSISTANT}", after="", reply=("", HCX_END)
)
# Inkling: a thinking block, ended like every block by <|end_message|> (or where sampling ends it); the reply is a
# text block after it, its framing taken out by the tool format (ovserve.service.parsing.inkling).
INKLING_THINK = ThinkMarkup(CONTENT_THINKING, INKLING_END, other_ends=(END_SAMPLING,), after="")

# --reasoning-parser name -> its block's delimiters.
REASONING_FORMATS: dict[str, ThinkMarkup] = {
    "plamo3": PLAMO3_THINK,
    "k2_horizon": K2_HORIZON_THINK,
    "inkling": INKLING_THINK,
    "onyx": ONYX_THINK,
    "hyperclovax_seed_think_14b": HYPERCLOVAX_14B_THINK,
}
# Format name -> the families it serves (README's table of formats: ovserve.service.parsing.formats_table).
TOOL_FAMILIES: dict[str, str] = {
    "qwen25_coder": "Qwen2.5-Coder (the tools-tag form of its few-shot prompts)",
    "openpangu": "openPangu, Pangu",
    "plamo3": "PLaMo 3",
    "gigachat35": "GigaChat 3.5",
    "dots": "dots.llm",
    "deepseek_v41": "DeepSeek V4.1",
    "hy_v4": "Hunyuan 4 (Hy4; a checkpoint's suffixed tags read as the plain ones)",
    "k2_horizon": "K2 Horizon",
    "step_audio_2": "Step-Audio 2",
    "cwm": "CWM",
    "granite_pythonic": "Granite 3.3, 4.0 under a pythonic chat template (a call a line, no markup)",
    "hyperclovax_seed_think_14b": "HyperCLOVA X SEED Think 14B",
    "iquest_coder_v2": "iQuest Coder V2",
    "inkling": "Inkling",
    "onyx": "Onyx, MuseGlimmer (ATEM)",
}
REASONING_FAMILIES: dict[str, str] = {
    "hyperclovax_seed_think_14b": "HyperCLOVA X SEED Think 14B",
    "plamo3": "PLaMo 3",
    "k2_horizon": "K2 Horizon",
    "inkling": "Inkling",
    "onyx": "Onyx, MuseGlimmer (ATEM)",
}
# Other servers' names (vLLM's, OVMS's) for these formats: {"tool": {alias: name}, "reasoning": {...}}.
ALIASES: dict[str, dict[str, str]] = {
    "tool": {
        # vLLM's parsers that read an existing format's markup (each alias is tested on its parser's examples).
        "qwen2_5_coder": "qwen25_coder",
        "openpangu_v2": "openpangu",
        "pangu": "openpangu",
        "qwen35coder": "qwen3_coder",  # Qwen3CoderToolParser's subclass, streaming changed only
        "mimov2_flash": "qwen3_coder",  # <tool_call><function=NAME><parameter=KEY>VALUE</parameter>...
        "iquest_coder": "qwen3_coder",  # Qwen3CoderToolParser's subclass (whitespace between calls dropped)
        "spark3": "glm45",  # <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>
        "intern_s1": "internlm",  # Internlm2ToolParser's subclass: <|action_start|><|plugin|>{...}<|action_end|>
        "qwen3coder_rl": "qwen3_coder",  # <tool_call><function=NAME><parameter=KEY>..., read as Qwen3-Coder's
        "hyperclovax_seed_think": "glm45",  # <tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>
        # vLLM's parser-engine families whose grammar is another family's (vllm/parser/*.py).
        "berrylm": "qwen3_coder",  # <tool_call>\n<function=NAME>\n<parameter=KEY>VALUE</parameter>...
        "minicpmv": "qwen3_coder",  # "MiniCPM-V emits the same XML tool call syntax as Qwen3-Coder"
        "kolibri1": "hermes",  # "Kolibri 1 emits Hermes tool calls"
        # OVMS's names (--tool_parser) not already another group's.
        "qwen3": "hermes",  # OVMS builds Qwen3's tool grammar as Hermes 3's: <tool_call>{...}</tool_call>
        "deepseek": "deepseek_v3",  # OVMS's DeepSeek parser: V3 / R1's sections, fenced JSON arguments
        "muse_glimmer": "onyx",  # vLLM's name for the ATEM format OVMS calls onyx
    },
    "reasoning": {
        # vLLM's reasoning parsers that read <think>...</think> (DeepSeek R1's, or a subclass of it or of the
        # plain thinking parser; the opening tag may be the prompt's).
        **dict.fromkeys(
            [
                "gigachat35",
                "hy_v4",  # unsuffixed tags, as its tool format
                "openpangu_v2",
                "pangu",
                "intern_s1",
                "iquest",
                "iquest_coder",
                "iquest_coder_v2",
                "hyperclovax_seed_think",
                "deepseek_v31",
                "deepseek_v41",
                "exaone4",
                "kimi_k25",  # Kimi K2's: the call section may end it unclosed (kimi_k2's format ends it there)
                "telechat",
                "telechat4",
                "xing4_0",
                "xingchen4",
                "minimax_m2_sanitized",  # MiniMax-M2's, the content's paths normalised
                "nemotron",
                "glm",
                "berrylm",
                "minicpmv",
                # OVMS's names (--reasoning_parser)
                "minicpm5",
                "lfm2",  # OVMS's Lfm25ReasoningParser
                "granite42",  # OVMS's port of IBM's Granite 4.2 thinking parser: <think>, DeepSeek R1's grammar
            ],
            "think",
        ),
        "kolibri1": "qwen3",  # Qwen3's grammar, the start state chosen by its template
        "muse_glimmer": "onyx",
    },
}
# Template markup (a string, or several that must all appear) -> the parser it calls for (checked after
# formats.py's own entries, in this order). Only markup no other family's template holds.
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    (PLAMO_REQUESTS, "plamo3"),
    (f"{GCML}invoke", "gigachat35"),
    ("<dots_function_call>", "dots"),
    ("<ifm|tool_call>", "k2_horizon"),
    (f"{CWM_OPEN} function>", "cwm"),
    (IQUEST_CODER_V2_OPEN, "iquest_coder_v2"),
    ((DSML, " calls>"), "deepseek_v41"),
    (INKLING_CALL, "inkling"),
    (ATEM_OPEN, "onyx"),
]
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    (PLAMO3_THINK.begin, "plamo3"),
    (K2_HORIZON_THINK.begin, "k2_horizon"),
    (INKLING_THINK.begin, "inkling"),
    ("to=self<|message|>", "onyx"),
]
