"""The documentation site builds with no broken link or anchor, and what its pages show would run.

``mkdocs build --strict`` (mkdocs.yml's ``validation`` makes a link to a missing page or anchor a warning, and
``--strict`` makes a warning fatal); README.md's relative links name files that exist; every ``ovserve ...``
command in README.md and docs/ names a real subcommand and real flags (the parsers ``ovserve.service.cli`` runs);
every ``python -m MODULE`` names a module there is, and every repository path written as code exists;
every ```python block compiles and every ```json and ```toml block parses.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import NoReturn

import pytest

from ovserve.service import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
# An inline code span that is a command: `ovserve SUBCOMMAND ...` (it may wrap onto the next line).
INLINE_COMMAND = re.compile(r"(?<!`)`(ovserve [^`]+)`")
OVSERVE = re.compile(r"^(?:\S*/)?ovserve$")  # ovserve, .venv/bin/ovserve, .venv-export/bin/ovserve


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``."""
    command = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(config),
        "--site-dir",
        str(site),
    ]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "api" / "chat" / "index.html").exists()
    # A table's code spans show a pipe where the markdown escapes it for GitHub (tools/mkdocs_hooks.py).
    formats = (tmp_path / "site" / "operations" / "formats" / "index.html").read_text(encoding="utf-8")
    assert "<code>&lt;|tool_call|&gt;[" in formats and "\\|" not in formats
    # Every page is in the nav (a page left out is one no reader finds).
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    unlisted = [page for page in PAGES[1:] if str(page.relative_to(ROOT / "docs")) not in nav]
    assert unlisted == []


@pytest.mark.parametrize("broken", ["[a link](chat.md#no-such-heading)", "[a link](no-such-page.md)"])
def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path, broken: str) -> None:
    """The strict build is what catches them: the same site with one broken link does not build."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "tools", tmp_path / "tools", ignore=shutil.ignore_patterns("__pycache__"))  # its hooks
    page = tmp_path / "docs" / "api" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\n{broken}\n", encoding="utf-8")
    built = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert broken.split("(")[1].rstrip(")").split("#")[-1] in built.stderr


def test_the_readme_stays_short_and_its_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [target.split("#")[0] for target in targets if not re.match(r"[a-z]+:|#", target)]
    assert len(local) >= 20  # the links into the docs
    assert [target for target in local if not (ROOT / target).exists()] == []


def test_the_home_page_gives_the_readmes_commands() -> None:
    """docs/index.md repeats README's first two shell blocks (the two commands, serving a model of your own)
    as they are, so neither drifts when the other changes."""
    readme = [body for language, body in FENCE.findall((ROOT / "README.md").read_text(encoding="utf-8"))]
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert all(f"```bash\n{body}```" in home for body in readme[:2])


def fenced(language: str) -> Iterator[tuple[Path, str]]:
    """Every fenced block of ``language`` in README.md and docs/: (page, its text)."""
    for page in PAGES:
        for found, body in FENCE.findall(page.read_text(encoding="utf-8")):
            if found == language:
                yield page, body


def test_every_python_block_compiles() -> None:
    blocks = list(fenced("python"))
    assert len(blocks) >= 8
    for page, body in blocks:
        compile(body, str(page), "exec")


@pytest.mark.parametrize("language", ["json", "toml"])
def test_every_data_block_parses(language: str) -> None:
    parse = {"json": json.loads, "toml": tomllib.loads}[language]
    blocks = list(fenced(language))
    assert blocks
    for page, body in blocks:
        try:
            parse(body)
        except ValueError as error:  # json's and tomllib's errors are both ValueErrors
            raise AssertionError(f"{page.relative_to(ROOT)}: {error}") from error


def shell_commands(body: str) -> Iterator[list[str]]:
    """The commands of a shell block: continuation lines joined, comments dropped, split at && | ;."""
    pending = ""
    for line in body.replace("\\\n", " ").splitlines():
        pending += line + "\n"
        lexer = shlex.shlex(pending, posix=True, punctuation_chars=True)  # && | ; ( ) as tokens of their own
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:  # a quote that goes on to the next line
            continue
        pending = ""
        command: list[str] = []
        for word in [*words, ";"]:
            if set(word) <= set(lexer.punctuation_chars):
                if command:
                    yield command
                command = []
            else:
                command.append(word)
    assert not pending, f"a quote never closed: {pending}"


def ovserve_commands() -> Iterator[tuple[Path, list[str]]]:
    """Every ``ovserve ...`` command the pages show: in ```bash blocks and as inline code."""
    for page, body in fenced("bash"):
        for words in shell_commands(body):
            if words and OVSERVE.match(words[0]):
                yield page, ["ovserve", *words[1:]]
    for page in PAGES:
        for span in INLINE_COMMAND.findall(page.read_text(encoding="utf-8")):
            yield page, span.split()


class _Parsed(Exception):
    """Raised instead of parsing: carries the parser a subcommand built."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


@cache
def subcommand_flags(name: str) -> frozenset[str]:
    """The option strings of ``ovserve NAME``'s own parser (each handler builds and parses its own)."""

    def capture(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
        raise _Parsed(self)

    _, handler = cli.SUBCOMMANDS[name]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
        with pytest.raises(_Parsed) as parsed:
            handler([])
    return frozenset(option for action in parsed.value.parser._actions for option in action.option_strings)


def test_every_ovserve_command_names_a_real_subcommand_and_flags() -> None:
    commands = list(ovserve_commands())
    assert len(commands) >= 30
    wrong = []
    for page, words in commands:
        where = f"{page.relative_to(ROOT)}: {' '.join(words)}"
        if len(words) < 2 or words[1] not in cli.SUBCOMMANDS:
            wrong.append(f"{where}: no such subcommand")
            continue
        flags = {word.lstrip("[").split("=")[0].rstrip("]") for word in words[2:] if word.lstrip("[").startswith("-")}
        unknown = sorted(flags - subcommand_flags(words[1]))
        if unknown:
            wrong.append(f"{where}: no such flag {unknown}")
    assert not wrong, "\n".join(wrong)


# The repository's top folders: a code span starting with one of them is a path the pages promise exists.
TOP_FOLDERS = ("service/", "rest_bridge/", "clients/", "tests/", "tools/", "benchmarks/", "deploy/", "docs/", "proto/")


def test_every_module_and_path_the_pages_name_exists() -> None:
    """``python -m MODULE`` commands run a module there is; `service/engine/scoring.py` and the like exist
    (files are renamed and moved: the pages follow)."""
    text = {page: page.read_text(encoding="utf-8") for page in PAGES}
    modules = {module for body in text.values() for module in re.findall(r"python3? -m ([\w.]+)", body)}
    assert "ovserve.service.parsing.formats_table" in modules
    assert sorted(module for module in modules if importlib.util.find_spec(module) is None) == []
    paths = {
        (page, span.rstrip(".,:;)"))
        for page, body in text.items()
        for span in re.findall(r"`([^`\s*<]+)`", body)
        if span.startswith(TOP_FOLDERS)
    }
    assert len(paths) >= 40
    missing = sorted(f"{page.relative_to(ROOT)}: {path}" for page, path in paths if not (ROOT / path).exists())
    assert not missing, "\n".join(missing)


def test_the_snippet_check_catches_a_wrong_flag_or_subcommand() -> None:
    assert "--max-num-seqs" in subcommand_flags("serve")
    assert "--max-num-seq" not in subcommand_flags("serve")
    assert "--target" in subcommand_flags("bridge") and "--target" not in subcommand_flags("serve")
    assert list(shell_commands("x && .venv/bin/ovserve serve --port 1  # a comment\n")) == [
        ["x"],
        [".venv/bin/ovserve", "serve", "--port", "1"],
    ]
