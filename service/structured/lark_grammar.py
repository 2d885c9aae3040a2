"""A custom tool's Lark grammar (OpenAI's subset) -> XGrammar EBNF rules for the input as JSON string contents.

Why the ``lark`` package: it is the reference reader of the syntax OpenAI documents for custom tools (rules and
terminals, ``"literal"``, ``/regex/``, ``"a".."z"``, ``( )``, ``[ ]``, ``? * +``, ``~ n..m``, aliases ``-> name``,
``%import common.X``), so a grammar means what it means to OpenAI, imports included, with Lark's own errors for
what is malformed. Its parsed EBNF tree is translated, not its compiled BNF: compiling refuses grammars OpenAI's own
examples use (``expr: term (SP ADD SP term)* -> add | term`` expands to the same rule twice).

The input of a custom call sits inside a JSON string (the chat template's function arguments), so every terminal
is written in the escaped form a JSON string holds: literals through ``json.dumps``, regular expressions and ranges
through ovserve's regex subset (``regex_grammar``), whose classes and ``.`` never produce a quote, a backslash or
a raw control character (a control character a pattern names is written as its JSON escape). Refused, naming the
construct: templates (rules with parameters), ``%ignore`` and ``%declare`` (a lexer's notions, not a language's),
case-insensitive literals, and the regex constructs ``regex_grammar`` refuses.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from ovserve.service.structured.gbnf import MAX_FREE_GRAMMAR_BYTES, MAX_FREE_GRAMMAR_RULES
from ovserve.service.structured.json_grammar import literal
from ovserve.service.structured.regex_grammar import PatternError, regex_expression

REPEATS = {"*", "+", "?"}
CACHE_SIZE = 128  # translations kept, least recently used dropped first


class LarkError(ValueError):
    """A grammar Lark cannot read, or one past a bound or outside the translated subset."""


def lark_rules(definition: str, prefix: str) -> tuple[str, dict[str, str]]:
    """The start expression and the EBNF rules (name -> body; names begin with ``prefix``) of the JSON string
    contents ``definition``'s language holds. Raises LarkError.

    Translations are cached (clients send the same tools every turn): Lark reads a grammar with its imports in
    ~8 ms, which output_constraint also keeps off the event loop."""
    start, rules = _translated(definition, prefix)
    return start, dict(rules)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _translated(definition: str, prefix: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    start, rules = _translate(definition, prefix)
    return start, tuple(rules.items())


def _translate(definition: str, prefix: str) -> tuple[str, dict[str, str]]:
    from lark.exceptions import LarkError as ReadError
    from lark.load_grammar import load_grammar

    size = len(definition.encode())
    if size > MAX_FREE_GRAMMAR_BYTES:
        raise LarkError(f"{size} bytes; at most {MAX_FREE_GRAMMAR_BYTES} are accepted")
    try:
        grammar, _ = load_grammar(definition, "<custom tool>", [], False)
    except ReadError as error:
        raise LarkError(f"not a Lark grammar: {str(error).strip()}") from None
    if grammar.ignore:
        raise LarkError("%ignore is not supported: write the whitespace into the rules")
    rules = {name: (params, tree) for name, params, tree, _options in grammar.rule_defs}
    terminals = {name: tree for name, (tree, _priority) in grammar.term_defs}
    if len(rules) + len(terminals) > MAX_FREE_GRAMMAR_RULES:
        raise LarkError(f"{len(rules) + len(terminals)} rules; at most {MAX_FREE_GRAMMAR_RULES} are accepted")
    if "start" not in rules:
        raise LarkError("a start rule is required (start: ...)")
    for name, (params, _tree) in rules.items():
        if params:
            raise LarkError(f"rule {name}: templates (rules with parameters) are not supported")
    writer = _Writer(prefix, set(rules), set(terminals))
    out = {writer.rule(name): writer.write(tree) for name, (_params, tree) in rules.items()}
    for name, tree in terminals.items():
        if tree is None:
            raise LarkError(f"terminal {name}: %declare is not supported")
        out[writer.terminal(name)] = writer.write(tree)
    return writer.rule("start"), out


class _Writer:
    """Writes a Lark EBNF tree as XGrammar EBNF, its rules and terminals named under one prefix."""

    def __init__(self, prefix: str, rules: set[str], terminals: set[str]) -> None:
        self.prefix, self.rules, self.terminals = prefix, rules, terminals

    def rule(self, name: str) -> str:
        return f"{self.prefix}_r_{name}"

    def terminal(self, name: str) -> str:
        return f"{self.prefix}_t_{name}"

    def write(self, node: Any) -> str:
        """The EBNF of one tree node."""
        from lark import Token, Tree
        from lark.grammar import NonTerminal, Terminal

        if isinstance(node, NonTerminal):
            if node.name not in self.rules:
                raise LarkError(f"rule {node.name} is used but not defined")
            return self.rule(node.name)
        if isinstance(node, Terminal):
            if node.name not in self.terminals:
                raise LarkError(f"terminal {node.name} is used but not defined")
            return self.terminal(node.name)
        if isinstance(node, Token):
            return self._token(node)
        if not isinstance(node, Tree):
            raise LarkError(f"unexpected grammar element {node!r}")
        children = node.children
        if node.data == "expansions":
            return "(" + " | ".join(self.write(child) for child in children) + ")"
        if node.data == "expansion":
            return " ".join(self.write(child) for child in children) or '""'
        if node.data in ("alias", "value", "literal"):  # an alias names a tree node: the language is its first child
            return self.write(children[0])
        if node.data == "maybe":
            return f"({self.write(children[0])})?"
        if node.data == "range":
            low, high = (_string(token) for token in children)
            return self._regex(f"[{re.escape(low)}-{re.escape(high)}]")
        if node.data == "expr":
            return self._repeat(children)
        raise LarkError(f"{node.data} is not supported")

    def _repeat(self, children: list[Any]) -> str:
        item, operator, *bounds = children
        body = f"({self.write(item)})"
        if operator in REPEATS:
            return body + str(operator)
        low, high = (int(bounds[0]), int(bounds[-1]))
        if high < low:
            raise LarkError(f"~ {low}..{high}: the range is empty")
        return body + (f"{{{low}}}" if low == high else f"{{{low},{high}}}")

    def _token(self, token: Any) -> str:
        if token.type == "STRING":
            return literal(json.dumps(_string(token), ensure_ascii=False)[1:-1])  # its JSON string contents
        if token.type == "REGEXP":
            body, _, flags = str(token)[1:].rpartition("/")
            if flags:
                raise LarkError(f"regular expression {token}: flags ({flags}) are not supported")
            return self._regex(_unescaped(body, token))
        raise LarkError(f"{token} is not supported")

    def _regex(self, pattern: str) -> str:
        try:
            return f"({regex_expression(pattern)})"
        except PatternError as error:
            raise LarkError(f"regular expression /{pattern}/: {error}") from None


def _string(token: Any) -> str:
    """A Lark string literal's text; case-insensitive literals (``"a"i``) are refused."""
    text = str(token)
    if not text.endswith('"'):
        raise LarkError(f"literal {text}: flags are not supported")
    return _unescaped(text[1:-1], token).replace("\\\\", "\\")  # as Lark reads a string literal


def _unescaped(body: str, token: Any) -> str:
    """A literal's or regular expression's body with Lark's escapes read (``\\n`` is a newline; a regex's
    ``\\d`` stays), as Lark itself reads it."""
    from lark.exceptions import GrammarError
    from lark.load_grammar import eval_escaping

    try:
        text = str(eval_escaping(body))
    except GrammarError as error:
        raise LarkError(f"{token}: {error}") from None
    if not text:
        raise LarkError(f"{token}: empty terminals are not allowed")
    return text
