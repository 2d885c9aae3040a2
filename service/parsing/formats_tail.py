"""The long tail of other servers' tool and reasoning formats (vLLM's parsers no family here needed first): each a
format of its own, or, where the markup is one ovserve already reads, an alias of that format.

Each table here is merged into service.parsing.formats' own (TOOL_PARSERS, REASONING_PARSERS, ALIASES and the
template markup tables), so a format is written once, here, and named on the command line like any other.
Each CallMarkup writes a call as vLLM's parser for the family documents the model writing it (no published
template of these families is vendored here); the decoders are service.parsing.calls_tail's and the other
groups'.
"""

from __future__ import annotations

from service.parsing.calls_json import NAMED_ARGUMENTS, named_calls
from service.parsing.calls_tail import (
    CWM_CLOSE,
    CWM_OPEN,
    HY_V4_KEYS,
    IFM_KEYS,
    PLAMO_ARGS,
    PLAMO_ARGS_END,
    PLAMO_NAME,
    PLAMO_NAME_END,
    PLAMO_REQUEST,
    PLAMO_REQUEST_END,
    PLAMO_REQUESTS,
    PLAMO_REQUESTS_END,
    KeyedTags,
    cwm_call,
    keyed_call,
    plamo3_calls,
    step_audio_2_call,
    tagged_blocks,
)
from service.parsing.calls_xml import XmlCallForm
from service.parsing.formats_xml import XmlFamily
from service.parsing.markup import GCML, TAGGED_ARGUMENTS, CallMarkup, ThinkMarkup
from service.parsing.tool_format import ToolFormat
from service.parsing.tools import Decoder, TaggedCallParser

# Qwen2.5-Coder (vLLM's qwen25_coder): a call's JSON in a <tools> block (vLLM reads a JSON list there too, and
# several blocks; a forced call writes a block a call, which both read).
QWEN25_CODER_OPEN, QWEN25_CODER_CLOSE = "<tools>", "</tools>"
QWEN25_CODER = CallMarkup(
    "", f"{QWEN25_CODER_OPEN}\n{NAMED_ARGUMENTS}", f"}}\n{QWEN25_CODER_CLOSE}", "\n", "", tag=QWEN25_CODER_OPEN
)
# openPangu (vLLM's openpangu_v2 and pangu): a JSON list of calls between the tokens LFM2 puts its Python list in.
PANGU_OPEN, PANGU_CLOSE = "<|tool_call_start|>", "<|tool_call_end|>"
OPENPANGU = CallMarkup(f"{PANGU_OPEN}[", NAMED_ARGUMENTS, "}", ", ", f"]{PANGU_CLOSE}", tag=PANGU_OPEN)
# PLaMo 3: a requests section of requests, each a name and JSON arguments between tags of their own.
PLAMO3 = CallMarkup(
    PLAMO_REQUESTS, f"{PLAMO_REQUEST}{PLAMO_NAME}{{name}}{PLAMO_NAME_END}{PLAMO_ARGS}",
    f"{PLAMO_ARGS_END}{PLAMO_REQUEST_END}", "", PLAMO_REQUESTS_END, tag=PLAMO_REQUESTS, name="bare",
)  # fmt: skip
# GigaChat 3.5 (GCML): DeepSeek V4's DSML section under its own prefix.
GIGACHAT35 = CallMarkup(
    f"<{GCML}tool_calls>\n", f'<{GCML}invoke name="{{name}}">\n', f"</{GCML}invoke>", "\n", f"\n</{GCML}tool_calls>",
    "gcml", tag=f"<{GCML}tool_calls>", name="bare",
)  # fmt: skip
# dots.llm (vLLM's dots): MiniMax-M2's invokes in a <dots_function_call> section.
DOTS = CallMarkup(
    "<dots_function_call>\n", '<invoke name="{name}">\n', "</invoke>", "\n", "\n</dots_function_call>",
    "minimax_xml", tag="<dots_function_call>", name="bare",
)  # fmt: skip
# Hunyuan 4 (vLLM's hy_v4): GLM-4.7's calls (the name, then the members) in a <tool_calls> section. Checkpoints
# that suffix every tag (<tool_call:SUFFIX>, read off their vocabulary by vLLM) are not served: only bare tags.
HY_V4 = CallMarkup(
    "<tool_calls>", "<tool_call>{name}", "</tool_call>", "", "</tool_calls>", "glm_xml", tag="<tool_calls>",
    name="bare",
)  # fmt: skip
# K2 Horizon (IFM, its default "xml" tool_call_format): the same under ifm| tags.
K2_HORIZON = CallMarkup(
    "<ifm|tool_calls>", "<ifm|tool_call>{name}", "</ifm|tool_call>", "", "</ifm|tool_calls>", "ifm_xml",
    tag="<ifm|tool_calls>", name="bare",
)  # fmt: skip
# Step-Audio 2: a <tool_call> block of three lines, "function", the name, the JSON arguments.
STEP_AUDIO_2 = CallMarkup("", "<tool_call>function\n{name}\n", "</tool_call>", "\n", "", name="bare", tag="<tool_call>")
# CWM (vLLM's cwm, "Cursor-style"): a <tool: function> block, the name then its JSON arguments.
CWM = CallMarkup("", f"{CWM_OPEN} function>\n{{name}} ", f"\n{CWM_CLOSE}", "\n", "", name="bare", tag=CWM_OPEN)


def _blocks(decode: Decoder, markup: CallMarkup, open_tag: str, close_tag: str) -> ToolFormat:
    """Calls in ``open_tag ... close_tag`` blocks amid text, each block read whole by ``decode``."""
    return ToolFormat(lambda ids, _: TaggedCallParser(decode, ids, open_tag, close_tag), markup)


def _keyed_section(markup: CallMarkup, keys: KeyedTags, call_open: str, call_close: str) -> ToolFormat:
    """A section of GLM-like calls whose values are typed by the request's schemas."""
    section_close = markup.closing
    return ToolFormat(
        lambda ids, schemas: TaggedCallParser(
            lambda text: tagged_blocks(text, call_open, call_close, lambda block: keyed_call(block, keys, schemas)),
            ids,
            markup.tag,
            section_close,
        ),
        markup,
        typed=True,
    )


def _invokes(markup: CallMarkup, close_tag: str, invoke: str) -> ToolFormat:
    """MiniMax-M2-like invokes (``<{invoke}invoke name="NAME">`` members ``</{invoke}invoke>``) in a section."""
    form = XmlCallForm(f'<{invoke}invoke name="', '">', f"</{invoke}invoke>", TAGGED_ARGUMENTS[markup.arguments])
    return XmlFamily(markup, markup.tag, close_tag, form).tool_format()


# --tool-parser name -> its format.
TOOL_FORMATS: dict[str, ToolFormat] = {
    "qwen25_coder": _blocks(named_calls, QWEN25_CODER, QWEN25_CODER_OPEN, QWEN25_CODER_CLOSE),
    "openpangu": _blocks(named_calls, OPENPANGU, PANGU_OPEN, PANGU_CLOSE),
    "plamo3": _blocks(plamo3_calls, PLAMO3, PLAMO_REQUESTS, PLAMO_REQUESTS_END),
    "gigachat35": _invokes(GIGACHAT35, f"</{GCML}tool_calls>", GCML),
    "dots": _invokes(DOTS, "</dots_function_call>", ""),
    "hy_v4": _keyed_section(HY_V4, HY_V4_KEYS, "<tool_call>", "</tool_call>"),
    "k2_horizon": _keyed_section(K2_HORIZON, IFM_KEYS, "<ifm|tool_call>", "</ifm|tool_call>"),
    "step_audio_2": _blocks(step_audio_2_call, STEP_AUDIO_2, "<tool_call>", "</tool_call>"),
    "cwm": _blocks(cwm_call, CWM, CWM_OPEN, CWM_CLOSE),
}
# --reasoning-parser name -> its block's delimiters.
REASONING_FORMATS: dict[str, ThinkMarkup] = {}
# Format name -> the families it serves (README's table of formats: service.parsing.formats_table).
TOOL_FAMILIES: dict[str, str] = {
    "qwen25_coder": "Qwen2.5-Coder (its <tools> few-shot form)",
    "openpangu": "openPangu, Pangu",
    "plamo3": "PLaMo 3",
    "gigachat35": "GigaChat 3.5",
    "dots": "dots.llm",
    "hy_v4": "Hunyuan 4 (Hy4; unsuffixed tags)",
    "k2_horizon": "K2 Horizon",
    "step_audio_2": "Step-Audio 2",
    "cwm": "CWM",
}
REASONING_FAMILIES: dict[str, str] = {}
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
    },
    "reasoning": {},
}
# Template markup (a string, or several that must all appear) -> the parser it calls for (checked after
# formats.py's own entries, in this order). Only markup no other family's template holds.
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    (PLAMO_REQUESTS, "plamo3"),
    (f"{GCML}invoke", "gigachat35"),
    ("<dots_function_call>", "dots"),
    ("<ifm|tool_call>", "k2_horizon"),
    (f"{CWM_OPEN} function>", "cwm"),
]
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = []
