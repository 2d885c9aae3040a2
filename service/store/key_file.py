"""The API-key file (--api-key-file): a key per line, and what each key may do.

A line is a key, then optional ``name=value`` settings separated by spaces::

    # comments and blank lines are skipped
    sk-reports
    sk-search   rpm=600 tpm=200000 concurrent=8 models=tiny-chat,tiny-embed
    sk-ops      scope=admin

A line with the key alone is what the file always held (a key with every right and no limit). The file is read
again on SIGHUP, limits included. Limits are per server process (see docs/operations/security.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

USER, ADMIN = "user", "admin"


@dataclass(frozen=True)
class KeyPolicy:
    """What one key may do; None: no limit of that kind."""

    rpm: int | None = None  # requests per minute (generating calls: chat, completions, Responses, embeddings...)
    tpm: int | None = None  # tokens per minute, prompt and output as OpenAI counts them
    concurrent: int | None = None  # generating calls under way at once, streamed or not
    models: frozenset[str] | None = None  # the models it may name and see (None: every model)
    scope: str = USER  # "admin": it may also load, unload and reload models

    @property
    def limited(self) -> bool:
        """Whether any rate or concurrency limit applies."""
        return self.rpm is not None or self.tpm is not None or self.concurrent is not None


class KeyFileError(ValueError):
    """A line of the key file is not understood; the message names the line and the setting."""


def _count(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("expected a whole number of 1 or more")
    return number


def _models(value: str) -> frozenset[str]:
    names = frozenset(name for name in value.split(",") if name)
    if not names:
        raise ValueError("expected model names separated by commas")
    return names


def _scope(value: str) -> str:
    if value not in (USER, ADMIN):
        raise ValueError(f"expected {USER} or {ADMIN}")
    return value


# Each setting's name -> how its text becomes the KeyPolicy field of the same name.
SETTINGS: dict[str, Callable[[str], Any]] = {
    "rpm": _count,
    "tpm": _count,
    "concurrent": _count,
    "models": _models,
    "scope": _scope,
}


def parse_line(line: str, where: str) -> tuple[str, KeyPolicy] | None:
    """A line's key and policy; None for a blank or comment line. ``where`` names the line in errors."""
    words = line.split()
    if not words or words[0].startswith("#"):
        return None
    key, policy = words[0], KeyPolicy()
    for word in words[1:]:
        name, sep, text = word.partition("=")
        if not sep or name not in SETTINGS:
            raise KeyFileError(f"{where}: {word!r} is not a setting; expected NAME=VALUE with NAME one of "
                               f"{', '.join(SETTINGS)}")  # fmt: skip
        try:
            policy = replace(policy, **{name: SETTINGS[name](text)})
        except ValueError as error:
            raise KeyFileError(f"{where}: {name}={text!r}: {error}") from None
    return key, policy


def read_key_file(path: Path) -> dict[str, KeyPolicy]:
    """Every key of the file with its policy, in the file's order (KeyFileError for a line not understood)."""
    policies: dict[str, KeyPolicy] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        parsed = parse_line(line, f"{path}:{number}")
        if parsed is not None:
            policies[parsed[0]] = parsed[1]
    return policies
