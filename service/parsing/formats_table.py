"""The docs' table of every tool and reasoning format, written from the registry (ovserve.service.parsing.formats).

A row per format: its name and the other names ovserve registers for it, the families it serves
(``TOOL_FAMILIES`` / ``REASONING_FAMILIES``, one line beside each format), how it writes a call or a reasoning
block, and the other servers' names (vLLM's, OVMS's: ``ALIASES``) that select it. ``python -m
ovserve.service.parsing.formats_table`` rewrites the table between the markers of
docs/operations/formats.md (the docs site's page of families and formats); a test checks it is current.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ovserve.service.parsing import detection, formats
from ovserve.service.parsing.markup import ThinkMarkup

PAGE = Path(__file__).resolve().parents[2] / "docs" / "operations" / "formats.md"
BEGIN, END = "<!-- formats-table:begin -->", "<!-- formats-table:end -->"


def _names(registry: Mapping[str, object], described: Mapping[str, str]) -> list[list[str]]:
    """Each format's registered names, its described name first, in the registry's order."""
    groups: dict[int, list[str]] = {}
    for name, chosen in registry.items():
        groups.setdefault(id(chosen), []).append(name)
    return [sorted(names, key=lambda name: name not in described) for names in groups.values()]


def _cell(text: str) -> str:
    """``text`` as a code span in a table cell: line breaks shown as ↵, pipes escaped, delimited by a run of
    backticks no run inside it has (Command R+'s and RWKV's calls hold ```json fences)."""
    text = text.replace("\n", "↵").replace("|", "\\|")
    runs = {len(run) for run in re.findall("`+", text)}
    fence = "`" * next(length for length in range(1, len(runs) + 2) if length not in runs)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return fence + padded + fence


def _also(names: list[str], aliases: Mapping[str, str]) -> str:
    """The cell of a format's other names: ovserve's own, then other servers' that select it."""
    other = [f"`{name}`" for name in names[1:]]
    other += [f"`{alias}`" for alias, target in aliases.items() if target in names]
    return ", ".join(other)


def _block(markup: ThinkMarkup) -> str:
    """How a reasoning block is written: its delimiters, and the reply's where the reply is wrapped."""
    written = _cell(f"{markup.begin}…{markup.end}")
    if markup.reply is not None and any(markup.reply):
        written += ", then the reply in " + _cell(f"{markup.reply[0]}…{markup.reply[1]}")
    return written


def tool_rows() -> list[tuple[str, str, str, str]]:
    """Every tool format: (name, families, a call as a forced call writes it, other names)."""
    rows = []
    for names in _names(formats.TOOL_PARSERS, formats.TOOL_FAMILIES):
        markup = formats.TOOL_PARSERS[names[0]].markup
        rows.append(
            (
                f"`{names[0]}`",
                (formats.TOOL_FAMILIES.get(names[0], "")),
                _cell(detection.written_call(markup)),
                _also(names, formats.ALIASES["tool"]),
            )
        )
    return rows


def reasoning_rows() -> list[tuple[str, str, str, str]]:
    """Every reasoning format: (name, families, its block, other names)."""
    rows = []
    for names in _names(formats.REASONING_PARSERS, formats.REASONING_FAMILIES):
        rows.append(
            (
                f"`{names[0]}`",
                (formats.REASONING_FAMILIES.get(names[0], "")),
                _block(formats.REASONING_PARSERS[names[0]]),
                _also(names, formats.ALIASES["reasoning"]),
            )
        )
    return rows


def _table(head: list[str], rows: list[tuple[str, str, str, str]]) -> list[str]:
    """A markdown table."""
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(row) + " |" for row in rows)]


def page_table() -> str:
    """The page's two tables: the tool formats (a call to get_weather as each writes it) and the reasoning formats."""
    tools = _table(["tool parser", "families", "a call, as written", "also selected by"], tool_rows())
    reasoning = _table(["reasoning parser", "families", "block", "also selected by"], reasoning_rows())
    return "\n".join([*tools, "", *reasoning])


def page_section() -> str:
    """The page's table of formats as it stands, between the markers."""
    match = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), PAGE.read_text(encoding="utf-8"), re.DOTALL)
    return match.group(1).rstrip("\n") if match else ""


def write_page() -> None:
    """Rewrite the page's table of formats from the registry."""
    text = PAGE.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.DOTALL)
    PAGE.write_text(pattern.sub(lambda _: f"{BEGIN}\n{page_table()}\n{END}", text), encoding="utf-8")


if __name__ == "__main__":
    write_page()
