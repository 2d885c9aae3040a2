"""Tool and reasoning formats of the families whose calls carry XML-style arguments (one tagged member per argument).

Each table here is merged into ovserve.service.parsing.formats' own (TOOL_PARSERS, REASONING_PARSERS, ALIASES and the
template markup tables), so a format is written once, here, and named on the command line like any other.
Each CallMarkup writes a call exactly as its family's published template renders one (up to whitespace);
its parser reads what the model writes (ovserve.service.parsing.calls_xml).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from ovserve.service.parsing.calls_xml import (
    SOLAR_ARGS,
    SOLAR_CALL_BEGIN,
    SOLAR_CALL_END,
    SOLAR_CALLS,
    SOLAR_CALLS_END,
    SOLAR_NAME,
    XmlCallForm,
    minimax_m3_calls,
    solar_open_calls,
    xml_calls,
)
from ovserve.service.parsing.detection import PROBE_ARGUMENTS, PROBE_CALL_ID, PROBE_NAME
from ovserve.service.parsing.markup import DSML, MINIMAX_NS, TAGGED_ARGUMENTS, CallMarkup, ThinkMarkup
from ovserve.service.parsing.tool_format import ToolFormat
from ovserve.service.parsing.tools import TaggedCallParser


@dataclass(frozen=True)
class XmlFamily:
    """One family's calls: how the model writes them (``markup``), the tags a parser finds them between
    (one call a block, or a section of several), and how a call sits between its own tags (``form``)."""

    markup: CallMarkup
    open_tag: str
    close_tag: str
    form: XmlCallForm
    written: tuple[str, ...] = ()  # the probe call as the family's template writes it, where not as ``markup``
    ends_reasoning: tuple[str, ...] = ()  # markup that also ends an unclosed reasoning block (ToolFormat's)

    def tool_format(self) -> ToolFormat:
        """The format: a tagged-block parser decoding each block's calls, typed by the request's schemas."""
        dialect = self.form.arguments
        return ToolFormat(
            lambda ids, schemas: TaggedCallParser(
                lambda block: xml_calls(block, self.form, schemas), ids, self.open_tag, self.close_tag
            ),
            self.markup,
            typed=True,
            # The members' tags are markup the parser reads too (special tokens in DeepSeek's and Step3's vocabularies).
            extra=tuple(text for text in (dialect.key_begin, dialect.key_end, dialect.json_key_end, dialect.value_end)),
            written=self.written,
            ends_reasoning=self.ends_reasoning,
        )


def _family(
    markup: CallMarkup, close_tag: str, name_begin: str, name_end: str, call_end: str, *, json_body: bool = False
) -> XmlFamily:
    """A family whose calls open with ``markup.tag`` and close with ``close_tag`` (``json_body``: a call's
    arguments may be one JSON object instead of members, XmlCallForm.json_body)."""
    form = XmlCallForm(name_begin, name_end, call_end, TAGGED_ARGUMENTS[markup.arguments], json_body=json_body)
    return XmlFamily(markup, markup.tag, close_tag, form)


# Seed-OSS (ByteDance-Seed-OSS.jinja): one call a <seed:tool_call> block, the name in <function=NAME>.
SEED_OSS = CallMarkup(
    "", "<seed:tool_call>\n<function={name}>\n", "</function>\n</seed:tool_call>", "\n", "", "seed_xml",
    tag="<seed:tool_call>", name="bare",
)  # fmt: skip
# MiniMax-M2 (MiniMax-M2.jinja): one <minimax:tool_call> section, a call an <invoke name="NAME"> in it.
MINIMAX_M2 = CallMarkup(
    "<minimax:tool_call>\n", '<invoke name="{name}">\n', "</invoke>", "\n", "\n</minimax:tool_call>", "minimax_xml",
    tag="<minimax:tool_call>", name="bare",
)  # fmt: skip

# MiniMax-M3 (MiniMax-M3.jinja): M2's section and invokes, each tag after the namespace token ]<]minimax[>[, and
# each argument an element of its own name (objects and arrays nested as elements).
MINIMAX_M3 = CallMarkup(
    f"{MINIMAX_NS}<tool_call>\n", f'{MINIMAX_NS}<invoke name="{{name}}">', f"{MINIMAX_NS}</invoke>", "\n",
    f"\n{MINIMAX_NS}</tool_call>", "minimax_m3_xml", tag=f"{MINIMAX_NS}<tool_call>", name="bare",
)  # fmt: skip


def _dsml(section: str) -> CallMarkup:
    """DeepSeek's DSML: a section of <｜DSML｜invoke name="NAME"> calls; V3.2 names it function_calls, V4 tool_calls."""  # noqa: RUF002
    return CallMarkup(
        f"<{DSML}{section}>\n", f'<{DSML}invoke name="{{name}}">\n', f"</{DSML}invoke>", "\n", f"\n</{DSML}{section}>",
        "dsml", tag=f"<{DSML}{section}>", name="bare",
    )  # fmt: skip


DEEPSEEK_V32, DEEPSEEK_V4 = _dsml("function_calls"), _dsml("tool_calls")
# Step3 (vLLM's step3 parser; no published template here): DeepSeek-like special tokens around steptml invokes.
STEP3_CALLS_BEGIN, STEP3_CALLS_END = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"  # noqa: RUF001
STEP3_CALL_BEGIN, STEP3_SEP, STEP3_CALL_END = "<｜tool_call_begin｜>", "<｜tool_sep｜>", "<｜tool_call_end｜>"  # noqa: RUF001
STEP3 = CallMarkup(
    STEP3_CALLS_BEGIN, f'{STEP3_CALL_BEGIN}function{STEP3_SEP}<steptml:invoke name="{{name}}">',
    f"</steptml:invoke>{STEP3_CALL_END}", "", STEP3_CALLS_END, "steptml", tag=STEP3_CALLS_BEGIN, name="bare",
)  # fmt: skip
# Hunyuan 3 (tencent-Hy3.jinja): GLM's form in a <tool_calls:opensource> section, every tag suffixed :opensource.
HY_V3 = CallMarkup(
    "<tool_calls:opensource>\n", "<tool_call:opensource>{name}<tool_sep:opensource>\n", "</tool_call:opensource>",
    "\n", "\n</tool_calls:opensource>", "hy_xml", tag="<tool_calls:opensource>", name="bare",
)  # fmt: skip
# MiniCPM5 (openbmb-MiniCPM5-1B.jinja): a call a <function name="NAME"> element, values in <param name="KEY">.
MINICPM5 = CallMarkup(
    "", '<function name="{name}">', "</function>", "\n", "", "minicpm_xml", tag='<function name="', name="bare"
)
# Solar Open 2 (vLLM's solar_open2 parser): the name on the opening line, then <|tool_arg:...|> members.
SOLAR_OPEN2 = CallMarkup(
    "", "<|tool_call:start|>{name}\n", "<|tool_call:end|>", "\n", "", "solar_args", tag="<|tool_call:start|>",
    name="bare",
)  # fmt: skip
# Kimi K3 (Kimi-K3.jinja, XTML): a tools channel of numbered calls; the template numbers them from 1.
KIMI_K3 = CallMarkup(
    "<|open|>tools<|sep|>", '<|open|>call tool="{name}" index="{index}"<|sep|>', "<|close|>call<|sep|>", "",
    "<|close|>tools<|sep|>", "xtml", tag="<|open|>tools<|sep|>", name="bare",
)  # fmt: skip
KIMI_K3_JSON_TYPES = ("boolean", "null", "object", "array", "integer")
# Its template numbers calls from 1 where the markup's writing (a grammar's) starts at 0.
KIMI_K3_WRITTEN = (
    KIMI_K3.opening + KIMI_K3.begin(PROBE_NAME, 1) + TAGGED_ARGUMENTS["xtml"].write(PROBE_ARGUMENTS) + KIMI_K3.call_end
    + KIMI_K3.closing
)  # fmt: skip

FAMILIES = {
    "seed_oss": _family(SEED_OSS, "</seed:tool_call>", "<function=", ">", "</function>"),
    "minimax_m2": _family(MINIMAX_M2, "</minimax:tool_call>", '<invoke name="', '">', "</invoke>"),
    "deepseek_v32": _family(
        DEEPSEEK_V32, f"</{DSML}function_calls>", f'<{DSML}invoke name="', '">', f"</{DSML}invoke>", json_body=True
    ),
    # V4 may open its calls without closing its reasoning (vLLM's deepseek_v4 reasoning parser ends it there).
    "deepseek_v4": replace(
        _family(DEEPSEEK_V4, f"</{DSML}tool_calls>", f'<{DSML}invoke name="', '">', f"</{DSML}invoke>", json_body=True),
        ends_reasoning=(DEEPSEEK_V4.tag,),
    ),
    "step3": _family(
        STEP3,
        STEP3_CALLS_END,
        f'{STEP3_CALL_BEGIN}function{STEP3_SEP}<steptml:invoke name="',
        '">',
        f"</steptml:invoke>{STEP3_CALL_END}",
    ),
    "hy_v3": _family(
        HY_V3, "</tool_calls:opensource>", "<tool_call:opensource>", "<tool_sep:opensource>", "</tool_call:opensource>"
    ),
    # The block between <function name=" and </function>: the name, then its members.
    "minicpm5xml": XmlFamily(
        MINICPM5, MINICPM5.tag, "</function>", XmlCallForm("", '">', "", TAGGED_ARGUMENTS["minicpm_xml"], cdata=True)
    ),
    "kimi_k3": XmlFamily(
        KIMI_K3,
        KIMI_K3.tag,
        KIMI_K3.closing,
        XmlCallForm(
            '<|open|>call tool="',
            '" index="',
            "<|close|>call<|sep|>",
            TAGGED_ARGUMENTS["xtml"],
            json_key_ends=tuple(f'" type="{kind}"<|sep|>' for kind in KIMI_K3_JSON_TYPES),
            numbered='"<|sep|>',
        ),
        written=(KIMI_K3_WRITTEN,),
    ),
    # The block between <|tool_call:start|> and <|tool_call:end|>: the name up to the line break, its members.
    "solar_open2": XmlFamily(
        SOLAR_OPEN2, SOLAR_OPEN2.tag, "<|tool_call:end|>", XmlCallForm("", "\n", "", TAGGED_ARGUMENTS["solar_args"])
    ),
}
# Solar Open (upstage-Solar-Open-100B.jinja): a section of calls, each with the model's own id before its name
# and JSON arguments. Its template writes back the client's id where a model writes its own: detection looks
# for that writing too.
SOLAR_OPEN = CallMarkup(
    SOLAR_CALLS, f"{SOLAR_CALL_BEGIN}{{index}}{SOLAR_NAME}{{name}}{SOLAR_ARGS}", SOLAR_CALL_END, "", SOLAR_CALLS_END,
    tag=SOLAR_CALLS, name="bare",
)  # fmt: skip
SOLAR_OPEN_WRITTEN = (
    f"{SOLAR_CALLS}{SOLAR_CALL_BEGIN}{PROBE_CALL_ID}{SOLAR_NAME}{PROBE_NAME}{SOLAR_ARGS}"
    f"{json.dumps(PROBE_ARGUMENTS)}{SOLAR_CALL_END}{SOLAR_CALLS_END}"
)
SEED_THINK = ThinkMarkup("<seed:think>", "</seed:think>")
MINIMAX_M3_THINK = ThinkMarkup("<mm:think>", "</mm:think>")
HY_THINK = ThinkMarkup("<think:opensource>", "</think:opensource>")
# Kimi K3: the think channel, then the response channel (its reply; empty before a call), then the tools channel.
KIMI_K3_REPLY = ("<|open|>response<|sep|>", "<|close|>response<|sep|>")
KIMI_K3_THINK = ThinkMarkup(
    "<|open|>think<|sep|>", "<|close|>think<|sep|>", after="".join(KIMI_K3_REPLY), reply=KIMI_K3_REPLY,
    turn_end="<|close|>message<|sep|>",
)  # fmt: skip
# Solar Open: <|think|>...<|end|>, then the next message's header; a reply opens with <|content|>.
SOLAR_THINK = ThinkMarkup("<|think|>", "<|end|><|begin|>assistant", after="", reply=("<|content|>", "<|end|>"))

# --tool-parser name -> its format.
TOOL_FORMATS: dict[str, ToolFormat] = {
    **{name: family.tool_format() for name, family in FAMILIES.items()},
    "minimax_m3": ToolFormat(
        lambda ids, schemas: TaggedCallParser(
            lambda block: minimax_m3_calls(block, schemas), ids, MINIMAX_M3.tag, f"{MINIMAX_NS}</tool_call>"
        ),
        MINIMAX_M3,
        typed=True,
    ),
    "solar_open": ToolFormat(
        lambda ids, _: TaggedCallParser(solar_open_calls, ids, SOLAR_CALLS, SOLAR_CALLS_END),
        SOLAR_OPEN,
        written=(SOLAR_OPEN_WRITTEN,),
    ),
}
# Format name -> the families it serves (README's table of formats: ovserve.service.parsing.formats_table).
TOOL_FAMILIES: dict[str, str] = {
    "seed_oss": "Seed-OSS",
    "minimax_m2": "MiniMax-M2",
    "deepseek_v32": "DeepSeek V3.2",
    "deepseek_v4": "DeepSeek V4",
    "step3": "Step3",
    "hy_v3": "Hunyuan 3 (Hy3)",
    "minicpm5xml": "MiniCPM5",
    "kimi_k3": "Kimi K3",
    "solar_open2": "Solar Open 2",
    "minimax_m3": "MiniMax-M3",
    "solar_open": "Solar Open 100B",
}
# --reasoning-parser name -> its block's delimiters.
REASONING_FORMATS: dict[str, ThinkMarkup] = {
    "seed_oss": SEED_THINK,
    "hy_v3": HY_THINK,
    "solar_open": SOLAR_THINK,
    "kimi_k3": KIMI_K3_THINK,
    "minimax_m3": MINIMAX_M3_THINK,
}
REASONING_FAMILIES: dict[str, str] = {
    "seed_oss": "Seed-OSS",
    "hy_v3": "Hunyuan 3 (Hy3)",
    "solar_open": "Solar Open 100B",
    "kimi_k3": "Kimi K3",
    "minimax_m3": "MiniMax-M3",
}
# Other servers' names (vLLM's, OVMS's) for these formats: {"tool": {alias: name}, "reasoning": {...}}.
ALIASES: dict[str, dict[str, str]] = {
    "tool": {
        # Families whose calls are an existing format's, as their templates render them and vLLM reads them.
        "step3p5": "qwen3_coder",  # StepFun3.5-Flash.jinja
        "ling3": "glm45",  # inclusionai-ling-3.0-flash.jinja
        "poolside_v1": "glm45",  # poolside-Laguna-*.jinja
        "mimo": "hermes",  # MiMo-VL.jinja
        "minimax_m2_sanitized": "minimax_m2",
        "minicpm5": "minicpm5xml",  # vLLM's name (its parser module is minicpm5xml)
    },
    "reasoning": {
        "seedoss": "seed_oss",
        # <think>...</think> blocks, under vLLM's names.
        **dict.fromkeys(
            [
                "minimax_m2",
                "deepseek_v3",
                "deepseek_v4",
                "step3",
                "step3p5",
                "ling3",
                "poolside_v1",
                "kimi_k2",
                "nemotron_v3",
                "mimo",
            ],
            "think",
        ),
    },
}
# Template markup (a string, or several that must all appear) -> the parser it calls for (checked after
# formats.py's own entries, in this order).
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    (SEED_OSS.tag, "seed_oss"),
    (MINIMAX_M2.tag, "minimax_m2"),
    (("ns_token", "]<]minimax[>[", "<invoke name="), "minimax_m3"),  # its template joins the token to each tag
    ((DSML, "function_calls>"), "deepseek_v32"),  # the templates build their tags from pieces
    ((DSML, "tool_calls>"), "deepseek_v4"),
    ("<steptml:invoke", "step3"),
    (("<tool_calls{}>", ":opensource"), "hy_v3"),  # Hy3's template formats its tags: '<tool_calls{}>'.format(HYTK)
    ((MINICPM5.tag, '<param name="'), "minicpm5xml"),
    ((SOLAR_CALL_BEGIN, SOLAR_NAME), "solar_open"),
    (("<|tool_call:start|>", "<|tool_arg:start|>"), "solar_open2"),
    (("open_tag('call'", "open_tag('argument'"), "kimi_k3"),  # Kimi K3's template builds its tags with a macro
]
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = [
    (SEED_THINK.begin, "seed_oss"),
    (("<think{}>", ":opensource"), "hy_v3"),
    ((SOLAR_THINK.begin, SOLAR_CALLS), "solar_open"),
    (("open_tag('think')", "open_tag('response')"), "kimi_k3"),
    (MINIMAX_M3_THINK.begin, "minimax_m3"),
]
