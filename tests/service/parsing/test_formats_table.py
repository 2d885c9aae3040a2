"""The docs' table of formats (docs/operations/formats.md) is the registry's: every format, described, under each name
that selects it."""

from __future__ import annotations

from ovserve.service.parsing import formats, formats_generic, formats_json, formats_python, formats_table, formats_xml

GROUPS = (formats_json, formats_xml, formats_python, formats_generic)


def test_the_docs_table_is_the_registry() -> None:
    """python -m ovserve.service.parsing.formats_table rewrites it when a format, a name or a description changes."""
    assert formats_table.page_section() == formats_table.page_table()


def test_each_format_is_described_once_under_one_of_its_names() -> None:
    for registry, described in (
        (formats.TOOL_PARSERS, formats.TOOL_FAMILIES),
        (formats.REASONING_PARSERS, formats.REASONING_FAMILIES),
    ):
        by_format: dict[int, list[str]] = {}
        for name, chosen in registry.items():
            by_format.setdefault(id(chosen), []).append(name)
        for names in by_format.values():
            assert len([name for name in names if name in described]) == 1, names
        assert set(described) <= set(registry)
        assert all(line and "|" not in line and "<" not in line for line in described.values())
    # A name described by two group modules would be merged silently: each is written once.
    for kind in ("TOOL_FAMILIES", "REASONING_FAMILIES"):
        counted = [name for group in GROUPS for name in getattr(group, kind)]
        assert len(counted) == len(set(counted)), kind


def test_every_name_that_selects_a_format_is_in_its_row() -> None:
    rows = {row[0].strip("`"): row for row in formats_table.tool_rows()}
    for alias, target in formats.ALIASES["tool"].items():
        primary = next(row for row in rows.values() if row[0] == f"`{target}`" or f"`{target}`" in row[3])
        assert f"`{alias}`" in primary[3], alias
    assert "`qwen`" in rows["hermes"][3] and "`llama3_pythonic`" in rows["pythonic"][3]
    reasoning = {row[0].strip("`"): row for row in formats_table.reasoning_rows()}
    assert "`openai_gptoss`" in reasoning["openai"][3] and "`qwen3`" in reasoning["think"][3]
    assert len(rows) == len({id(chosen) for chosen in formats.TOOL_PARSERS.values()})


def test_a_call_with_fences_stays_one_code_span() -> None:
    cell = formats_table._cell("Action:\n```json\n[1]\n```")
    assert cell == "` Action:↵```json↵[1]↵``` `"
    assert formats_table._cell("<|a|>") == "`<\\|a\\|>`"
    assert formats_table._cell("a`b") == "``a`b``"
