"""The files around the code: the licence, the changelog, the contributor's guide and the git hooks say what the
project's own files say (pyproject's licence and version, the README's commands, CI's linters)."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# Keep a Changelog's kinds of change.
CHANGE_KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def text(name: str) -> str:
    """A file of the repository's root, as text."""
    return (ROOT / name).read_text(encoding="utf-8")


def test_the_licence_is_apache_2_with_the_projects_copyright() -> None:
    licence = text("LICENSE")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    # The whole text, not a pointer to it: its nine sections and the appendix.
    assert all(f"   {section}. " in licence for section in range(1, 10))
    assert "END OF TERMS AND CONDITIONS" in licence and "APPENDIX" in licence
    assert re.search(r"^   Copyright \d{4} The ovserve Authors$", licence, re.M)
    assert "[yyyy]" not in licence
    assert PYPROJECT["license"] == "Apache-2.0" and PYPROJECT["license-files"] == ["LICENSE"]


def changelog_sections() -> dict[str, list[str]]:
    """CHANGELOG.md's ``## [...]`` headings -> their ``### `` headings."""
    sections: dict[str, list[str]] = {}
    for line in text("CHANGELOG.md").splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:], [])
        elif line.startswith("### "):
            current.append(line[4:])
    return sections


def test_the_changelog_has_unreleased_and_pyprojects_version() -> None:
    sections = changelog_sections()
    assert next(iter(sections)) == "[Unreleased]"
    version = PYPROJECT["version"]
    assert any(re.fullmatch(rf"\[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}", heading) for heading in sections)


def test_the_changelog_groups_changes_by_keep_a_changelogs_kinds() -> None:
    for heading, kinds in changelog_sections().items():  # a version has changes; Unreleased may have none yet
        assert (kinds or heading == "[Unreleased]") and set(kinds) <= CHANGE_KINDS, heading
    entries = re.findall(r"^- ", text("CHANGELOG.md"), re.M)
    assert len(entries) >= 10


def readme_commands() -> list[str]:
    """The README's two commands: the first bash block's lines that are not comments."""
    block = re.search(r"```bash\n(.*?)```", text("README.md"), re.S)
    assert block
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_contributing_gives_the_readmes_two_commands() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    assert all(command in text("CONTRIBUTING.md") for command in commands)


def test_the_paths_contributing_names_exist() -> None:
    named = set(re.findall(r"`([\w.-]+/[\w./-]*)`", text("CONTRIBUTING.md")))
    assert "service/parsing/formats.py" in named  # where the format registry is
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing


def test_contributing_says_how_changelog_entries_are_added() -> None:
    guide = text("CONTRIBUTING.md")
    assert "CHANGELOG.md" in guide and "## [Unreleased]" in guide


def ci_linters() -> list[list[str]]:
    """The lint and type commands .ci/run runs (buf as its npm binary), each as its words less a trailing '.'."""
    commands = []
    for line in text(".ci/run").splitlines():
        if re.match(r'(\.venv/bin/ruff\b|\.venv/bin/python tools/typecheck\.py\b|"\$buf" lint\b)', line):
            words = shlex.split(line.replace('"$buf"', "node_modules/.bin/buf"), comments=True)
            commands.append(words[:-1] if words[-1] == "." else words)
    return commands


def test_pre_commit_hooks_run_what_ci_lints_with_local_tools() -> None:
    config = yaml.safe_load(text(".pre-commit-config.yaml"))
    assert [repo["repo"] for repo in config["repos"]] == ["local"]  # nothing fetched at hook time
    hooks = [shlex.split(hook["entry"]) + hook.get("args", []) for hook in config["repos"][0]["hooks"]]
    linters = ci_linters()
    assert len(linters) == 4  # ruff check, ruff format --check, mypy (tools/typecheck.py), buf lint
    for command in linters:
        assert any(set(command) <= set(hook) and hook[0] == command[0] for hook in hooks), command
