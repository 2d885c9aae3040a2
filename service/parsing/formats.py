"""Which parsers a model's output needs: named by configuration, or recognised in its chat template."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ovserve.service.parsing import (
    calls,
    detection,
    formats_generic,
    formats_glm,
    formats_json,
    formats_python,
    formats_tail,
    formats_xml,
)
from ovserve.service.parsing.gemma4 import CALL_CLOSE, CALL_OPEN, QUOTE, gemma4_call
from ovserve.service.parsing.harmony import END, START, HarmonyReader, HarmonyTurnParser
from ovserve.service.parsing.markup import (
    DEEPSEEK_CALLS_BEGIN,
    DEEPSEEK_V3,
    DEEPSEEK_V31,
    GEMMA4,
    GEMMA4_THINK,
    GLM45,
    GRANITE,
    GRANITE_TAG,
    GRANITE_TAGGED_THINK,
    GRANITE_THINK,
    HARMONY,
    HARMONY_THINK,
    HERMES,
    KIMI_K2,
    LLAMA3_JSON,
    MISTRAL,
    PHI4_MINI_JSON,
    PYTHONIC,
    QWEN3_CODER,
    THINK,
    CallMarkup,
    ThinkMarkup,
)
from ovserve.service.parsing.reasoning import ThinkSplitter
from ovserve.service.parsing.tagged_calls import Schemas, glm45_call, qwen3_coder_call
from ovserve.service.parsing.tool_format import (
    ToolFormat,
    kimi_call_id,
    mistral_call_id,
    mistral_fit_call_id,
    section_format,
    typed_format,
)
from ovserve.service.parsing.tools import TaggedCallParser, TextOpening, TrailingCallParser
from ovserve.service.parsing.turn import ToolParser, TurnParser

_HERMES = ToolFormat(lambda ids, _: TaggedCallParser(calls.hermes_call, ids), HERMES)
_PYTHONIC = ToolFormat(
    lambda ids, _: TrailingCallParser(calls.pythonic_calls, ids, (calls.PYTHON_TAG, "[")),
    PYTHONIC,
    extra=(calls.PYTHON_TAG,),
)
_PROBE, _PROBE_JSON = detection.PROBE_NAME, json.dumps(detection.PROBE_ARGUMENTS)  # the probe call
_PROBE_CALL = f'"name": "{_PROBE}", "arguments": {_PROBE_JSON}'  # its JSON object's members
# --tool-parser names (with vLLM's aliases) -> the format.
TOOL_PARSERS: dict[str, ToolFormat] = {
    "hermes": _HERMES,
    "qwen": _HERMES,
    "llama3_json": ToolFormat(
        lambda ids, _: TrailingCallParser(calls.llama3_json_calls, ids, (calls.PYTHON_TAG, "{", calls.PYTHON_START)),
        LLAMA3_JSON,
        extra=(calls.PYTHON_TAG, calls.PYTHON_START, calls.PYTHON_END),
    ),
    "pythonic": _PYTHONIC,
    "llama3_pythonic": _PYTHONIC,
    "mistral": ToolFormat(
        lambda ids, _: TrailingCallParser(calls.mistral_calls, ids, ("[{",), (calls.MISTRAL_TAG,)),
        MISTRAL,
        call_id=mistral_call_id,
        fit_call_id=mistral_fit_call_id,
        extra=(calls.MISTRAL_TAG, calls.MISTRAL_ARGS),  # special tokens in Mistral's tokenizers
    ),
    "deepseek_v3": section_format(calls.deepseek_v3_calls, DEEPSEEK_V3),
    "deepseek_v31": section_format(calls.deepseek_v31_calls, DEEPSEEK_V31),
    "kimi_k2": section_format(calls.kimi_k2_calls, KIMI_K2, kimi_call_id, ends_reasoning=(KIMI_K2.opening,)),
    "phi4_mini_json": ToolFormat(
        lambda ids, _: TrailingCallParser(calls.phi4_mini_calls, ids, ('{"',), (PHI4_MINI_JSON.opening,)),
        PHI4_MINI_JSON,
    ),
    "granite": ToolFormat(
        lambda ids, _: TrailingCallParser(calls.granite_calls, ids, ("[{",), (GRANITE_TAG,)),
        GRANITE,
        extra=(calls.TOOL_CALL_END,),
        # llama.cpp's Phi-4-mini template: one call object a block, each closed.
        written=(f"{GRANITE_TAG}{{{_PROBE_CALL}}}{calls.TOOL_CALL_END}",),
    ),
    "qwen3_coder": typed_format(qwen3_coder_call, QWEN3_CODER),
    "glm45": typed_format(glm45_call, GLM45),
    # gpt-oss: the reader of harmony's whole turn; it passes over the messages before a call.
    "openai": ToolFormat(
        lambda ids, _: HarmonyReader(ids),
        HARMONY,
        extra=(START, END),
        # gpt-oss's template puts the recipient before the channel in a past call (ended by <|call|>, or by
        # <|end|> in OVMS's copy).
        written=(f"to=functions.{_PROBE}<|channel|>commentary json<|message|>{_PROBE_JSON}",),
    ),
    "gemma4": ToolFormat(
        lambda ids, _: TaggedCallParser(gemma4_call, ids, CALL_OPEN, CALL_CLOSE),
        GEMMA4,
        extra=(QUOTE,),
        written=(f"{CALL_OPEN}call:{_PROBE}{{city:{QUOTE}Paris{QUOTE},days:3}}{CALL_CLOSE}",),  # its own literals
    ),
    # The other families' formats, by the kind of arguments they write.
    **formats_json.TOOL_FORMATS,
    **formats_xml.TOOL_FORMATS,
    **formats_python.TOOL_FORMATS,
    **formats_tail.TOOL_FORMATS,
    **formats_glm.TOOL_FORMATS,
    **formats_generic.TOOL_FORMATS,
}
# --reasoning-parser names -> their block's delimiters: <think>...</think> but for Granite's words.
THINK_PARSER = "think"  # the commonest block's name: what a template that shows no markup of its own gets
REASONING_PARSERS: dict[str, ThinkMarkup] = {
    THINK_PARSER: THINK,
    "qwen3": THINK,
    "deepseek_r1": THINK,
    "granite": GRANITE_THINK,
    "granite_think": GRANITE_TAGGED_THINK,
    "openai_gptoss": HARMONY_THINK,  # vLLM's name
    "openai": HARMONY_THINK,
    "gemma4": GEMMA4_THINK,
    **formats_json.REASONING_FORMATS,
    **formats_xml.REASONING_FORMATS,
    **formats_python.REASONING_FORMATS,
    **formats_tail.REASONING_FORMATS,
    **formats_glm.REASONING_FORMATS,
    **formats_generic.REASONING_FORMATS,
}
# Other servers' names for these formats (vLLM's --tool-call-parser and --reasoning-parser, OVMS's
# --tool_parser and --reasoning_parser), so a command line written for them works here.
ALIASES: dict[str, dict[str, str]] = {
    "tool": {
        "llama4_json": "llama3_json", "llama4_pythonic": "pythonic", "qwen3_xml": "qwen3_coder", "glm47": "glm45",
        "hermes3": "hermes", "llama3": "llama3_json", "phi4": "phi4_mini_json", "gptoss": "openai",
        "qwen3coder": "qwen3_coder", "devstral": "mistral_args",
    },
    "reasoning": {"gptoss": "openai", "glm45": "think", "granite3.3": "granite_think"},
}  # fmt: skip
# Format name (one per format) -> the families it serves, one line (README's table:
# ovserve.service.parsing.formats_table).
TOOL_FAMILIES: dict[str, str] = {
    "hermes": "Qwen2.5, Qwen3, QwQ, Hermes 2 Pro and 3, Granite 4, MiMo-VL, Reka Edge, Bielik, tiny-chat",
    "llama3_json": "Llama 3.1, 3.2, 3.3",
    "pythonic": "Llama 3.2 and 4 with a pythonic prompt (as vLLM serves them)",
    "mistral": "Mistral 7B v0.3, Mistral Nemo",
    "deepseek_v3": "DeepSeek-V3, DeepSeek-R1 and its distills",
    "deepseek_v31": "DeepSeek-V3.1",
    "kimi_k2": "Kimi K2 Instruct and Thinking",
    "phi4_mini_json": "Phi-4-mini, Firefunction v2",
    "granite": "Granite 3.x",
    "qwen3_coder": "Qwen3-Coder, Qwen3.5, Nemotron 3 Nano, StepFun 3.5 Flash",
    "glm45": "GLM-4.5, 4.6, 4.7; Ling 3; Laguna; Spark 2.5",
    "openai": "gpt-oss (harmony)",
    "gemma4": "Gemma 4",
}
REASONING_FAMILIES: dict[str, str] = {
    "think": "Qwen3, QwQ, DeepSeek-R1, V3.1, V3.2, V4, GLM-4.5+, Kimi K2 Thinking, MiniMax-M1, M2, LFM2.5, ...",
    "granite": "Granite 3.2",
    "granite_think": "Granite 3.3, Ernie 4.5",
    "openai": "gpt-oss",
    "gemma4": "Gemma 4",
}
for _group in (formats_json, formats_xml, formats_python, formats_tail, formats_glm, formats_generic):
    for _kind, _names in _group.ALIASES.items():
        ALIASES[_kind].update(_names)
    TOOL_FAMILIES.update(_group.TOOL_FAMILIES)
    REASONING_FAMILIES.update(_group.REASONING_FAMILIES)
NONE = "none"  # either flag: no parsing of that kind
GENERIC = "generic"  # the format of a template that shows none (formats_generic.py)
HARMONY_PARSER = "openai"  # gpt-oss's tool parser (vLLM's name); its reasoning parser is HARMONY_THINK's

# A chat template that writes this markup (a string, or several that must all appear) -> the tool
# parser it needs (first match wins).
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    ("<function=", "qwen3_coder"),  # before hermes: Qwen3-Coder's calls are <tool_call> blocks too
    ("<arg_key>", "glm45"),  # likewise GLM-4.5+
    ("<tool_call>", "hermes"),
    ("[TOOL_CALLS]", "mistral"),
    ("[func_name1(", "pythonic"),  # Llama 3.2 / 4 pythonic system prompt
    ("<|python_tag|>", "llama3_json"),
    ('"parameters": dictionary of argument name', "llama3_json"),
    ((DEEPSEEK_CALLS_BEGIN, "```json"), "deepseek_v3"),  # V3 / R1 fence the arguments; V3.1 does not
    (DEEPSEEK_CALLS_BEGIN, "deepseek_v31"),
    (KIMI_K2.opening, "kimi_k2"),
    (GRANITE_TAG, "granite"),
    (PHI4_MINI_JSON.opening, "phi4_mini_json"),
    ("<|/tool|>", "phi4_mini_json"),  # Phi-4-mini's own template: the tools between <|tool|> and <|/tool|>
    ("<|channel|>", "openai"),  # harmony's channels: gpt-oss
    (GEMMA4.tag + "call:", "gemma4"),
    *formats_json.TEMPLATE_TOOL_MARKUP,
    *formats_xml.TEMPLATE_TOOL_MARKUP,
    *formats_python.TEMPLATE_TOOL_MARKUP,
    *formats_tail.TEMPLATE_TOOL_MARKUP,
    *formats_glm.TEMPLATE_TOOL_MARKUP,
]
# Likewise for the reasoning parser.
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    (GRANITE_THINK.begin, "granite"),  # Granite 3.2's thinking prompt names the phrases
    (("<think>", "<response>"), "granite_think"),  # Granite 3.3's asks for <think> and <response> tags
    ("<|channel|>", "openai"),
    (GEMMA4_THINK.begin, "gemma4"),
    *formats_json.TEMPLATE_REASONING_MARKUP,
    *formats_xml.TEMPLATE_REASONING_MARKUP,
    *formats_python.TEMPLATE_REASONING_MARKUP,
    *formats_tail.TEMPLATE_REASONING_MARKUP,
    *formats_glm.TEMPLATE_REASONING_MARKUP,
    (THINK.begin, THINK_PARSER),
]


def _template_choice(table: list[tuple[str | tuple[str, ...], str]], chat_template: str) -> str | None:
    """The name of the first entry of ``table`` whose markup the template writes; None if none."""
    found = detection.by_markup(table, [("", chat_template)])
    return None if found is None else found.name


def _writings() -> list[tuple[str, CallMarkup | str]]:
    """Every tool format under its first registered name, with the ways its templates write a call: its
    markup, and the literal writings of the probe call where a family's template writes it otherwise."""
    seen: dict[int, str] = {}
    writings: list[tuple[str, CallMarkup | str]] = []
    for name, chosen in TOOL_PARSERS.items():
        # The generic format is the fallback, never evidence: minja writes past calls in its shape itself for a
        # template it believes cannot render them (its polyfill), whatever the model's own format.
        if id(chosen) in seen or name == GENERIC:
            continue
        seen[id(chosen)] = name
        writings += [(name, chosen.markup), *((name, text) for text in chosen.written)]
    return writings


def detect_tool_parser(
    chat_template: str, render: detection.Render | None, renderings: list[str]
) -> detection.Found | None:
    """The tool format a chat template speaks (see ovserve.service.parsing.detection): the format whose writing of a
    known call the template renders (``renderings``: detection.rendered_calls); else the markup the prompt it
    renders with tools offered, or its source, names; else the generic format. ``render``: the model's renderer
    (None: the source alone is read)."""
    found = detection.by_rendered_call(_writings(), renderings)
    if found is None:
        texts = [("the template", chat_template)]
        if render is not None and (prompt := detection.rendered_tools_prompt(render)):
            texts.insert(0, ("the prompt it writes with tools offered", prompt))
        found = detection.by_markup(TEMPLATE_TOOL_MARKUP, texts)
    if found is None and GENERIC in TOOL_PARSERS:
        found = detection.Found(GENERIC, "the template shows no tool-call format: calls are written as JSON")
    return found


def detect_reasoning_parser(chat_template: str, render: detection.Render | None) -> detection.Found | None:
    """The reasoning format a chat template speaks: the one whose block it writes around a past turn's
    reasoning; else the first whose markup its source names (``TEMPLATE_REASONING_MARKUP``); else, for a
    template whose prompt changes with thinking switched on, ``think``; else none."""
    found = None
    if render is not None:
        found = detection.by_rendered_reasoning(
            REASONING_PARSERS.items(), detection.rendered_reasoning(render)
        ) or detection.by_stripped_reasoning(REASONING_PARSERS.items(), render)
    found = found or detection.by_markup(TEMPLATE_REASONING_MARKUP, [("the template", chat_template)])
    if found is None and render is not None:
        found = detection.by_thinking_switch(THINK_PARSER, render)
    return found


@dataclass(frozen=True)
class OutputFormat:
    """A model's output parsers, by name; None: the model's output is not parsed that way. Each with the
    evidence it was chosen by (shown in the model's listing)."""

    tool_parser: str | None = None
    reasoning_parser: str | None = None
    # Not part of what a format is: two models parsed alike are equal, whatever showed it.
    tool_evidence: str = field(default="", compare=False)
    reasoning_evidence: str = field(default="", compare=False)
    calls_in_content: bool = field(default=False, compare=False)  # past calls written into the content (choose)

    @classmethod
    def choose(
        cls,
        tool_parser: str | None,
        reasoning_parser: str | None,
        chat_template: str,
        render: detection.Render | None = None,
    ) -> OutputFormat:
        """The configured parsers, or those the chat template shows (rendered with ``render`` when given:
        see ``detect_tool_parser``)."""
        renderings = detection.rendered_calls(render) if render is not None else []
        tool = (
            detection.Found(tool_parser, "--tool-parser")
            if tool_parser is not None
            else detect_tool_parser(chat_template, render, renderings)
        )
        reasoning = (
            detection.Found(reasoning_parser, "--reasoning-parser")
            if reasoning_parser is not None
            else detect_reasoning_parser(chat_template, render)
        )
        tool_name = None if tool is None else ALIASES["tool"].get(tool.name, tool.name)
        reasoning_name = None if reasoning is None else ALIASES["reasoning"].get(reasoning.name, reasoning.name)
        tool_name = None if tool_name in (None, NONE) else tool_name
        return cls(
            tool_name,
            None if reasoning_name in (None, NONE) else reasoning_name,
            tool_evidence="" if tool is None else tool.evidence,
            reasoning_evidence="" if reasoning is None else reasoning.evidence,
            # A template that shows a format but drops past calls (LFM2, Granite 3.3, Phi-4-mini): the model
            # would never see its own calls; they are written into the turn's content in its format instead.
            # (The generic format rewrites the whole conversation itself: service/api/generic_tools.py.)
            calls_in_content=bool(
                render is not None and tool_name not in (None, GENERIC) and not detection.renders_calls(renderings)
            ),
        )

    def with_calls_in_content(self, message: dict[str, Any]) -> dict[str, Any]:
        """An assistant message whose calls are written into its content in this model's markup (for a template
        that drops ``tool_calls``: see ``calls_in_content``), and a tool's result under the format's own role
        there (GLM's "observation"); any other message as it is."""
        if self.calls_in_content and self.tool_parser is not None and message.get("role") == "tool":
            return {**message, "role": TOOL_PARSERS[self.tool_parser].result_role}
        calls = message.get("tool_calls")
        if not (self.calls_in_content and calls and self.call_markup is not None):
            return message
        listed = [(call["function"]["name"], _arguments_object(call["function"].get("arguments"))) for call in calls]
        written = detection.written_calls(self.call_markup, listed)
        content = message.get("content") or ""
        rest = {key: value for key, value in message.items() if key != "tool_calls"}
        return {**rest, "content": f"{content}\n{written}" if content else written}

    @property
    def types_arguments(self) -> bool:
        """Whether this model's tool parser types argument values by the tools' schemas (``parser(schemas=)``)."""
        return self.tool_parser is not None and TOOL_PARSERS[self.tool_parser].typed

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

    def parser(
        self,
        *,
        prompt_tail: str = "",
        tools: bool = True,
        max_calls: int | None = None,
        schemas: Schemas | None = None,
    ) -> TurnParser:
        """A parser for one turn.

        ``prompt_tail``: the end of the rendered prompt (a template that ends
        it with an open ``<think>`` makes the output start inside the block);
        ``tools``: whether the request offered tools (without, tool markup is
        left as text, as vLLM does); ``max_calls``: 1 for parallel_tool_calls false;
        ``schemas``: the offered tools' parameter schemas by function name
        (``tool_schemas``), by which formats that write argument values as
        untyped text (Qwen3-Coder, GLM) type them; without, a value is JSON
        when it reads as JSON.
        """
        reasoning = None
        if (think := self.think_markup) is not None and think != HARMONY_THINK:
            opened = self.reasoning_opened(prompt_tail)
            ended_by = () if self.tool_parser is None else TOOL_PARSERS[self.tool_parser].ends_reasoning
            reasoning = ThinkSplitter(
                opened=opened,
                closed=self.reasoning_closed(prompt_tail),
                open_tag=think.begins,
                close_tag=think.ends,
                reply=think.reply,
                reply_openings=think.other_reply_openings,
                reply_prefix=think.reply_prefix,
                turn_end=think.turn_end,
                ended_by=ended_by,
                replying=self.reply_opened(prompt_tail),
                inline=think.inline,
            )
        if self.tool_parser == HARMONY_PARSER or think == HARMONY_THINK:
            # Harmony's channels are one markup: one reader takes the turn, with its calls or without.
            calling = tools and self.tool_parser == HARMONY_PARSER
            reader = HarmonyReader(TOOL_PARSERS[HARMONY_PARSER].call_id, calls=calling)
            return HarmonyTurnParser(reader, reasoning, max_calls)
        tool: ToolParser | None = None
        if self.tool_parser is not None:
            chosen = TOOL_PARSERS[self.tool_parser]
            if tools:
                tool = chosen.new_parser(schemas or {})
            elif chosen.text_parser is not None:
                tool = chosen.text_parser()
            elif chosen.text_openings:
                tool = TextOpening(chosen.text_openings)
        return TurnParser(reasoning, tool, max_calls)

    def reasoning_opened(self, prompt_tail: str) -> bool:
        """Whether a prompt ending in ``prompt_tail`` leaves the reasoning block open (the template wrote its
        opening tag last), so the reply starts inside it."""
        if (think := self.think_markup) is None:
            return False
        if think.implicit:  # the output starts inside the block unless the prompt closed it
            return not self.reasoning_closed(prompt_tail)
        return max(prompt_tail.rfind(tag) for tag in think.begins) > max(prompt_tail.rfind(tag) for tag in think.ends)

    def reply_opened(self, prompt_tail: str) -> bool:
        """Whether a prompt ending in ``prompt_tail`` opened the reply's tags itself (Kimi K3 with thinking off
        ends it with ``<|open|>response<|sep|>``), so the reply's closing tag in the output is markup."""
        think = self.think_markup
        opening = think.reply[0] if think is not None and think.reply is not None else ""
        return bool(opening) and prompt_tail.rstrip().endswith(opening.rstrip())

    def reasoning_closed(self, prompt_tail: str) -> bool:
        """Whether a prompt ending in ``prompt_tail`` ends with the reasoning block's end tag: the template closed
        the block itself (thinking off), so the reply is the content after it."""
        if (think := self.think_markup) is None:
            return False
        return prompt_tail.rstrip().endswith(think.ends)

    @property
    def markup_texts(self) -> tuple[str, ...]:
        """Every string of markup this model's parsers read: the engine keeps the special tokens they contain."""
        texts: list[str] = []
        if self.tool_parser is not None:
            chosen = TOOL_PARSERS[self.tool_parser]
            markup = chosen.markup
            texts += [markup.opening, markup.call_begin, markup.call_end, markup.separator, markup.closing, markup.tag]
            texts += chosen.extra
        if (think := self.think_markup) is not None:
            texts += [*think.begins, *think.ends, think.after or ""]
        return tuple(text for text in texts if text)


def _arguments_object(arguments: Any) -> dict[str, Any]:
    """A call's arguments as an object (a client's history may hold their JSON text)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def tool_schemas(tools: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Function name -> parameters schema of a request's tools, in the chat template's form
    (``{"type": "function", "function": {...}}``) or the Responses API's flat one."""
    schemas = {}
    for tool in tools:
        function = tool.get("function", tool)
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            schemas[function["name"]] = function.get("parameters") or {}
    return schemas


def parser_name_problem(kind: str, name: str) -> str | None:
    """Why ``name`` is not a known ``kind`` ("tool" or "reasoning") parser; None when it is."""
    known = set(TOOL_PARSERS if kind == "tool" else REASONING_PARSERS) | set(ALIASES[kind]) | {NONE}
    return None if name in known else f"unknown {kind} parser {name!r}; known: {', '.join(sorted(known))}"
