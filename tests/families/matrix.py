"""What the family matrix checks, as data: the cells, which families each applies to, and the docs' table.

tests/families/test_family_matrix.py runs every applicable cell end to end; ``page_table`` writes the
table docs/operations/formats.md shows between its markers (``python -m tests.families.matrix`` rewrites it;
a test checks it is current), so the table says exactly what the tests check.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.families.table import FAMILIES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "operations" / "formats.md"
BEGIN, END = "<!-- family-matrix:begin -->", "<!-- family-matrix:end -->"

# Cell -> its column heading. Each is a test in test_family_matrix.py.
CELLS = {
    "plain": "plain chat",
    "tools": "tools offered",
    "history": "tool history sent back",
    "forced": "forced call, unary",
    "forced_stream": "forced call, streamed",
    "single": "parallel calls off",
    "reasoning": "reasoning split, unary",
    "reasoning_stream": "reasoning split, streamed",
}
REASONING_CELLS = ("reasoning", "reasoning_stream")
# How each family is served: its tool and reasoning parsers as recognised from its template (ovserve.service.parsing.
# detection renders a known call through it), unless named here. Gemma 3's template shows no tool format: the
# generic one (tools described in the system turn, calls as JSON under a grammar) is recognised for it.
SERVE_OPTIONS: dict[str, dict[str, str]] = {}
# The tool and reasoning parsers the server must pick for each family's published template (the docs' table;
# test_family_matrix checks GET /v3/models against it): a wrong detection fails there, naming the family.
PARSERS: dict[str, tuple[str, str]] = {
    "qwen2.5": ("hermes", "none"),
    "qwen3": ("hermes", "think"),
    "qwq": ("hermes", "think"),
    "qwen3-coder": ("qwen3_coder", "none"),
    "llama3.1": ("llama3_json", "none"),
    "llama3.2": ("llama3_json", "none"),
    "hermes3": ("hermes", "none"),
    "mistral-v0.3": ("mistral", "none"),
    "devstral": ("mistral_args", "none"),  # Tekken writes [TOOL_CALLS]NAME[ARGS]{...}
    "deepseek-r1": ("deepseek_v3", "think"),
    "deepseek-v3.1": ("deepseek_v31", "think"),
    "phi-4-mini": ("phi4_mini_json", "none"),
    "gpt-oss": ("openai", "openai"),
    "granite-3.3": ("granite", "granite_think"),
    "gemma-3": ("generic", "none"),
    "gemma-4": ("gemma4", "gemma4"),
    "kimi-k2": ("kimi_k2", "none"),
    "glm-4.6": ("glm45", "think"),
    "seed-oss": ("seed_oss", "seed_oss"),
    "functionary-v3.1": ("functionary_v3_1", "none"),
    "ministral-3-reasoning": ("mistral_args", "mistral"),
    "lfm2.5": ("lfm2", "think"),
    "command-r7b": ("command_r7b", "command_r7b"),
    "phi-3.5": ("generic", "none"),
    "qwen3.5": ("qwen3_coder", "think"),
    "llama4-pythonic": ("pythonic", "none"),
    "functionary-v3.2": ("functionary_v3_2", "none"),
    "nemotron-nano-v2": ("nemotron_json", "think"),
    "minimax-m2": ("minimax_m2", "think"),
    "minimax-m1": ("minimax", "think"),
    "deepseek-r1-llama": ("deepseek_v3", "think"),
    "internlm2": ("internlm", "none"),
    "granite-20b-fc": ("granite_20b_fc", "none"),
    "deepseek-v3.2": ("deepseek_v32", "think"),
    "apertus": ("apertus", "apertus"),
    "hy3": ("hy_v3", "hy_v3"),
    "falcon3": ("hermes", "none"),
    "hermes2-pro": ("hermes", "none"),
    "minimax-m3": ("minimax_m3", "minimax_m3"),
    "minicpm5": ("minicpm5xml", "think"),
    "deepseek-v4": ("deepseek_v4", "think"),
    "command-r-plus": ("command_r_plus", "none"),
    "apriel-1.6": ("apriel", "apriel"),
    "apriel-1.5": ("apriel", "apriel"),
    "kimi-k3": ("kimi_k3", "kimi_k3"),
    "solar-open": ("solar_open", "solar_open"),
    "onyx": ("onyx", "onyx"),
}
# Families whose templates have no reasoning mode: their reasoning cells do not apply.
NO_REASONING = {
    "qwen2.5", "qwen3-coder", "llama3.1", "llama3.2", "hermes3", "mistral-v0.3", "devstral", "phi-4-mini",
    "gemma-3", "kimi-k2", "functionary-v3.1", "phi-3.5", "llama4-pythonic", "functionary-v3.2",
    "internlm2", "granite-20b-fc", "falcon3", "hermes2-pro",
    "minicpm5", "command-r-plus",
}  # fmt: skip
# Families whose templates read a past turn's reasoning elsewhere than reasoning_content (gpt-oss's and LFM2.5's
# ``thinking``, Ministral 3's thinking chunk of the content; the server finds where by rendering:
# ovserve.service.engine.template_probe): test_past_reasoning checks that a client's reasoning_content reaches
# their prompts.
PAST_REASONING = ("gpt-oss", "lfm2.5", "ministral-3-reasoning")
# (family, cell) -> why that cell fails (a strict xfail; the docs' table marks it ✗). None now: InternLM2's forced
# calls failed here until the call grammars accepted a byte-fallback SentencePiece's newline piece (GenAI hands
# XGrammar such a vocabulary's pieces raw, so only "<0x0A>" writes a newline under a grammar:
# docs/operations/sentencepiece-grammars.md; ovserve.service.engine.vocabulary).
KNOWN_FAILS: dict[tuple[str, str], str] = {}


# What each family's model says after its reasoning (build.py's scripts): the answer, but gpt-oss's script
# ends with its analysis message (a final-channel message would repeat harmony's tokens, see table.py).
def reply(family: str) -> str:
    """The content each family's tiny model answers with (its script's answer)."""
    from tests.families.table import ANSWER

    return "" if family == "gpt-oss" else ANSWER


def applies(family: str, cell: str) -> bool:
    """Whether ``cell`` is checked for ``family``."""
    return not (cell in REASONING_CELLS and family in NO_REASONING)


def cases(cell: str) -> list[str]:
    """The families ``cell`` is checked for."""
    return [family for family in FAMILIES if applies(family, cell)]


def params(cell: str) -> list[Any]:
    """``cases(cell)`` as test parameters: a cell of KNOWN_FAILS is a strict xfail saying why (it must keep failing
    for the reason given, or its entry goes)."""
    return [
        pytest.param(family, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILS[family, cell]))
        if (family, cell) in KNOWN_FAILS
        else family
        for family in cases(cell)
    ]


def page_table(parsers: dict[str, tuple[str, str]]) -> str:
    """The docs' table: a row per family (template, parsers), a column per cell (✓ checked, ✗ a known failure,
    — no such mode)."""
    head = ["family", "chat template", "tool parser", "reasoning parser", *CELLS.values()]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, family in FAMILIES.items():
        tool, reasoning = parsers[name]
        marks = ["—" if not applies(name, cell) else "✗" if (name, cell) in KNOWN_FAILS else "✓" for cell in CELLS]
        lines.append(f"| {name} | `{family.template}` | {tool} | {reasoning} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def page_section() -> str:
    """The docs' family table as it stands, between the markers."""
    match = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), PAGE.read_text(encoding="utf-8"), re.DOTALL)
    return match.group(1).rstrip("\n") if match else ""


def write_page() -> None:
    """Rewrite the docs' family table from the matrix."""
    text = PAGE.read_text(encoding="utf-8")
    table = page_table(PARSERS)
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.DOTALL)
    PAGE.write_text(pattern.sub(lambda _: f"{BEGIN}\n{table}\n{END}", text), encoding="utf-8")


if __name__ == "__main__":
    write_page()
    sys.exit(0)
