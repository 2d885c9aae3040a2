"""Tool and reasoning formats of the families whose calls are Python-style or another non-JSON syntax
(LFM2, Olmo 3, FunctionGemma, Apertus, GigaChat 3, Mistral's ``[ARGS]`` form, RWKV), and reasoning-only formats.

Each table here is merged into ovserve.service.parsing.formats' own (TOOL_PARSERS, REASONING_PARSERS, ALIASES and the
template markup tables), so a format is written once, here, and named on the command line like any other.
Each CallMarkup writes a call as its family's chat template renders one (tests/data/chat_templates).
"""

from __future__ import annotations

import json

from ovserve.service.parsing import calls
from ovserve.service.parsing.calls_python import (
    FUNCTIONGEMMA_ESCAPE,
    GIGACHAT3_CALL,
    GIGACHAT31_CALL,
    GIGACHAT_MESSAGE_SEP,
    RWKV_MARKER,
    apertus_calls,
    functiongemma_call,
    gigachat_call,
    lfm2_calls,
    python_call_lines,
    rwkv_calls,
)
from ovserve.service.parsing.detection import PROBE_ARGUMENTS, PROBE_CALL_ID, PROBE_NAME
from ovserve.service.parsing.markup import THINK_INLINE, CallMarkup, ThinkMarkup
from ovserve.service.parsing.tool_format import ToolFormat, mistral_call_id, mistral_fit_call_id
from ovserve.service.parsing.tools import Decoder, TaggedCallParser, TrailingCallParser

# LFM2 / LFM2.5: a Python list of calls between special tokens (LFM2.5-8B-A1B.jinja writes string values in
# single quotes, which the parser reads as any Python string).
LFM2_START, LFM2_END = "<|tool_call_start|>", "<|tool_call_end|>"
LFM2 = CallMarkup(LFM2_START + "[", "{name}(", ")", ", ", "]" + LFM2_END, arguments="python", tag=LFM2_START)
# Olmo 3: one Python call a line inside <function_calls> (its template writes the assistant's function_calls
# field there; the system turn lists the tools in <functions>).
OLMO3_START, OLMO3_END = "<function_calls>", "</function_calls>"
OLMO3 = CallMarkup(OLMO3_START, "{name}(", ")", "\n", OLMO3_END, arguments="python", tag=OLMO3_START)
# FunctionGemma: Gemma 4's call:NAME{...} between its own tokens; calls back to back.
FUNCTIONGEMMA_START, FUNCTIONGEMMA_END = "<start_function_call>", "<end_function_call>"
FUNCTIONGEMMA = CallMarkup(
    "", FUNCTIONGEMMA_START + "call:{name}", FUNCTIONGEMMA_END, "", "", name="bare", tag=FUNCTIONGEMMA_START
)
# Apertus: a JSON list of {"NAME": arguments} between special tokens.
APERTUS_START, APERTUS_END = "<|tools_prefix|>", "<|tools_suffix|>"
APERTUS = CallMarkup(APERTUS_START + "[", "{{name}: ", "}", ", ", "]" + APERTUS_END, tag=APERTUS_START)
# GigaChat 3: the assistant's message ends, a message of the "function call" role holds one JSON call.
# GigaChat 3.1: <|function_call|> and the JSON call inside the assistant's message. One call a turn: the
# templates render only the first.
_GIGACHAT_CALL = '{"name": {name}, "arguments": '
GIGACHAT3 = CallMarkup(GIGACHAT_MESSAGE_SEP + "\n\n" + GIGACHAT3_CALL, _GIGACHAT_CALL, "}", "", "", parallel=False)
GIGACHAT31 = CallMarkup(GIGACHAT31_CALL, _GIGACHAT_CALL, "}", "", "", parallel=False, tag=GIGACHAT31_CALL)
# Mistral's tokenizer v11+ form (Ministral 3, Mistral Small 3.2, Devstral): each call [TOOL_CALLS]NAME[ARGS]{...}.
MISTRAL_ARGS = CallMarkup("", calls.MISTRAL_TAG + "{name}" + calls.MISTRAL_ARGS, "", "", "", name="bare")
# RWKV (vLLM's rwkv parser; its World template shows no tools): a bold marker and a ```json fence a call.
RWKV = CallMarkup("", RWKV_MARKER + '\n```json\n{"name": {name}, "arguments": ', "}\n```", "\n", "")

# Reasoning blocks whose delimiters are not <think>...</think>, or that wrap the reply after it.
MISTRAL_THINK = ThinkMarkup("[THINK]", "[/THINK]")  # Magistral, Ministral 3 reasoning (special tokens)
# Hunyuan A13B: its reply in <answer> tags, opening with "assistant" and a full-width colon, as its template writes
# past replies and its tool prompt asks.
HUNYUAN_REPLY_PREFIX = "助手："  # noqa: RUF001
HUNYUAN_THINK = ThinkMarkup("<think>", "</think>", reply=("<answer>", "</answer>"), reply_prefix=HUNYUAN_REPLY_PREFIX)
SOLAR_OPEN2_THINK = ThinkMarkup("<|think:start|>", "<|think:end|>")  # Solar Open 2 (its template opens it)
APERTUS_THINK = ThinkMarkup("<|inner_prefix|>", "<|inner_suffix|>")  # Apertus' deliberation
# EXAONE Deep: its template opens <thought> at the prompt's end and cuts a past reply's block out at </thought>.
EXAONE_DEEP_THINK = ThinkMarkup("<thought>", "</thought>")
# MiniCPM3: its tool prompt asks for the thought before the calls between these; its template writes a past turn's
# there (read as ``thought``: ovserve.service.engine.template_probe).
MINICPM3_THINK = ThinkMarkup("<|thought_start|>", "<|thought_end|>")
# Marco-o1: its system prompt asks for the thinking in <Thought> and the answer in <Output> tags.
MARCO_O1_OUTPUT = ("<Output>", "</Output>")
MARCO_O1_THINK = ThinkMarkup("<Thought>", "</Thought>", reply=MARCO_O1_OUTPUT)


def _tagged(decode: Decoder, markup: CallMarkup, close: str, extra: tuple[str, ...] = ()) -> ToolFormat:
    """A format whose calls are blocks from ``markup.tag`` to ``close`` amid the reply."""
    return ToolFormat(lambda ids, _: TaggedCallParser(decode, ids, markup.tag, close), markup, extra=extra)


def _gigachat(markup: CallMarkup) -> ToolFormat:
    """GigaChat 3 / 3.1: the call after the reply's text; either family's markup is read."""
    markers = (GIGACHAT_MESSAGE_SEP, GIGACHAT3_CALL.strip(), GIGACHAT31_CALL)
    return ToolFormat(lambda ids, _: TrailingCallParser(gigachat_call, ids, (), markers), markup, extra=markers)


# --tool-parser name -> its format.
TOOL_FORMATS: dict[str, ToolFormat] = {
    "lfm2": _tagged(lfm2_calls, LFM2, LFM2_END),
    "olmo3": _tagged(python_call_lines, OLMO3, OLMO3_END),
    "functiongemma": _tagged(functiongemma_call, FUNCTIONGEMMA, FUNCTIONGEMMA_END, (FUNCTIONGEMMA_ESCAPE,)),
    "apertus": _tagged(apertus_calls, APERTUS, APERTUS_END),
    "gigachat3": _gigachat(GIGACHAT3),
    "gigachat3_1": _gigachat(GIGACHAT31),
    "mistral_args": ToolFormat(
        lambda ids, _: TrailingCallParser(calls.mistral_calls, ids, (), (calls.MISTRAL_TAG,)),
        MISTRAL_ARGS,
        call_id=mistral_call_id,
        fit_call_id=mistral_fit_call_id,
        extra=(calls.MISTRAL_TAG, calls.MISTRAL_ARGS, calls.MISTRAL_CALL_ID),
        # Mistral Small 3.2's template writes each past call's id too.
        written=(
            f"{calls.MISTRAL_TAG}{PROBE_NAME}{calls.MISTRAL_CALL_ID}{PROBE_CALL_ID}{calls.MISTRAL_ARGS}"
            f"{json.dumps(PROBE_ARGUMENTS)}",
        ),
    ),
    "rwkv": ToolFormat(lambda ids, _: TrailingCallParser(rwkv_calls, ids, (RWKV_MARKER,), (RWKV_MARKER,)), RWKV),
}
# Format name -> the families it serves (README's table of formats: ovserve.service.parsing.formats_table).
TOOL_FAMILIES: dict[str, str] = {
    "lfm2": "LFM2, LFM2.5, MiniCPM 3/4 (their Python calls in a fence between the same tokens)",
    "olmo3": "Olmo 3",
    "functiongemma": "FunctionGemma",
    "apertus": "Apertus",
    "gigachat3": "GigaChat 3",
    "gigachat3_1": "GigaChat 3.1",
    "mistral_args": "Devstral, Ministral 3, Mistral Small 3.2 (Mistral's tokenizer v11+ form)",
    "rwkv": "RWKV (by name: its World template shows no tools)",
}
# --reasoning-parser name -> its block's delimiters.
REASONING_FORMATS: dict[str, ThinkMarkup] = {
    "mistral": MISTRAL_THINK,  # vLLM's name
    "hunyuan_a13b": HUNYUAN_THINK,
    "solar_open2": SOLAR_OPEN2_THINK,
    "apertus": APERTUS_THINK,
    "exaone_deep": EXAONE_DEEP_THINK,
    "marco_o1": MARCO_O1_THINK,
    "minicpm3": MINICPM3_THINK,
    "minimax_m2_append_think": THINK_INLINE,  # vLLM's name; MiniMax-M2's card recommends it
}
REASONING_FAMILIES: dict[str, str] = {
    "mistral": "Magistral, Ministral 3 reasoning",
    "hunyuan_a13b": "Hunyuan A13B",
    "solar_open2": "Solar Open 2",
    "apertus": "Apertus",
    "exaone_deep": "EXAONE Deep",
    "marco_o1": "Marco-o1",
    "minicpm3": "MiniCPM3 (its thought before its calls)",
    "minimax_m2_append_think": "MiniMax-M2, its thought block kept in the content (vLLM's name)",
}
# Other servers' names (vLLM's, OVMS's) for these formats: {"tool": {alias: name}, "reasoning": {...}}.
ALIASES: dict[str, dict[str, str]] = {
    "tool": {},  # vLLM names these formats as they are named here (gigachat3 covers both GigaChat markups there)
    # vLLM's reasoning parsers whose block is <think>...</think> as ovserve's "think" splits it: a block the
    # prompt opened (DeepSeek V3 thinking, MiniMax-M2, Step3, Olmo 3) is known from the prompt's end, and the
    # whitespace by the tags (Step3p5) is dropped. Ernie 4.5 wraps its reply in <response> as Granite 3.3 does.
    "reasoning": {
        "deepseek_v3": "think", "holo2": "think", "glm47": "think", "kimi_k2": "think", "mimo": "think",
        "minimax_m2": "think", "nemotron_v3": "think", "olmo3": "think", "step3": "think", "step3p5": "think",
        "poolside_v1": "think", "rwkv": "think", "ernie45": "granite_think",
        "granite_thinking_parser": "think",  # Granite 4.2's <think> block (vLLM's engine adapter registers this)
    },
}  # fmt: skip
# Template markup (a string, or several that must all appear) -> the parser it calls for (checked after
# formats.py's own entries, in this order).
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    (LFM2_START, "lfm2"),  # LFM2.5-8B-A1B renders calls between these tokens
    ("<|tool_list_start|>", "lfm2"),  # LFM2-8B-A1B renders none, but lists the tools between these
    ("List of tools: [", "lfm2"),  # LFM2.5-Instruct: neither; the tool list's words are LFM2's alone
    ((OLMO3_START, "<functions>"), "olmo3"),
    (FUNCTIONGEMMA_START, "functiongemma"),
    (APERTUS_START, "apertus"),
    (GIGACHAT31_CALL, "gigachat3_1"),
    ("'function call'", "gigachat3"),  # GigaChat 3 names the call message's role
    ((calls.MISTRAL_TAG, calls.MISTRAL_ARGS), "mistral_args"),  # only when formats.py has no "[TOOL_CALLS]" entry
]
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    (MISTRAL_THINK.begin, "mistral"),
    (APERTUS_THINK.begin, "apertus"),
    (SOLAR_OPEN2_THINK.begin, "solar_open2"),
    (EXAONE_DEEP_THINK.begin, "exaone_deep"),
    ((MARCO_O1_THINK.begin, MARCO_O1_OUTPUT[0]), "marco_o1"),
    (MINICPM3_THINK.begin, "minicpm3"),
]
