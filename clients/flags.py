"""Command-line flags generated from settings dataclasses, so each default and its help are written once.

A dataclass field becomes a flag when its metadata has ``"help"`` (as vLLM's
``FrontendArgs`` does)::

    max_num_seqs: int = field(default=256, metadata={"help": "sequences batched per step"})

gives ``--max-num-seqs`` (its type from the annotation) whose help ends with
"(default 256)". Other metadata keys:

- ``"flag"``: the flag's name when it is not the field's (``no-prefix-caching``);
- ``"metavar"``: the value's placeholder in help (``N``, ``FILE``); by default
  the last word of the field's name (``--grace-seconds SECONDS``);
- ``"default_text"``: how help shows the default when the value alone does not
  say it (``cache_size_gb`` is None: "1 GB, at most 4,096 blocks").

A bool field that defaults to True becomes a flag that turns it off; a tuple
field a repeatable flag. Every generated flag defaults to None ("not given"),
so a value from a TOML file can sit between a flag and the field's default:
``given`` returns only the fields given on the command line.

Lives in ``clients`` because the server and the bridge both use it and
``clients`` is the one package both may import.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import types
import typing
from collections.abc import Iterable
from typing import Any

Parser = argparse.ArgumentParser | argparse._ArgumentGroup

_DEFAULT_SUFFIX = re.compile(r"^(?P<help>.*) \(default (?P<default>[^()]*(?:\([^()]*\)[^()]*)*)\)$", re.DOTALL)


def with_default(help_text: str, default: object) -> str:
    """Help text ending with the default, as every ovserve flag writes it: ``... (default 256)``."""
    return f"{help_text} (default {default})"


def split_default(help_text: str) -> tuple[str, str]:
    """A flag's help and its default (``""`` for none), from text written by ``with_default``."""
    match = _DEFAULT_SUFFIX.match(help_text)
    return (match["help"], match["default"]) if match else (help_text, "")


def _flag_fields(settings: type, only: Iterable[str] | None) -> list[dataclasses.Field[Any]]:
    fields = {field.name: field for field in dataclasses.fields(settings) if "help" in field.metadata}
    if only is None:
        return list(fields.values())
    return [fields[name] for name in only]  # KeyError: a name without help metadata is a programming error


def value_type(settings: type, name: str) -> type:
    """The type a field's values have, ``X | None`` and ``tuple[X, ...]`` unwrapped to X."""
    hint = typing.get_type_hints(settings)[name]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    if typing.get_origin(hint) is tuple:
        hint = typing.get_args(hint)[0]
    return typing.cast(type, hint)


def _shown_default(field: dataclasses.Field[Any]) -> str:
    if "default_text" in field.metadata:
        return str(field.metadata["default_text"])
    if field.default is dataclasses.MISSING or field.default is None or field.default == ():
        return "none"
    if isinstance(field.default, bool):
        return "on" if field.default else "off"
    return f"{field.default:g}" if isinstance(field.default, float) else str(field.default)


def _dest(field: dataclasses.Field[Any], prefix: str) -> str:
    return prefix.replace("-", "_") + field.name


def add_flags(parser: Parser, settings: type, *, prefix: str = "", only: Iterable[str] | None = None) -> None:
    """Add a flag for each field of the dataclass ``settings`` with help metadata (or each named in ``only``).

    Flags are named ``--{prefix}{name}``; ``given(args, settings, prefix=prefix)`` reads them back.
    """
    for field in _flag_fields(settings, only):
        name = field.metadata.get("flag", field.name.replace("_", "-"))
        options: dict[str, Any] = {"dest": _dest(field, prefix), "default": None}
        kind = value_type(settings, field.name)
        if kind is bool:
            # A flag can only switch a setting away from its default: --no-prefix-caching turns caching off.
            options.update(action="store_const", const=not field.default)
            text = field.metadata["help"]
        else:
            repeated = typing.get_origin(typing.get_type_hints(settings)[field.name]) is tuple
            options.update(type=kind, action="append" if repeated else "store")
            options["metavar"] = field.metadata.get("metavar", field.name.rsplit("_", 1)[-1].upper())
            text = with_default(field.metadata["help"], _shown_default(field))
        parser.add_argument(f"--{prefix}{name}", help=text, **options)


def given(args: argparse.Namespace, settings: type, *, prefix: str = "") -> dict[str, Any]:
    """The fields of ``settings`` given as flags (added by ``add_flags`` with ``prefix``), by field name."""
    values = {}
    for field in _flag_fields(settings, None):
        value = getattr(args, _dest(field, prefix), None)
        if value is not None:
            values[field.name] = tuple(value) if isinstance(value, list) else value
    return values


def markdown_table(parser: argparse.ArgumentParser) -> str:
    """A Markdown table of the parser's flags (flag | meaning | default), from their help text."""
    rows = ["| flag | meaning | default |", "|---|---|---|"]
    for action in parser._actions:
        if not action.option_strings or action.help in (None, argparse.SUPPRESS) or "--help" in action.option_strings:
            continue
        flag = action.option_strings[-1]
        if action.nargs != 0:
            flag += f" {action.metavar or action.dest.upper()}"
        meaning, default = split_default(str(action.help))
        rows.append(f"| `{flag}` | {_cell(meaning)} | {_cell(default)} |")
    return "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    """One table cell: one line, ``|`` escaped, ``<tags>`` as code (Markdown would drop them as HTML)."""
    return re.sub(r"(<[^<>]+>)", r"`\1`", " ".join(text.split()).replace("|", "\\|"))
