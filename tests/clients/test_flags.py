"""ovserve.clients.flags: argparse flags generated from dataclass fields (name, type, default, help), read back by
given()."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ovserve.clients.flags import add_flags, given, markdown_table, split_default


@dataclass(frozen=True)
class Example:
    """Every kind of field the generator handles."""

    max_items: int = field(default=8, metadata={"help": "items per batch"})
    ratio: float = field(default=0.5, metadata={"help": "a share"})
    store: Path | None = field(default=None, metadata={"help": "a file", "metavar": "FILE", "default_text": "memory"})
    caching: bool = field(default=True, metadata={"help": "turn caching off", "flag": "no-caching"})
    keys: tuple[str, ...] = field(default=(), metadata={"help": "a key (repeatable)", "flag": "key"})
    hidden: int = 3  # no help: no flag


def parse(*argv: str, prefix: str = "") -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="example")
    add_flags(parser, Example, prefix=prefix)
    return parser, parser.parse_args(argv)


def test_no_flag_given_leaves_every_default_to_the_dataclass() -> None:
    _, args = parse()
    assert given(args, Example) == {}
    assert Example(**given(args, Example)) == Example()


def test_flags_are_typed_and_named_from_the_fields() -> None:
    _, args = parse("--max-items", "3", "--ratio", "0.25", "--store", "/tmp/s.db", "--no-caching",
                    "--key", "a", "--key", "b")  # fmt: skip
    assert given(args, Example) == {
        "max_items": 3, "ratio": 0.25, "store": Path("/tmp/s.db"), "caching": False, "keys": ("a", "b"),
    }  # fmt: skip
    with pytest.raises(SystemExit):
        parse("--hidden", "4")
    with pytest.raises(SystemExit):
        parse("--max-items", "many")


def test_a_prefix_names_the_flags_and_given_reads_them_back() -> None:
    _, args = parse("--rest-max-items", "2", prefix="rest-")
    assert given(args, Example, prefix="rest-") == {"max_items": 2}


def test_help_and_the_table_show_the_fields_defaults() -> None:
    parser, _ = parse()
    table = markdown_table(parser)
    assert "| `--max-items ITEMS` | items per batch | 8 |" in table
    assert "| `--ratio RATIO` | a share | 0.5 |" in table
    assert "| `--store FILE` | a file | memory |" in table
    assert "| `--no-caching` | turn caching off |  |" in table
    assert "| `--key KEYS` | a key (repeatable) | none |" in table
    assert "hidden" not in table and "--help" not in table
    assert split_default("gap (ms) between sends (default 5)") == ("gap (ms) between sends", "5")
    assert split_default("no default here") == ("no default here", "")
