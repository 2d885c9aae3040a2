"""JSON Schema -> a compact XGrammar EBNF grammar (what ``StructuredOutputConfig(grammar=...)`` reads).

Why not hand the schema to the engine: the engine's own JSON-schema grammars (XGrammar inside) allow
any amount of whitespace between JSON tokens, with no option to limit it, and small models then pad
with newlines until max_tokens, so the JSON never closes. The grammars built here allow one optional
space after ``:`` and ``,`` and nowhere else: that is how models write JSON (Python's ``json.dumps``
style, with tokens like ``": "``), so the model keeps its preferred tokens, and whitespace can never
run on.

What the output looks like, for the subset of JSON Schema agents use:

- objects: declared ``properties`` in schema order, ``required`` ones always, optional ones maybe;
  no undeclared keys when ``properties`` are given (valid whatever ``additionalProperties`` says);
  without ``properties``, keys are free-form (at most FREE_MEMBERS of them) and values follow
  ``additionalProperties`` (free-form JSON when it is absent or true, none when false);
- arrays: ``items`` / ``prefixItems`` (and draft-07 tuple ``items`` / ``additionalItems``) with
  ``minItems`` / ``maxItems``;
- strings: unbounded unless ``maxLength`` says so (a model that never closes a string runs to
  max_tokens: the schema is how to bound it); escapes allowed, control characters not; ``minLength`` /
  ``maxLength``, ``pattern`` (a regular subset: literals, classes, ``\\d \\w \\s``, ``.``, groups,
  alternation, quantifiers, ``^``/``$`` at the ends), ``format`` date / time / date-time / uuid (other
  formats are annotations and ignored);
- integers: at most 15 digits (so a small model cannot write digits forever), exactly within
  ``minimum`` / ``maximum`` / ``exclusiveMinimum`` / ``exclusiveMaximum``; numbers: JSON number syntax,
  or, when bounded, an integer within the bounds (a valid number, and bounds stay exact);
- booleans, null, ``enum`` / ``const`` of any JSON value, ``anyOf`` / ``oneOf`` (oneOf's exclusivity is
  not enforced), a one-element ``allOf``, type lists, OpenAPI's ``nullable``, local ``$ref`` into
  ``$defs`` / ``definitions`` (recursion included), and any JSON value for ``{}`` or ``true``.

Anything else that constrains the value (``multipleOf``, ``patternProperties``, ``uniqueItems``, ...)
raises :class:`SchemaError` naming the keyword: ovserve refuses what it cannot enforce.

The grammar grows linearly with the schema: every part of a schema is written once (a part used
twice becomes a rule), and an object's optional members are a chain of rules rather than every
possible rest of the list. A schema past one of ``ovserve.service.structured.limits`` (size, nesting,
properties, alternatives, repetition bounds, pattern length, grammar size) raises
:class:`SchemaError` naming where.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from keyword import iskeyword
from typing import Any

from ovserve.service.parsing.markup import TAGGED_ARGUMENTS, TaggedArguments, tag_name
from ovserve.service.structured.limits import (
    MAX_ALTERNATIVES,
    MAX_GRAMMAR_BYTES,
    MAX_OBJECT_PROPERTIES,
    MAX_REPEAT,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_TOTAL_PROPERTIES,
)
from ovserve.service.structured.regex_grammar import PatternError, regex_expression

MAX_DIGITS = 15  # integer digits, fraction digits: enough for any real value, bounded for tiny models
MAX_INTEGER = 10**MAX_DIGITS - 1
# FREE_FORM: a schema that says nothing ({}, json_object) gets bounded JSON, so a model that never
# closes a string or a container still ends: two levels of nesting, at most FREE_MEMBERS members or
# items per container, keys of at most FREE_KEY_LENGTH characters, strings of at most FREE_TEXT_LENGTH.
# Declared strings are not bounded unless the schema says maxLength: a schema is how to ask for more.
FREE_MEMBERS = 6
FREE_KEY_LENGTH = 24
FREE_TEXT_LENGTH = 48

# Keywords that do not constrain the value.
ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$schema", "$id", "$comment", "$defs", "definitions",
     "deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType"}
)  # fmt: skip
TYPE_KEYWORDS = {
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "array": frozenset({"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"}),
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "integer": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}),
    "boolean": frozenset(),
    "null": frozenset(),
}
GENERAL_KEYWORDS = frozenset({"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "nullable"})
KNOWN = ANNOTATIONS | GENERAL_KEYWORDS | frozenset().union(*TYPE_KEYWORDS.values())

UNICODE_ESCAPE = '"u" ([0-9a-cA-CefEF] hex{3} | [dD] [0-7] hex{2})'
# The shared rules, written once per grammar when used. Strings exclude control characters and
# lone surrogate escapes (a \\uD800 would count as one character here and none in Python).
BASE_RULES = {
    "sep": '" "?',
    "char": r'[^"\\\x00-\x1f] | "\\" escape',
    "escape": r'["\\/bfnrt] | ' + UNICODE_ESCAPE,
    "hex": "[0-9a-fA-F]",
    "string": r'"\"" char* "\""',
    "integer": f'"-"? ("0" | [1-9] [0-9]{{0,{MAX_DIGITS - 1}}})',
    "number": f'integer ("." [0-9]{{1,{MAX_DIGITS}}})? ([eE] [+-]? [0-9]{{1,2}})?',
    # Free-form JSON (json_object, {}): bounded, see FREE_FORM.
    "value": "object | array | scalar",
    "object": f'"{{" (key ":" sep inner ("," sep key ":" sep inner){{0,{FREE_MEMBERS - 1}}})? "}}"',
    "array": f'"[" (inner ("," sep inner){{0,{FREE_MEMBERS - 1}}})? "]"',
    "inner": "flat_object | flat_array | scalar",
    "flat_object": f'"{{" (key ":" sep scalar ("," sep key ":" sep scalar){{0,{FREE_MEMBERS - 1}}})? "}}"',
    "flat_array": f'"[" (scalar ("," sep scalar){{0,{FREE_MEMBERS - 1}}})? "]"',
    "scalar": 'text | number | "true" | "false" | "null"',
    "key": f'"\\"" char{{1,{FREE_KEY_LENGTH}}} "\\""',
    "text": f'"\\"" char{{0,{FREE_TEXT_LENGTH}}} "\\""',
    "date": '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])',
    "time": '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? '
    '("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])',
}
BASE_USES = {  # which shared rules each shared rule needs
    "char": ("escape",), "escape": ("hex",), "string": ("char",), "number": ("integer",),
    "value": ("object", "array", "scalar"), "object": ("key", "sep", "inner"), "array": ("inner", "sep"),
    "inner": ("flat_object", "flat_array", "scalar"), "flat_object": ("key", "sep", "scalar"),
    "flat_array": ("scalar", "sep"), "scalar": ("text", "number"), "key": ("char",), "text": ("char",),
}  # fmt: skip
FORMATS = {
    "date": "date",
    "time": "time",
    "date-time": 'date "T" time',
    "uuid": 'hex{8} "-" hex{4} "-" hex{4} "-" hex{4} "-" hex{12}',
}
FORMAT_USES = {"date": ("date",), "time": ("time",), "date-time": ("date", "time"), "uuid": ("hex",)}


class SchemaError(ValueError):
    """A schema the converter cannot enforce; ``path`` leads to the offending keyword."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def literal(text: str) -> str:
    """An EBNF string literal (XGrammar reads JSON's escapes)."""
    return json.dumps(text, ensure_ascii=False)


def json_text(value: Any) -> str:
    """The compact JSON text of ``value``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def json_literal(value: Any) -> str:
    """An EBNF literal for the compact JSON text of ``value``."""
    return literal(json_text(value))


def python_literal(value: Any) -> str:
    """The compact Python literal of a JSON value (``True``, ``None``, ``{"a":[1]}``), as ast.literal_eval reads it."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{python_literal(key)}:{python_literal(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(python_literal(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)  # strings and numbers: JSON's spelling is Python's


@dataclass(frozen=True)
class Dialect:
    """How a grammar writes values: booleans and null, string escapes, constants, and the root object.

    ``JSON`` by default; ``PYTHON`` for pythonic tool calls, whose arguments are Python keyword
    arguments read back with ``ast.literal_eval`` (``True`` / ``False`` / ``None``, no ``\\/``
    escape, the root object as ``city="Paris", days=3``); ``TAGGED`` for XML-style tool calls
    (Qwen3-Coder, GLM), whose root object is one tagged member per argument, a string value as raw
    text and any other as JSON (``_Document._tagged``).
    """

    true: str  # EBNF expressions
    false: str
    null: str
    rules: Mapping[str, str]  # shared rules written differently from BASE_RULES
    text: Callable[[Any], str]  # the compact text of a constant (enum, const)
    keywords: bool = False  # the root object is written as keyword arguments, city="Paris", days=3
    tagged: TaggedArguments | None = None  # the root object is written as tagged members (XML-style tool calls)


JSON = Dialect('"true"', '"false"', '"null"', {}, json_text)
PYTHON = Dialect(
    '"True"', '"False"', '"None"',
    # "\/" is JSON's escape of "/" but not Python's (it would read back as two characters).
    {"escape": r'["\\bfnrt] | ' + UNICODE_ESCAPE, "scalar": 'text | number | "True" | "False" | "None"'},
    python_literal,
    keywords=True,
)  # fmt: skip
# Qwen3-Coder's and GLM's tagged arguments: a string value is raw text, any other value is JSON.
TAGGED = {name: replace(JSON, tagged=form) for name, form in TAGGED_ARGUMENTS.items()}
DIALECTS = {"json": JSON, "python": PYTHON, **TAGGED}  # by the names CallMarkup.arguments uses


def schema_grammar(schema: Any) -> str:
    """The EBNF grammar (``root ::= ...``) of compact JSON documents valid against ``schema``."""
    grammar = GrammarBuilder()
    return grammar.ebnf(grammar.add(schema))


class GrammarBuilder:
    """Collects rules for one grammar; several schemas may share it (one per tool, say)."""

    def __init__(self, dialect: str = "json") -> None:
        self.dialect = DIALECTS[dialect]  # how values are written, by name (CallMarkup.arguments)
        self._rules: dict[str, str] = {}
        self._base: set[str] = set()
        self._refs: dict[tuple[int, int], str] = {}
        self.size = 0  # characters of rule text so far (MAX_GRAMMAR_BYTES)
        self.properties = 0  # declared properties so far, all schemas (MAX_TOTAL_PROPERTIES)
        # A string "format" the server names -> the EBNF of its contents (a custom tool's input grammar,
        # ovserve.service.structured.custom_input); a client's schema cannot add one.
        self.contents: dict[str, str] = {}

    def add(self, schema: Any) -> str:
        """A rule name for the JSON values ``schema`` (a whole document, for its ``$ref``s) allows.

        Raises :class:`SchemaError` for what cannot be enforced and for a schema past a limit; the
        size and depth limits are checked first, before anything else reads the schema.
        """
        check_size(schema)
        return self.rule("schema", _Document(self, schema).value(schema, ()))

    def ebnf(self, root: str) -> str:
        """The grammar text, with ``root`` (an EBNF expression) as its start."""
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self._rules.items()]
        rules = {**BASE_RULES, **self.dialect.rules}
        lines += [f"{name} ::= {rules[name]}" for name in BASE_RULES if name in self._base]
        return "\n".join(lines) + "\n"

    def base(self, *names: str) -> None:
        """Mark shared rules (and what they use) as needed."""
        for name in names:
            if name not in self._base:
                self._base.add(name)
                self.base(*BASE_USES.get(name, ()))

    def rule(self, hint: str, body: str) -> str:
        """A new rule with this body; its name."""
        name = f"{hint}_{len(self._rules)}"
        self.define(name, body)
        return name

    def once(self, name: str, body: str) -> str:
        """A rule of a fixed name, written once however many parts of the grammar use it."""
        if name not in self._rules:
            self.define(name, body)
        return name

    def reserve(self, key: tuple[int, int]) -> tuple[str, bool]:
        """The rule name for a ``$ref`` target, and whether it is new (so its body is still to write)."""
        if key in self._refs:
            return self._refs[key], False
        name = self._refs[key] = f"ref_{len(self._rules)}"
        self._rules[name] = ""  # filled in by define(); reserved first so recursion finds it
        return name, True

    def define(self, name: str, body: str) -> None:
        """Set a rule's body; refuses (naming the whole schema) a grammar past MAX_GRAMMAR_BYTES."""
        self._rules[name] = body
        self.size += len(name) + len(body) + 6  # as ebnf() writes it: "name ::= body\n"
        if self.size > MAX_GRAMMAR_BYTES:
            message = f"its grammar is too large: at most {MAX_GRAMMAR_BYTES} characters of grammar are accepted"
            raise SchemaError((), message)


class _Document:
    """One schema document: resolves its local ``$ref``s and writes the expressions of its parts."""

    def __init__(self, grammar: GrammarBuilder, root: Any) -> None:
        self.grammar = grammar
        self.root = root

    def value(self, schema: Any, path: tuple[str | int, ...]) -> str:
        """The EBNF expression for the values ``schema`` allows."""
        if not path and self.grammar.dialect.keywords:
            return self._keywords(schema)
        if not path and self.grammar.dialect.tagged is not None:
            return self._tagged(schema, self.grammar.dialect.tagged)
        if schema is True or schema == {}:
            return self._base("value")
        if schema is False:
            raise SchemaError(path, "a false schema allows no value")
        _check_keywords(schema, path)
        expression = self._constrained(schema, path)
        if schema.get("nullable") is True:
            expression = f"{expression} | {self.grammar.dialect.null}"
        return f"({expression})"

    def _constrained(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> str:
        combinators = [key for key in ("$ref", "anyOf", "oneOf", "allOf") if key in schema]
        if combinators:
            key = combinators[0]
            others = [k for k in schema if k not in ANNOTATIONS and k not in (key, "nullable")]
            if others:
                raise SchemaError((*path, others[0]), f"{others[0]} cannot be combined with {key} here")
            return self._combinator(key, schema[key], (*path, key))
        if "const" in schema or "enum" in schema:
            return self._enum(schema, path)
        types = schema.get("type", _implied_types(schema))
        if isinstance(types, str):
            types = [types]
        return " | ".join(self._typed(schema, kind, path) for kind in dict.fromkeys(types))

    def _combinator(self, key: str, target: Any, path: tuple[str | int, ...]) -> str:
        if key == "$ref":
            return self._ref(target, path)
        if not isinstance(target, list) or not target:
            raise SchemaError(path, f"{key} must be a non-empty list")
        if key == "allOf" and len(target) > 1:
            raise SchemaError(path, "allOf with more than one schema is not supported in structured outputs")
        _check_count(len(target), MAX_ALTERNATIVES, "alternatives", path)
        return " | ".join(self.value(sub, (*path, index)) for index, sub in enumerate(target))

    def _ref(self, ref: Any, path: tuple[str | int, ...]) -> str:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaError(path, "only local references (#/$defs/...) are supported")
        target: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise SchemaError(path, f"{ref} does not resolve in this schema")
        # Keyed by the target, not the spelling: "#/$defs/a" and "#/$defs//a" share one rule.
        name, new = self.grammar.reserve((id(self.root), id(target)))
        if new:
            self.grammar.define(name, self.value(target, path))
        return name

    def _enum(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> str:
        values = self._enum_values(schema, path)
        alternatives = dict.fromkeys(literal(self.grammar.dialect.text(value)) for value in values)
        return " | ".join(alternatives) if alternatives else self.grammar.dialect.null

    def _enum_values(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> list[Any]:
        """The values of ``enum`` / ``const`` that also match ``type`` (null left to ``nullable``)."""
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        _check_count(len(values), MAX_ALTERNATIVES, "values", (*path, "enum" if "enum" in schema else "const"))
        if "const" in schema and "enum" in schema:
            values = [value for value in values if value in schema["enum"]]
        if "type" in schema:
            types = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
            values = [value for value in values if any(_is_type(value, kind) for kind in types)]
        if schema.get("nullable") is True:
            values = [value for value in values if value is not None]
        if not values and schema.get("nullable") is not True:
            raise SchemaError((*path, "enum" if "enum" in schema else "const"), "no value satisfies the schema")
        return values

    def _typed(self, schema: dict[str, Any], kind: Any, path: tuple[str | int, ...]) -> str:
        build = {
            "object": self._object, "array": self._array, "string": self._string,
            "integer": self._integer, "number": self._number,
        }  # fmt: skip
        if kind == "boolean":
            return f"{self.grammar.dialect.true} | {self.grammar.dialect.false}"
        if kind == "null":
            return self.grammar.dialect.null
        if kind not in build:
            raise SchemaError((*path, "type"), f"unknown type {kind!r}")
        return f"({build[kind](schema, path)})"

    def _object(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> str:
        properties = dict(schema.get("properties", {}))
        required = list(schema.get("required", []))
        extra = schema.get("additionalProperties", True)
        for name in required:
            if name not in properties:
                if extra is False:
                    raise SchemaError((*path, "required"), f"{name!r} is required but additionalProperties is false")
                properties[name] = extra if isinstance(extra, dict) else {}
        if not properties:
            if extra is False:
                return '"{" "}"'
            if not isinstance(extra, dict) or extra == {}:
                return self._base("object")
            self.grammar.base("key", "sep")  # undeclared keys are free-form: bounded like FREE_FORM
            pair = self.grammar.rule("pair", f'key ":" sep {self.value(extra, (*path, "additionalProperties"))}')
            return f'"{{" ({pair} ("," sep {pair}){{0,{FREE_MEMBERS - 1}}})? "}}"'
        _check_count(len(properties), MAX_OBJECT_PROPERTIES, "properties", (*path, "properties"))
        self.grammar.properties += len(properties)
        if self.grammar.properties > MAX_TOTAL_PROPERTIES:
            message = f"too many properties: at most {MAX_TOTAL_PROPERTIES} in all objects together are accepted"
            raise SchemaError((*path, "properties"), message)
        self.grammar.base("sep")
        pairs = [  # one rule per member: _members refers to a member from two places
            (self._member(name, sub, path), name in required) for name, sub in properties.items()
        ]
        return f'"{{" {_members(self.grammar, pairs)} "}}"'

    def _member(self, name: str, schema: Any, path: tuple[str | int, ...]) -> str:
        value = self.value(schema, (*path, "properties", name))
        return self.grammar.rule("member", f'{json_literal(name)} ":" sep {value}')

    def _keywords(self, schema: Any) -> str:
        """The root object as Python keyword arguments, ``city="Paris", days=3`` (pythonic tool calls).

        Members follow the rules of ``_object``; names must be identifiers, since a call cannot spell
        another. Undeclared names are free-form identifiers (a Python keyword among them does not parse,
        and the call is then read as text).
        """
        properties, required, extra = _root_object(schema, "keyword arguments")
        for name in properties:
            if not name.isidentifier() or iskeyword(name):
                raise SchemaError(("properties", name), f"{name!r} cannot be a Python keyword argument")
        self.grammar.base("sep")
        if not properties:
            if extra is False:
                return '""'
            value = self.value(extra if isinstance(extra, dict) else {}, ("additionalProperties",))
            pair = self.grammar.rule("keyword", f'[a-zA-Z_] [a-zA-Z0-9_]{{0,{FREE_KEY_LENGTH - 1}}} "=" {value}')
            return f'({pair} ("," sep {pair}){{0,{FREE_MEMBERS - 1}}})?'
        pairs = [
            (
                self.grammar.rule("keyword", f'{literal(name)} "=" {self.value(sub, ("properties", name))}'),
                name in required,
            )
            for name, sub in properties.items()
        ]
        return _members(self.grammar, pairs)

    def _tagged(self, schema: Any, form: TaggedArguments) -> str:
        """The root object as tagged members (Qwen3-Coder's ``<parameter=city>\\nParis\\n</parameter>\\n``,
        GLM's ``<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value>\\n``), one after the other.

        Members follow the rules of ``_object``; values are ``_tagged_value``s. Undeclared names are
        free-form identifiers, with JSON values (the parser, told no type for them, reads JSON first).
        """
        properties, required, extra = _root_object(schema, "tagged arguments")
        for name in properties:
            if not tag_name(name):
                raise SchemaError(("properties", name), f"{name!r} cannot be written as a tagged argument's name")
        begin, end = literal(form.key_begin), literal(form.value_end)
        # Where the key's end tells raw text from JSON (DSML), each value writes its own (_marked).
        key_end = "" if form.json_key_end else form.key_end
        if not properties:
            if extra is False or "{key}" in form.value_end:  # a free name cannot be repeated in its closing tag
                return '""'
            value = self.value(extra if isinstance(extra, dict) else {}, ("additionalProperties",))
            key = f"[a-zA-Z_] [a-zA-Z0-9_]{{0,{FREE_KEY_LENGTH - 1}}}"
            marked = _marked(form, value, raw=False)
            pair = self.grammar.rule("tagged", f"{begin} {key} {literal(key_end)} {marked} {end}")
            return f"{pair}{{0,{FREE_MEMBERS}}}"
        pairs = [
            (
                self.grammar.rule(
                    "tagged",
                    f"{literal(form.key_begin + name + key_end)} "
                    f"({self._tagged_value(sub, ('properties', name), form)}) "
                    f"{literal(form.value_end.replace('{key}', name))}",
                ),
                name in required,
            )
            for name, sub in properties.items()
        ]
        return _members(self.grammar, pairs, joiner="")

    def _tagged_value(self, schema: Any, path: tuple[str | int, ...], form: TaggedArguments) -> str:
        """A tagged argument's value: a string as raw text where the schema declares strings, anything
        else compact JSON. The parser reads a value back by the same schema
        (``ovserve.service.parsing.tagged_calls.typed_value``): raw text where it may be a string, else JSON.
        """
        if not isinstance(schema, dict):
            return _marked(form, self.value(schema, path), raw=False)
        _check_keywords(schema, path)
        combinators = [key for key in ("$ref", "anyOf", "oneOf", "allOf") if key in schema]
        if combinators:
            key = combinators[0]
            alternatives = schema[key]
            simple = not set(schema) - ANNOTATIONS - {key, "nullable"}
            if key not in ("anyOf", "oneOf") or not simple or not isinstance(alternatives, list) or not alternatives:
                return _marked(form, self.value(schema, path), raw=False)  # $ref, allOf, or refused there
            _check_count(len(alternatives), MAX_ALTERNATIVES, "alternatives", (*path, key))
            written = [self._tagged_value(sub, (*path, key, index), form) for index, sub in enumerate(alternatives)]
        elif "enum" in schema or "const" in schema:
            values = self._enum_values(schema, path)
            if not any(isinstance(value, str) for value in values):
                return _marked(form, self.value(schema, path), raw=False)
            texts = [(value, True) if isinstance(value, str) else (json_text(value), False) for value in values]
            for text, _ in texts:
                if any(stop in text for stop in form.stops):
                    raise SchemaError(path, f"{text!r} holds a closing tag, so this model cannot write it")
            written = list(dict.fromkeys(_marked(form, literal(text), raw=raw) for text, raw in texts))
        else:
            types = schema.get("type", [])
            types = [types] if isinstance(types, str) else list(types)
            if "string" not in types:  # only a declared string is raw: the parser types values by the declaration
                return _marked(form, self.value(schema, path), raw=False)
            written = [_marked(form, self._raw_string(schema, path, form), raw=True)]
            others = [kind for kind in dict.fromkeys(types) if kind != "string"]
            if others:
                other = self.value({**schema, "type": others, "nullable": False}, path)
                written.append(_marked(form, other, raw=False))
        if schema.get("nullable") is True:
            written.append(_marked(form, self.grammar.dialect.null, raw=False))
        return " | ".join(f"({expression})" for expression in written)

    def _raw_string(self, schema: dict[str, Any], path: tuple[str | int, ...], form: TaggedArguments) -> str:
        """A string as raw text. Unbounded, any text without ``form``'s closing tags (a parser would end the
        value there); within ``minLength`` / ``maxLength``, text without "<"; a ``format``'s own text."""
        if "pattern" in schema:
            raise SchemaError((*path, "pattern"), "pattern is not supported for a string written as raw text")
        fmt = schema.get("format")
        if fmt in FORMATS:
            self.grammar.base(*FORMAT_USES[fmt])
            return FORMATS[fmt]
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        _check_repeat(schema, ("minLength", "maxLength"), path)
        if not low and high is None:
            return self.grammar.once("raw_text", raw_text(form.stops))
        if high is not None and low > high:
            raise SchemaError((*path, "minLength"), "minLength is above maxLength")
        return _repeat("[^<]", low, high) or '""'

    def _array(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> str:
        items = schema.get("items", True)
        if isinstance(items, list):  # draft-07 tuples
            prefix, rest, rest_key = items, schema.get("additionalItems", True), "additionalItems"
        else:
            prefix, rest, rest_key = schema.get("prefixItems", []), items, "items"
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        _check_repeat(schema, ("minItems", "maxItems"), path)
        prefix_key = "items" if isinstance(items, list) else "prefixItems"
        if high is not None:
            prefix = prefix[:high]
        elements = [self.value(sub, (*path, prefix_key, index)) for index, sub in enumerate(prefix)]
        more_low = max(0, low - len(elements))
        more_high = None if high is None else high - len(elements)
        if more_high is not None and more_low > more_high:
            raise SchemaError((*path, "minItems"), "minItems is above maxItems")
        if rest is False:
            if more_low:
                raise SchemaError((*path, "minItems"), "more items required than the schema allows")
            more_high = 0
        self.grammar.base("sep")
        parts = [" ".join(['"["', *[f'"," sep {e}' if i else e for i, e in enumerate(elements)]])]
        if more_high != 0:
            item = self.value(rest, (*path, rest_key))
            if not _is_name(item):  # written twice below: once as a rule
                item = self.grammar.rule("item", item)
            if elements:
                parts.append(_repeat(f'("," sep {item})', more_low, more_high))
            else:
                tail = _repeat(f'("," sep {item})', max(more_low - 1, 0), None if more_high is None else more_high - 1)
                parts.append(f"({item} {tail})" + ("" if more_low else "?"))
        return " ".join([*parts, '"]"'])

    def _string(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> str:
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        _check_repeat(schema, ("minLength", "maxLength"), path)
        if "pattern" in schema:
            if "minLength" in schema or "maxLength" in schema:
                raise SchemaError((*path, "pattern"), "pattern with minLength/maxLength is not supported")
            return f'"\\"" {pattern_expression(schema["pattern"], (*path, "pattern"))} "\\""'
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in self.grammar.contents:
            return f'"\\"" {self.grammar.contents[fmt]} "\\""'
        if fmt in FORMATS:
            self.grammar.base(*FORMAT_USES[fmt])
            return f'"\\"" {FORMATS[fmt]} "\\""'
        self.grammar.base("char" if low or high is not None else "string")
        if not low and high is None:
            return "string"
        if high is not None and low > high:
            raise SchemaError((*path, "minLength"), "minLength is above maxLength")
        return f'"\\"" {_repeat("char", low, high)} "\\""'

    def _integer(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> str:
        low, high = _bounds(schema, path)
        if low <= -MAX_INTEGER and high >= MAX_INTEGER:
            return self._base("integer")
        return integer_range(low, high, path)

    def _number(self, schema: dict[str, Any], path: tuple[str | int, ...]) -> str:
        if not any(key in schema for key in TYPE_KEYWORDS["number"]):
            return self._base("number")
        return self._integer(schema, path)  # bounded: an integer within the bounds, exactly

    def _base(self, name: str) -> str:
        self.grammar.base(name)
        return name


# ---- pieces ----


def _implied_types(schema: dict[str, Any]) -> list[str]:
    """The types a schema without ``type`` constrains (any value if none): we write only those."""
    implied = [kind for kind, keys in TYPE_KEYWORDS.items() if keys & schema.keys() and kind != "integer"]
    return implied or list(TYPE_KEYWORDS)


def _is_type(value: Any, kind: str) -> bool:
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int | float) and not isinstance(v, bool) and float(v).is_integer(),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    return kind in checks and bool(checks[kind](value))


def _members(grammar: GrammarBuilder, pairs: list[tuple[str, bool]], joiner: str = '"," sep') -> str:
    """Object members in order: required ones always, optional ones maybe, commas only between.

    Linear in the number of members: the first member written is one of the optional ones before the
    first required member, or that one; what may follow member i is the chain ``rest_{i+1}`` (member
    i+1 with its comma, maybe if optional, then ``rest_{i+2}``), a rule where two places refer to it.
    """
    first_required = next((index for index, (_, required) in enumerate(pairs) if required), len(pairs))
    rests = [""] * (len(pairs) + 1)  # rests[i]: what may follow member i - 1
    for index in range(len(pairs) - 1, 0, -1):
        pair, required = pairs[index]
        step = f"{joiner} {pair}".strip()  # joiner: what stands between members ("" for tagged members)
        link = step if required else f"({step})?"
        rest = f"{link} {rests[index + 1]}".strip()
        # rests[i] is also the tail of the alternative starting with member i - 1, up to the first required
        rests[index] = grammar.rule("rest", rest) if index <= first_required + 1 else rest
    alternatives = [f"{pair} {rests[index + 1]}".strip() for index, (pair, _) in enumerate(pairs[: first_required + 1])]
    return "(" + " | ".join(alternatives) + ")" + ("" if first_required < len(pairs) else "?")


def _check_keywords(schema: Any, path: tuple[str | int, ...]) -> None:
    """Refuse a schema that is not an object, or that uses a keyword the converter cannot enforce."""
    if not isinstance(schema, dict):
        raise SchemaError(path, "must be a JSON Schema object")
    for keyword in schema:
        if keyword not in KNOWN:
            raise SchemaError((*path, keyword), f"{keyword} is not supported in structured outputs")
    if schema.get("uniqueItems") is True:
        raise SchemaError((*path, "uniqueItems"), "uniqueItems is not supported in structured outputs")


def _root_object(schema: Any, what: str) -> tuple[dict[str, Any], list[str], Any]:
    """The properties, required names and ``additionalProperties`` of a root object written member by member
    (``what``: keyword arguments, tagged arguments); a required name without a declaration is declared by
    ``additionalProperties``."""
    allowed = ANNOTATIONS | TYPE_KEYWORDS["object"] | {"type"}
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise SchemaError(("type",) if isinstance(schema, dict) else (), f"{what} need an object schema")
    for name in schema:
        if name not in allowed:
            raise SchemaError((name,), f"{name} is not supported at the top of {what}")
    properties = dict(schema.get("properties", {}))
    required = list(schema.get("required", []))
    extra = schema.get("additionalProperties", True)
    for name in required:
        if name not in properties:
            if extra is False:
                raise SchemaError(("required",), f"{name!r} is required but additionalProperties is false")
            properties[name] = extra if isinstance(extra, dict) else {}
    return properties, required, extra


def _marked(form: TaggedArguments, value: str, *, raw: bool) -> str:
    """A tagged value's expression, after the key end that says how it is written where the dialect has two
    (DSML's string="true" before raw text, string="false" before JSON); as it is where one key end serves."""
    if not form.json_key_end:
        return value
    return f"{literal(form.key_end if raw else form.json_key_end)} ({value})"


def raw_text(stops: tuple[str, ...]) -> str:
    """An EBNF expression for any text that holds none of ``stops``: closing tags, each starting with "<"
    and holding no other "<" (a raw string argument, which a parser reads up to such a tag).

    Cut at each "<", such text is a run without "<", then runs that each follow a "<" and do not start
    with the rest of a stop: a regular expression as long as the stops, where EBNF has no lookahead.
    """
    assert all(stop.startswith("<") and "<" not in stop[1:] for stop in stops)
    return f'[^<]* ("<" {_not_starting({stop[1:] for stop in stops})})*'


def _not_starting(tails: set[str]) -> str:
    """Text without "<" that starts with none of ``tails`` (each non-empty), as an optional EBNF group."""
    firsts = sorted({tail[0] for tail in tails})
    escaped = "".join("\\" + char if char in "\\]^-" else char for char in firsts)
    alternatives = [f"[^<{escaped}] [^<]*"]
    for first in firsts:
        rest = {tail[1:] for tail in tails if tail[0] == first}
        if "" not in rest:  # else this character completes a stop: the text cannot go on with it
            alternatives.append(f"{literal(first)} {_not_starting(rest)}")
    return f"({' | '.join(alternatives)})?"


def _check_count(count: int, limit: int, what: str, path: tuple[str | int, ...]) -> None:
    if count > limit:
        raise SchemaError(path, f"{count} {what}; at most {limit} are accepted")


def _check_repeat(schema: dict[str, Any], keys: tuple[str, ...], path: tuple[str | int, ...]) -> None:
    """Bounds the grammar writes as a repetition stay within MAX_REPEAT."""
    for key in keys:
        bound = schema.get(key)
        if isinstance(bound, int) and bound > MAX_REPEAT:
            raise SchemaError((*path, key), f"{bound}; at most {MAX_REPEAT} is accepted")


def _is_name(expression: str) -> bool:
    """Whether an expression is a rule name (in parentheses or not): cheap to write more than once."""
    return expression.strip("()").isidentifier()


def check_size(schema: Any) -> None:
    """Refuse a schema past MAX_SCHEMA_BYTES of compact JSON (escapes aside) or MAX_SCHEMA_DEPTH of nesting.

    One walk with its own stack (so no depth can overflow Python's) that stops where a limit is
    crossed: a schema of megabytes is refused after reading MAX_SCHEMA_BYTES of it.
    """
    size = 0
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(schema, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict | list):
            if len(path) >= MAX_SCHEMA_DEPTH:
                raise SchemaError(path, f"nested too deep: at most {MAX_SCHEMA_DEPTH} levels of JSON are accepted")
            items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
            size += 1 + len(items)  # brackets, commas and colons
            for key, item in items:
                size += len(key.encode()) + 2 if isinstance(key, str) else 0
                stack.append((item, (*path, key)))
        else:
            size += len(value.encode()) + 2 if isinstance(value, str) else len(str(value))
        if size > MAX_SCHEMA_BYTES:
            raise SchemaError((), f"too large: at most {MAX_SCHEMA_BYTES} bytes of JSON are accepted")


def _repeat(expression: str, low: int, high: int | None) -> str:
    if high is None:
        return f"{expression}{{{low},}}" if low else f"{expression}*"
    if high == low:
        return f"{expression}{{{low}}}" if low else ""
    return f"{expression}{{{low},{high}}}"


def _bounds(schema: dict[str, Any], path: tuple[str | int, ...]) -> tuple[int, int]:
    low, high = -MAX_INTEGER, MAX_INTEGER
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bound = schema.get(key)
        if bound is None:
            continue
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            raise SchemaError((*path, key), f"{key} must be a number")
        if key == "minimum":
            low = max(low, math.ceil(bound))
        elif key == "maximum":
            high = min(high, math.floor(bound))
        elif key == "exclusiveMinimum":
            low = max(low, math.floor(bound) + 1)
        else:
            high = min(high, math.ceil(bound) - 1)
    if low > high:
        raise SchemaError(path, "no integer of at most 15 digits lies within minimum/maximum")
    return low, high


def integer_range(low: int, high: int, path: tuple[str | int, ...] = ()) -> str:
    """An EBNF expression for the decimal integers in [low, high] (no leading zeros, no "-0")."""
    alternatives = []
    if low < 0:
        magnitudes = _digit_ranges(max(1, -high), -low)
        alternatives.append(f'"-" ({" | ".join(magnitudes)})')
    if high >= 0:
        alternatives += _digit_ranges(max(0, low), high)
    return " | ".join(alternatives)


def _digit_ranges(low: int, high: int) -> list[str]:
    out: list[str] = []
    while low <= high:
        width, top_width = len(str(low)), len(str(high))
        if low == 10 ** (width - 1) and high == 10**top_width - 1 and top_width > width:  # all of 10..99999
            return [*out, f"[1-9] [0-9]{{{width - 1},{top_width - 1}}}"]
        top = min(high, 10 ** len(str(low)) - 1)
        out += _same_length(str(low), str(top))
        low = top + 1
    return out


def _same_length(low: str, high: str) -> list[str]:
    """Digit strings of one length between ``low`` and ``high``, as EBNF sequences."""
    if low == high:
        return [literal(low)]
    if len(low) == 1:
        return [f"[{low}-{high}]"]
    if low[0] == high[0]:
        return [f"{literal(low[0])} {tail}" for tail in _same_length(low[1:], high[1:])]
    width = len(low) - 1
    first, last = int(low[0]), int(high[0])
    head: list[str] = []
    tail: list[str] = []
    if low[1:] != "0" * width:
        head = [f"{literal(low[0])} {rest}" for rest in _same_length(low[1:], "9" * width)]
        first += 1
    if high[1:] != "9" * width:
        tail = [f"{literal(high[0])} {rest}" for rest in _same_length("0" * width, high[1:])]
        last -= 1
    middle = [f"[{first}-{last}] [0-9]{{{width}}}"] if first <= last else []
    return head + middle + tail


# ---- patterns ----


def pattern_expression(pattern: Any, path: tuple[str | int, ...] = ()) -> str:
    """An EBNF expression for the JSON string *contents* that fully match ``pattern``.

    JSON Schema patterns are unanchored searches; writing a full match is a valid subset. The subset
    and its translation are ``ovserve.service.structured.regex_grammar``'s; what it refuses is refused at ``path``.
    """
    if not isinstance(pattern, str):
        raise SchemaError(path, "pattern must be a string")
    try:
        return regex_expression(pattern)
    except PatternError as error:
        raise SchemaError(path, str(error)) from error
