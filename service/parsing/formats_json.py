"""Tool and reasoning formats of the families whose calls carry JSON arguments (or Python-style calls).

Each table here is merged into ovserve.service.parsing.formats' own (TOOL_PARSERS, REASONING_PARSERS, ALIASES and the
template markup tables), so a format is written once, here, and named on the command line like any other.
The markup of each format is its chat template's (ovserve.service.parsing.calls_json), so rendering a known call
through the template finds it; the decoders there read what the models write.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ovserve.service.parsing import calls, calls_json
from ovserve.service.parsing.calls_json import (
    ACTION_CLOSE,
    ACTION_OPEN,
    ACTION_WORD,
    APRIEL,
    APRIEL_THINK,
    COHERE2_MOE_THINK,
    COHERE_THINK,
    COMMAND_R7B,
    COMMAND_R_PLUS,
    FUNCTION_CALL,
    FUNCTION_CLOSE,
    FUNCTION_OPEN,
    FUNCTIONARY_V31,
    FUNCTIONARY_V32,
    GRANITE_20B_FC,
    INTERNLM,
    JSON_FENCE,
    LONGCAT,
    LONGCAT_CLOSE,
    LONGCAT_OPEN,
    LONGCAT_THINK,
    MINIMAX,
    NEMOTRON_CLOSE,
    NEMOTRON_JSON,
    NEMOTRON_OPEN,
    PLUGIN_CLOSE,
    PLUGIN_OPEN,
    RECIPIENT,
    TEXT_RECIPIENT,
    TOOL_CALLS_CLOSE,
    TOOL_CALLS_OPEN,
    XLAM,
    RecipientCallParser,
)
from ovserve.service.parsing.detection import PROBE_ARGUMENTS, PROBE_NAME
from ovserve.service.parsing.markup import CallMarkup, ThinkMarkup
from ovserve.service.parsing.tool_format import ToolFormat
from ovserve.service.parsing.tools import Decoder, TaggedCallParser, TrailingCallParser


def _tagged(decode: Decoder, markup: CallMarkup, open_tag: str, close_tag: str) -> ToolFormat:
    """Calls in ``open_tag ... close_tag`` blocks amid text, each block read whole by ``decode``."""
    return ToolFormat(lambda ids, _: TaggedCallParser(decode, ids, open_tag, close_tag), markup)


def _trailing(decode: Decoder, markup: CallMarkup, start: tuple[str, ...], anywhere: tuple[str, ...]) -> ToolFormat:
    """Calls that take up the rest of the reply from a marker on (``start``: only at the reply's start)."""
    return ToolFormat(lambda ids, _: TrailingCallParser(decode, ids, start, anywhere), markup)


# --tool-parser name -> its format.
TOOL_FORMATS: dict[str, ToolFormat] = {
    "functionary_v3_1": _tagged(calls_json.functionary_v31_call, FUNCTIONARY_V31, FUNCTION_OPEN, FUNCTION_CLOSE),
    # The prompt writes the first ">>>", so the markup leaves it out (a forced call must not write it twice); a
    # past call in the template has it: detection looks for that writing.
    "functionary_v3_2": ToolFormat(
        lambda ids, _: RecipientCallParser(ids),
        FUNCTIONARY_V32,
        written=(f"{RECIPIENT}{PROBE_NAME}\n{json.dumps(PROBE_ARGUMENTS)}",),
        text_openings=(f"{RECIPIENT}{TEXT_RECIPIENT}\n", f"{TEXT_RECIPIENT}\n"),
    ),
    "nemotron_json": _tagged(calls_json.named_calls, NEMOTRON_JSON, NEMOTRON_OPEN, NEMOTRON_CLOSE),
    # Apriel and MiniMax share the tags (and the decoder: a list, or an object a line); each writes its own.
    # Apriel's reasoning has no opening it must write (APRIEL_THINK.implicit): a reply that calls at once, without
    # its [BEGIN FINAL RESPONSE], ends the block where its calls open (its templates write a past call so).
    "apriel": replace(
        _tagged(calls_json.named_calls, APRIEL, TOOL_CALLS_OPEN, TOOL_CALLS_CLOSE), ends_reasoning=(TOOL_CALLS_OPEN,)
    ),
    "minimax": _tagged(calls_json.named_calls, MINIMAX, TOOL_CALLS_OPEN, TOOL_CALLS_CLOSE),
    "command_r7b": _tagged(calls_json.cohere_calls, COMMAND_R7B, ACTION_OPEN, ACTION_CLOSE),
    "command_r_plus": _trailing(calls_json.command_r_plus_calls, COMMAND_R_PLUS, (), (ACTION_WORD,)),
    "internlm": _tagged(calls.hermes_call, INTERNLM, PLUGIN_OPEN, PLUGIN_CLOSE),
    "granite_20b_fc": _trailing(calls_json.function_call_calls, GRANITE_20B_FC, (), (FUNCTION_CALL,)),
    "longcat": _tagged(calls.hermes_call, LONGCAT, LONGCAT_OPEN, LONGCAT_CLOSE),
    "xlam": _trailing(calls_json.xlam_calls, XLAM, ("[", JSON_FENCE), ()),
}
# Format name -> the families it serves (README's table of formats: ovserve.service.parsing.formats_table).
TOOL_FAMILIES: dict[str, str] = {
    "functionary_v3_1": "Functionary v3.1 (Llama 3.1)",
    "functionary_v3_2": "Functionary v3.2",
    "nemotron_json": "Nemotron Nano v2",
    "apriel": "Apriel 1.5, 1.6; Hunyuan A13B; Jamba",
    "minimax": "MiniMax-M1",
    "command_r7b": "Command R7B, Command A, Cohere2 MoE",
    "command_r_plus": "Command R+ (its tool_use template)",
    "internlm": "InternLM 2",
    "granite_20b_fc": "granite-20b-functioncalling",
    "longcat": "LongCat",
    "xlam": "xLAM (its template writes Mistral's list: either format reads the other's)",
}
# --reasoning-parser name -> its block's delimiters.
REASONING_FORMATS: dict[str, ThinkMarkup] = {
    "command_r7b": COHERE_THINK,
    "cohere2_moe": COHERE2_MOE_THINK,
    "apriel": APRIEL_THINK,
    "longcat": LONGCAT_THINK,
}
REASONING_FAMILIES: dict[str, str] = {
    "command_r7b": "Command R7B, Command A Reasoning",
    "cohere2_moe": "Cohere2 MoE",
    "apriel": "Apriel 1.5, 1.6",
    "longcat": "LongCat",
}
# Other servers' names (vLLM's, OVMS's) for these formats: {"tool": {alias: name}, "reasoning": {...}}.
ALIASES: dict[str, dict[str, str]] = {
    "tool": {
        "functionary_v3_1_llama_3_1": "functionary_v3_1",  # llama.cpp's name
        "firefunction_v2": "phi4_mini_json",  # " functools[...]": Phi-4-mini's markup
        "nemotron_nano_v2": "nemotron_json",
        "jamba": "apriel",  # vLLM's jamba and hunyuan_a13b read the same <tool_calls>[...] list
        "hunyuan_a13b": "apriel",
        "minimax_m1": "minimax",
        "cohere_command": "command_r7b",
        "cohere_command3": "command_r7b",  # vLLM's names (Command A / R7B, and Command A Reasoning)
        "cohere_command4": "command_r7b",
        "internlm2": "internlm",
        "granite-20b-fc": "granite_20b_fc",  # vLLM's spelling
        "ernie45": "hermes",  # <tool_call>\n{...}\n</tool_call>, as vLLM's granite4 reads Granite 4's
        "granite4": "hermes",
    },
    "reasoning": {
        "cohere_command": "command_r7b",
        "cohere_command3": "command_r7b",
        "cohere_command4": "cohere2_moe",  # the Cohere2 MoE template's <|START_TEXT|> replies
        "minimax_m1": "think",
    },
}
# Template markup (a string, or several that must all appear) -> the parser it calls for (checked after
# formats.py's own entries, in this order). Rendering a known call finds these formats first; these strings are
# what each template tells its model to write, for a template that renders no call.
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    ("<{start_tag}={function_name}>", "functionary_v3_1"),  # its instructions spell the tag out in parts
    ((RECIPIENT + "all", RECIPIENT + "${recipient}"), "functionary_v3_2"),
    (NEMOTRON_OPEN, "nemotron_json"),
    (ACTION_OPEN, "command_r7b"),
    ((ACTION_WORD, JSON_FENCE, '"tool_name"'), "command_r_plus"),
    (("[BEGIN FINAL RESPONSE]", TOOL_CALLS_OPEN), "apriel"),
    (TOOL_CALLS_OPEN + "[", "apriel"),
    (TOOL_CALLS_OPEN, "minimax"),
    (PLUGIN_OPEN, "internlm"),
    (FUNCTION_CALL + " ", "granite_20b_fc"),
    (LONGCAT_OPEN, "longcat"),
]
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    ((COHERE_THINK.begin, "<|START_TEXT|>"), "cohere2_moe"),
    (COHERE_THINK.begin, "command_r7b"),
    (APRIEL_THINK.end, "apriel"),
    (LONGCAT_THINK.begin, "longcat"),
    # MiniMax-M1 thinks in <think> blocks its template never mentions (vLLM's minimax_m1 reads them).
    (("<beginning_of_sentence>", TOOL_CALLS_OPEN), "think"),
]
