"""Test helper: a non-recursive XGrammar EBNF grammar (or expression) as a Python regex.

The grammars the builder writes use XGrammar's regex-like syntax (string literals with JSON escapes,
classes, groups, ``| ? * + {m,n}``), so inlining every rule turns one into a regex Python can run:
an independent check of the language a grammar accepts.
"""

from __future__ import annotations

import json
import re

TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[A-Za-z_]\w*|\s+|.')


def to_regex(grammar: str) -> str:
    """The regex of ``root`` (a grammar with ``name ::= body`` lines) or of a single expression."""
    lines = [line.split(" ::= ", 1) for line in grammar.splitlines() if " ::= " in line]
    rules = dict(lines) if lines else {"root": grammar}

    def expand(body: str, depth: int) -> str:
        assert depth < 100, "recursive grammar"
        out = []
        for token in TOKEN.findall(body):
            if token.startswith('"'):
                out.append(re.escape(json.loads(token)))
            elif token[0].isalpha() or token[0] == "_":
                out.append(f"(?:{expand(rules[token], depth + 1)})")
            elif token == "[^]":  # XGrammar's class of every character; an empty negated class to Python
                out.append(r"[\s\S]")
            elif not token.isspace():
                out.append(token)
        return "".join(out)

    return expand(rules["root"], 0)
