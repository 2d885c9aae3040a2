"""ovserve's grammars for a vocabulary that spells some characters otherwise: each literal takes both spellings.

OpenVINO GenAI hands XGrammar the vocabulary as the tokenizer stores it (``VocabType::RAW``): on a byte-fallback
SentencePiece (Llama 2, Mistral, Gemma, InternLM2) a newline is the piece ``<0x0A>`` and a space ``▁``, so no token
writes a grammar's literal newline or space, and a grammar that needs one is a dead end there (a tool call's
``<|plugin|>\\n``, a JSON schema's ``"enum": ["New York"]``: the model writes ``"New`` then ``<unk>`` until
max_tokens). The characters a model's vocabulary spells so are found at load
(ovserve.service.engine.vocabulary.grammar_spellings); every literal of the grammars ovserve writes then accepts
such a character as itself or as its piece, which decodes to the character (docs/operations/sentencepiece-
grammars.md). A client's own grammar, regex and structural tag are spelled the same way: what they ask for is what
the output decodes to.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ovserve.service.engine.vocabulary import Spellings  # (found by the engine, at load)

# The lexemes of an EBNF grammar: string literals, character classes (whose quotes are no literal's), comments, and
# the rest.
_LEXEME = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|#[^\n]*|[^"\[#]+|.', re.DOTALL)
# One item of a character class: an escape (\uXXXX, \xXX, \n, \s and the like) or the character itself.
_CLASS_ITEM = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|\\(.)|(.)", re.DOTALL)
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}  # \n and the like: the character
_WHITESPACE = " \t\n\r\f\v"
# A category escape -> the code point spans it stands for, as far as spelling is concerned (\s, \D and \W hold
# every whitespace character; \d, \w and \S none).
_CATEGORIES = {"s": True, "D": True, "W": True, "d": False, "w": False, "S": False}
_REGEX_CHARS = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}  # how a regex writes these characters
_QUANTIFIER = re.compile(r"\{[0-9,\s]*\}")


def spelled_ebnf(text: str, spellings: Spellings) -> str:
    """``text`` as an EBNF expression in which each character of ``spellings`` is itself or its piece
    (``"a" ("\\n" | "<0x0A>") "b"``)."""
    if not text:
        return '""'
    parts = re.split("(" + "|".join(map(re.escape, spellings)) + ")", text) if spellings else [text]
    return " ".join(
        f"({_literal(part)} | {_literal(spellings[part])})" if part in spellings else _literal(part)
        for part in parts
        if part
    )


def spelled_grammar(ebnf: str, spellings: Spellings) -> str:
    """An EBNF grammar with each string literal that holds a character of ``spellings`` written as ``spelled_ebnf``
    (in parentheses, so a quantifier after it applies to all of it), and each character class that holds one taking
    its piece beside it (``([A-Za-z ] | "▁")``). A literal with escapes JSON does not read (GBNF's ``\\x20``) is
    left as it is."""
    if not spellings:
        return ebnf
    return "".join(_spelled_lexeme(lexeme, spellings) for lexeme in _LEXEME.findall(ebnf))


def spelled_regex(pattern: str, spellings: Spellings) -> str:
    """A regular expression with each character of ``spellings`` it writes outside a class (a space, a newline, the
    escapes ``\\n`` and ``\\s``) as a group of its spellings (``(?: |▁)``), and each class that holds one taking its
    piece beside it (``(?:[a-z ]|▁)``)."""
    if not spellings:
        return pattern
    out: list[str] = []
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\" and at + 1 < len(pattern):
            size, held = _escape(pattern, at)
            out.append(_regex_group(pattern[at : at + size], held, spellings))
            at += size
        elif char == "[":
            end = _class_end(pattern, at)
            out.append(_regex_group(pattern[at:end], _class_holds(pattern[at + 1 : end - 1]), spellings))
            at = end
        elif char == "{" and (quantifier := _QUANTIFIER.match(pattern, at)):
            out.append(quantifier[0])
            at = quantifier.end()
        else:
            out.append(_regex_group(_REGEX_CHARS.get(char, char), char, spellings))
            at += 1
    return "".join(out)


def spelled_document(document: Any, spellings: Spellings) -> Any:
    """An XGrammar structural-tag document with each of its grammars and regular expressions spelled
    (``spelled_grammar``, ``spelled_regex``); its fixed texts (a tag's begin and end, a constant string) are left as
    they are: the tags ovserve writes that need it are built otherwise (ovserve.service.structured.output.
    _spelled_tag)."""
    if isinstance(document, dict):
        regex = document.get("type") == "regex"
        return {
            key: spelled_grammar(value, spellings)
            if key == "grammar" and isinstance(value, str)
            else spelled_regex(value, spellings)
            if regex and key == "pattern" and isinstance(value, str)
            else spelled_document(value, spellings)
            for key, value in document.items()
        }
    if isinstance(document, list):
        return [spelled_document(item, spellings) for item in document]
    return document


def _spelled_lexeme(lexeme: str, spellings: Spellings) -> str:
    if lexeme.startswith("[") and lexeme.endswith("]") and len(lexeme) > 2:
        held = [char for char in spellings if char in _class_holds(lexeme[1:-1])]
        return f"({' | '.join([lexeme, *(_literal(spellings[char]) for char in held)])})" if held else lexeme
    if not lexeme.startswith('"') or len(lexeme) < 2:
        return lexeme
    try:
        text = json.loads(lexeme)
    except ValueError:  # escapes JSON does not read: left to the compiler as they are
        return lexeme
    if not isinstance(text, str) or not any(char in spellings for char in text):
        return lexeme
    return f"({spelled_ebnf(text, spellings)})"


def _class_holds(body: str) -> str:
    """The whitespace characters a (regex or EBNF) class body holds; "" for a negated class (it takes every piece's
    text already)."""
    if body.startswith("^"):
        return ""
    matches = list(_CLASS_ITEM.finditer(body))
    items: list[str | bool] = []  # a character, or a category (True: it holds every whitespace character)
    for match in matches:
        code, byte, escaped, plain = match.groups()
        if code or byte:
            items.append(chr(int(code or byte, 16)))
        elif escaped is not None:
            items.append(_CATEGORIES[escaped] if escaped in _CATEGORIES else _ESCAPED.get(escaped, escaped))
        else:
            items.append(plain)
    held = set()
    index = 0
    while index < len(items):
        item = items[index]
        # A range: an unescaped "-" between two characters (a leading or trailing one, or an escaped one, is itself).
        ranged = index + 2 < len(items) and matches[index + 1][0] == "-"
        if isinstance(item, bool):
            held |= set(_WHITESPACE) if item else set()
        elif ranged and isinstance(items[index + 2], str):
            low, high = ord(item), ord(str(items[index + 2]))
            held |= {char for char in _WHITESPACE if low <= ord(char) <= high}
            index += 2
        else:
            held |= {item} & set(_WHITESPACE)
        index += 1
    return "".join(sorted(held))


def _escape(pattern: str, at: int) -> tuple[int, str]:
    """The length of the regex escape at ``at`` and the whitespace characters it stands for (a category's, \\n's,
    \\x20's)."""
    letter = pattern[at + 1]
    if letter in _CATEGORIES:
        return 2, _WHITESPACE if _CATEGORIES[letter] else ""
    digits = {"u": 4, "x": 2}.get(letter, 0)
    if digits and re.fullmatch(f"[0-9a-fA-F]{{{digits}}}", pattern[at + 2 : at + 2 + digits]):
        char = chr(int(pattern[at + 2 : at + 2 + digits], 16))
        return 2 + digits, char if char in _WHITESPACE else ""
    char = _ESCAPED.get(letter, letter)
    return 2, char if char in _WHITESPACE else ""


def _class_end(pattern: str, at: int) -> int:
    """The index after the regex class opening at ``at`` (a "]" first, or after "^", is a member; escapes skipped);
    the pattern's end if it is not closed (the compiler then says so)."""
    index = at + 1
    index += pattern.startswith("^", index)
    index += pattern.startswith("]", index)
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
            continue
        if pattern[index] == "]":
            return index + 1
        index += 1
    return len(pattern)


def _regex_group(written: str, held: str, spellings: Spellings) -> str:
    """``written`` (a regex atom) or the pieces of the characters of ``held`` it stands for, as one group."""
    pieces = [re.escape(spellings[char]) for char in spellings if char in held]
    return f"(?:{'|'.join([written, *pieces])})" if pieces else written


def _literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
