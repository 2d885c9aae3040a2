"""A free-form grammar (llama.cpp's GBNF, XGrammar's EBNF) -> the EBNF the engine compiles, within bounds.

XGrammar's EBNF was written to read llama.cpp's GBNF: rules ``name ::= ...``, string literals, character
classes with ``\\x`` / ``\\u`` escapes, ``* + ?`` and ``{m,n}``, ``#`` comments, dashes in rule names.
Checked on llama.cpp's own grammars (arithmetic, json, list, chess), the one construct it refuses is the
empty alternative GBNF allows (``ws ::= | " " | "\\n" [ \\t]{0,20}`` in json.gbnf): it is written here as
the empty string ``""``. Everything else reaches the compiler as it came, so its own message names what it
refuses (the engine's grammar check, service/engine/grammar.py, which also bounds the compile time).

Bounds: the grammar's UTF-8 size and its rule count, checked before anything else reads it.
"""

from __future__ import annotations

import re

from ovserve.service.structured.limits import KIB

# A free-form grammar's text: llama.cpp's largest bundled grammar (json_arr.gbnf) is under 1 KiB; a grammar
# compiles at ~0.3 s per 100 KiB of rules on tiny-chat, and the compile check stops it past its timeout.
MAX_FREE_GRAMMAR_BYTES = 64 * KIB
# Rules of one grammar: each is a state set the compiler builds (a thousand small rules compile in ~0.1 s).
MAX_FREE_GRAMMAR_RULES = 1000

_RULE_HEAD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\s*::=")
# What an alternative may follow (an empty one sits right after these) and precede (right before these).
_OPENS = ("::=", "(", "|")


class GrammarTextError(ValueError):
    """A grammar past a bound, or not text the translation can read; the message says which."""


def check_grammar(text: str) -> str:
    """``text`` (GBNF or EBNF) as the engine's EBNF; raises GrammarTextError past a bound or for unclosed text."""
    size = len(text.encode())
    if not text.strip():
        raise GrammarTextError("must not be empty")
    if size > MAX_FREE_GRAMMAR_BYTES:
        raise GrammarTextError(f"{size} bytes; at most {MAX_FREE_GRAMMAR_BYTES} are accepted")
    ebnf = with_empty_alternatives(text)
    rules = len(_RULE_HEAD.findall(_code_only(ebnf)))
    if rules > MAX_FREE_GRAMMAR_RULES:
        raise GrammarTextError(f"{rules} rules; at most {MAX_FREE_GRAMMAR_RULES} are accepted")
    return ebnf


def with_empty_alternatives(text: str) -> str:
    """``text`` with each empty alternative (``::= |``, ``( |``, ``| |``, ``| )``, a rule ending in ``|``)
    written as ``""``; strings, character classes and comments are left as they are."""
    out: list[str] = []
    last = ""  # the last token written: "::=", "(", "|", or "x" for any other
    at = 0
    while at < len(text):
        char = text[at]
        if char in '"[':
            end = _closing(text, at, '"' if char == '"' else "]")
            out.append(text[at:end])
            at, last = end, "x"
        elif char == "#":
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            out.append(text[at:end])
            at = end
        elif text.startswith("::=", at):
            out.append("::=")
            at, last = at + 3, "::="
        elif char == "|" or char == ")":
            if last in _OPENS:  # nothing since the alternative began
                out.append('"" ')
            out.append(char)
            at, last = at + 1, char if char == "|" else "x"
        elif _RULE_HEAD.match(text, at) and last in _OPENS and last != "::=":
            out.append('"" ')  # the previous rule ended in "|": its last alternative is empty
            last = "x"
        elif char.isspace():
            out.append(char)
            at += 1
        else:
            end = at + 1
            while end < len(text) and not text[end].isspace() and text[end] not in '"[#|()':
                if text.startswith("::=", end):
                    break
                end += 1
            out.append(text[at:end])
            at, last = end, "(" if char == "(" else "x"
    if last == "|":
        out.append(' ""')  # the grammar's last rule ended in "|"
    return "".join(out)


def _closing(text: str, start: int, close: str) -> int:
    """The index after the string or class opening at ``start`` (escapes skipped)."""
    at = start + 1
    while at < len(text):
        if text[at] == "\\":
            at += 2
            continue
        if text[at] == close:
            return at + 1
        at += 1
    what = "string literal" if close == '"' else "character class"
    raise GrammarTextError(f"a {what} opened at character {start} is not closed")


def _code_only(text: str) -> str:
    """``text`` without its strings, classes and comments (so a ``::=`` in a literal is no rule head)."""
    return re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|#[^\n]*', " ", text)
