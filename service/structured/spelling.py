"""ovserve's grammars for a vocabulary that spells some characters otherwise: each literal takes both spellings.

OpenVINO GenAI hands XGrammar the vocabulary as the tokenizer stores it (``VocabType::RAW``): on a byte-fallback
SentencePiece (Llama 2, Mistral, Gemma, InternLM2) a newline is the piece ``<0x0A>`` and a space ``▁``, so no token
writes a grammar's literal newline or space, and a grammar that needs one is a dead end there (a tool call's
``<|plugin|>\\n``, a JSON schema's ``"enum": ["New York"]``: the model writes ``"New`` then ``<unk>`` until
max_tokens). The characters a model's vocabulary spells so are found at load
(ovserve.service.engine.vocabulary.grammar_spellings); every literal of the grammars ovserve writes then accepts
such a character as itself or as its piece, which decodes to the character (docs/operations/sentencepiece-
grammars.md). A client's own grammar, regex or structural tag is handed on as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# A character -> the text a model's vocabulary spells it with for the grammar engine, where that is not the
# character itself: {"\n": "<0x0A>", " ": "▁"} on a byte-fallback SentencePiece; empty for a byte-level vocabulary.
Spellings = Mapping[str, str]
NO_SPELLINGS: Spellings = {}

# The lexemes of the EBNF ovserve writes: string literals (JSON-escaped), character classes (whose quotes are
# no literal's), and the rest.
_LEXEME = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[^"\[]+|.', re.DOTALL)


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
    """An EBNF grammar ovserve wrote, each string literal that holds a character of ``spellings`` written as
    ``spelled_ebnf`` (in parentheses, so a quantifier after it still applies to all of it)."""
    if not spellings:
        return ebnf
    return "".join(_spelled_lexeme(lexeme, spellings) for lexeme in _LEXEME.findall(ebnf))


def spelled_document(document: Any, spellings: Spellings) -> Any:
    """An XGrammar structural-tag document ovserve wrote, each of its grammars spelled (``spelled_grammar``); its
    fixed texts (a tag's begin and end) are left as they are: the tags that need it are built apart
    (ovserve.service.structured.output._spelled_tag)."""
    if isinstance(document, dict):
        return {
            key: spelled_grammar(value, spellings)
            if key == "grammar" and isinstance(value, str)
            else spelled_document(value, spellings)
            for key, value in document.items()
        }
    if isinstance(document, list):
        return [spelled_document(item, spellings) for item in document]
    return document


def _spelled_lexeme(lexeme: str, spellings: Spellings) -> str:
    if lexeme.startswith("[") and len(lexeme) > 2:
        return _spelled_class(lexeme, spellings)
    if not lexeme.startswith('"') or len(lexeme) < 2:
        return lexeme
    try:
        text = json.loads(lexeme)
    except ValueError:  # not JSON's escapes: not a literal ovserve wrote
        return lexeme
    if not isinstance(text, str) or not any(char in spellings for char in text):
        return lexeme
    return f"({spelled_ebnf(text, spellings)})"


# One character of a class as ovserve writes classes: an escape (\\uXXXX, \\xXX, \\n and the like) or the character.
_CLASS_CHAR = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|\\(.)|(.)", re.DOTALL)
_CLASS_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def _spelled_class(lexeme: str, spellings: Spellings) -> str:
    """A character class that holds a character of ``spellings`` (a pattern's ``[A-Za-z ]``), taking its piece too:
    a one-character piece (``▁``) inside the class, a longer one (``<0x0A>``) as an alternative beside it. A negated
    class already takes every piece's text."""
    body = lexeme[1:-1]
    if body.startswith("^"):
        return lexeme
    matches = list(_CLASS_CHAR.finditer(body))
    chars = [_class_char(match) for match in matches]
    # Ranges: an unescaped "-" between two characters (a leading or trailing one, or an escaped one, is itself).
    dashes = [match[0] == "-" for match in matches]
    spans = []
    index = 0
    while index < len(chars):
        if index + 2 < len(chars) and dashes[index + 1]:
            spans.append((ord(chars[index]), ord(chars[index + 2])))
            index += 3
        else:
            spans.append((ord(chars[index]), ord(chars[index])))
            index += 1
    held = [char for char in spellings if any(low <= ord(char) <= high for low, high in spans)]
    inside = "".join(spellings[char] for char in held if len(spellings[char]) == 1)
    beside = [_literal(spellings[char]) for char in held if len(spellings[char]) > 1]
    if not held:
        return lexeme
    written = f"[{body}{inside}]"
    return f"({' | '.join([written, *beside])})" if beside else written


def _class_char(match: re.Match[str]) -> str:
    code, byte, escaped, plain = match.groups()
    if code or byte:
        return chr(int(code or byte, 16))
    return _CLASS_ESCAPES.get(escaped, escaped) if escaped is not None else plain


def _literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
