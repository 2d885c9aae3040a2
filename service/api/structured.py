"""Structured outputs: a request's output constraints -> the engine's ``OutputConstraint``.

The constraints a request may set (at most one of them):

- ``response_format`` (chat, completions, Responses): text | json_object | json_schema | structural_tag;
- ``guided_json`` / ``guided_regex`` / ``guided_choice`` (chat, completions; vLLM's names);
- ``text.format`` (Responses): text | json_object | json_schema;
- ``tool_choice`` "required" or a named function (chat, Responses): the model must write tool calls in
  the markup its tool parser reads (``service.parsing.markup``; the Hermes/Qwen form
  ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` for a model without one) with
  arguments valid against the tool's ``parameters``.

Every schema is checked against the JSON Schema meta-schema (``jsonschema``), then turned into a
compact EBNF grammar by ``service.api.json_grammar`` (not handed to the engine as a schema: XGrammar's
own JSON grammars allow unbounded whitespace, and small models pad with it until max_tokens); what
the converter cannot enforce is refused naming the keyword. Before the request is queued, the served
model's engine compiles the constraint with the model's own tokenizer, off the event loop and off
its steps (``check_compiles``; see service/engine/grammar.py): a grammar the engine cannot compile
would fail the whole engine step, and with it every request in the batch. Most grammars come from
our own generator, so what the check still catches is a generator bug, a user's guided_regex or
structural tag, or a grammar too large or too slow for the compiler. OVMS silently turns guidance
off on invalid input; ovserve refuses the request with INVALID_ARGUMENT naming the field.

Every constraint is a string (regex, EBNF, or an XGrammar structural-tag JSON document), so it
crosses into the engine process as plain data.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from google.protobuf import json_format

from service.api.common import canonical
from service.api.grammar_limits import (
    MAX_ALTERNATIVES,
    MAX_CHOICE_BYTES,
    MAX_PATTERN_LENGTH,
    MAX_STRUCTURAL_TAG_BYTES,
    MAX_STRUCTURES,
)
from service.api.json_grammar import GrammarBuilder, SchemaError, check_size, literal, schema_grammar
from service.engine import OutputConstraint
from service.errors import FieldViolation, InvalidArgument, quote
from service.models import ServedModel
from service.parsing.markup import HERMES, THINK, CallMarkup, ThinkMarkup

FORMAT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # OpenAI's rule for json_schema.name
JSON_OBJECT = schema_grammar({"type": "object"})  # json_object: any JSON object
MAX_PARALLEL_CALLS = 8  # "required" with parallel calls: a bound, so a small model cannot call forever
AFTER_THINK = "\n\n"  # what chat templates write between the reasoning block and the reply


@dataclass(frozen=True)
class Guide:
    """One output constraint: the request field that asked for it, and its grammar."""

    field: str  # e.g. "response_format", "guided_regex", "tool_choice"
    kind: str  # regex | grammar | structural_tags_config
    value: str
    blame: str = ""  # the field named if the grammar engine refuses it (default: field)
    schema: dict[str, Any] | None = None  # a JSON answer's schema (json_object, json_schema, guided_json)
    forced_calls: bool = False  # tool_choice "required" or named: the reply is tool calls

    def constraint(self) -> OutputConstraint:
        """The engine's form of this constraint."""
        return OutputConstraint(self.kind, self.value, self.blame or self.field)


def structured_output_config(
    request: Any,
    violations: list[FieldViolation],
    *,
    tools: Sequence[dict[str, Any]] = (),
    thinking: bool = False,
    markup: CallMarkup | None = None,
    think: ThinkMarkup | None = None,
    named_field: str = "named_tool_choice",
    parameters_field: str = "tools[{}].function.parameters",
) -> OutputConstraint | None:
    """The request's output constraint for the engine, or None; appends what is wrong to ``violations``.

    Whether the served model's grammar compiler takes it is checked later (``check_compiles``).

    ``tools``: the request's tools in the chat template's form ({"type": "function", "function": {...}});
    ``thinking``: the chat template lets the model open a reasoning block first (forced tool calls
    may follow one); ``markup`` / ``think``: the served model's tool-call and reasoning markup
    (``OutputFormat.call_markup`` / ``think_markup``; None: Hermes ``<tool_call>`` and ``<think>``);
    ``named_field`` / ``parameters_field``: how this request type names the named tool choice and a
    tool's parameters in errors.
    """
    before = len(violations)
    block = (think or THINK) if thinking else None  # the reasoning block a forced call may follow
    guides = [
        guide
        for guide in (
            _response_format(request, violations),
            _text_format(request, violations),
            _guided_json(request, violations),
            _guided_regex(request, violations),
            _guided_choice(request, violations),
            _tool_calls(request, violations, tools, markup or HERMES, block, named_field, parameters_field),
        )
        if guide is not None
    ]
    calls = [guide for guide in guides if guide.forced_calls]
    answers = [guide for guide in guides if not guide.forced_calls]
    if calls and answers:
        # A forced call is this turn's reply; the answer's format shapes a later turn's (after the results).
        guides = calls
    elif len(answers) == 1 and _offers_tools(request, tools):
        # Tools the model may call, and a format its answer must follow: either is a valid reply.
        combined = _calls_or_answer(request, violations, tools, markup or HERMES, block, answers[0], parameters_field)
        guides = [combined] if combined is not None else []
    if len(guides) > 1:
        first, second = guides[0], guides[1]
        violations.append(
            FieldViolation(second.field, f"cannot be combined with {first.field}: set at most one output constraint")
        )
    if len(violations) > before or not guides:
        return None
    return guides[0].constraint()


def _offers_tools(request: Any, tools: Sequence[dict[str, Any]]) -> bool:
    """Whether the model may call a tool of its own choosing (tools given, tool_choice auto or unset)."""
    return bool(tools) and (not _present(request, "tool_choice") or request.tool_choice == "auto")


# Requests up to this size (serialized) have their constraints checked and built on the event loop
# (a few milliseconds at most); larger ones in a worker thread, so other streams keep their pace.
INLINE_REQUEST_BYTES = 16_384


async def output_constraint(request: Any, violations: list[FieldViolation], **options: Any) -> OutputConstraint | None:
    """``structured_output_config`` (same arguments), off the event loop when the request is large."""
    if request.ByteSize() <= INLINE_REQUEST_BYTES:
        return structured_output_config(request, violations, **options)
    return await asyncio.to_thread(structured_output_config, request, violations, **options)


# ---- request fields -> guides ----


def _present(request: Any, name: str) -> bool:
    fields = request.DESCRIPTOR.fields_by_name
    if name not in fields:
        return False
    return bool(len(getattr(request, name))) if fields[name].is_repeated else request.HasField(name)


def _response_format(request: Any, violations: list[FieldViolation]) -> Guide | None:
    if not _present(request, "response_format"):
        return None
    fmt, where = request.response_format, "response_format"
    if fmt.type in ("", "text"):
        return None
    if fmt.type == "json_object":
        return Guide(where, "grammar", JSON_OBJECT, schema={"type": "object"})
    if fmt.type == "json_schema":
        if not fmt.HasField("json_schema"):
            violations.append(FieldViolation(f"{where}.json_schema", "required when type is json_schema"))
            return None
        spec = fmt.json_schema
        _check_name(spec.name, f"{where}.json_schema.name", violations)
        return _schema_guide(spec, "schema", f"{where}.json_schema.schema", where, violations)
    if fmt.type == "structural_tag":
        return _structural_tag(fmt, where, violations)
    violations.append(
        FieldViolation(
            f"{where}.type",
            f"unknown type {quote(fmt.type)}; expected text, json_object, json_schema or structural_tag",
        )
    )
    return None


def _text_format(request: Any, violations: list[FieldViolation]) -> Guide | None:
    if not _present(request, "text") or not request.text.HasField("format"):
        return None
    fmt, where = request.text.format, "text.format"
    if fmt.type in ("", "text"):
        return None
    if fmt.type == "json_object":
        return Guide(where, "grammar", JSON_OBJECT, schema={"type": "object"})
    if fmt.type == "json_schema":
        _check_name(fmt.name, f"{where}.name", violations)
        return _schema_guide(fmt, "schema", f"{where}.schema", where, violations)
    violations.append(
        FieldViolation(f"{where}.type", f"unknown type {quote(fmt.type)}; expected text, json_object or json_schema")
    )
    return None


def _guided_json(request: Any, violations: list[FieldViolation]) -> Guide | None:
    if not _present(request, "guided_json"):
        return None
    return _schema_guide(request, "guided_json", "guided_json", "guided_json", violations)


def _guided_regex(request: Any, violations: list[FieldViolation]) -> Guide | None:
    if not _present(request, "guided_regex"):
        return None
    if not request.guided_regex:
        violations.append(FieldViolation("guided_regex", "must not be empty"))
        return None
    if len(request.guided_regex) > MAX_PATTERN_LENGTH:
        message = f"{len(request.guided_regex)} characters; at most {MAX_PATTERN_LENGTH} are accepted"
        violations.append(FieldViolation("guided_regex", message))
        return None
    return Guide("guided_regex", "regex", request.guided_regex)


def _guided_choice(request: Any, violations: list[FieldViolation]) -> Guide | None:
    if not _present(request, "guided_choice"):
        return None
    choices = list(request.guided_choice)
    size = sum(len(choice.encode()) for choice in choices)
    if len(choices) > MAX_ALTERNATIVES or size > MAX_CHOICE_BYTES:
        message = f"{len(choices)} choices of {size} bytes; at most {MAX_ALTERNATIVES} choices of {MAX_CHOICE_BYTES}"
        violations.append(FieldViolation("guided_choice", message))
        return None
    for index, choice in enumerate(choices):
        if not choice:
            violations.append(FieldViolation(f"guided_choice[{index}]", "a choice must not be empty"))
    # An EBNF alternation of string literals: XGrammar reads JSON's string escapes, so no regex escaping.
    grammar = "root ::= " + " | ".join(json.dumps(choice, ensure_ascii=False) for choice in dict.fromkeys(choices))
    return Guide("guided_choice", "grammar", grammar)


def _structural_tag(fmt: Any, where: str, violations: list[FieldViolation]) -> Guide | None:
    """XGrammar's structural tag: the current ``format`` object, or the legacy structures + triggers."""
    for name, size in (("format", fmt.format.ByteSize()), ("structures", sum(s.ByteSize() for s in fmt.structures))):
        if size > MAX_STRUCTURAL_TAG_BYTES:  # protobuf's own size: known without reading the message
            violations.append(
                FieldViolation(f"{where}.{name}", f"{size} bytes; at most {MAX_STRUCTURAL_TAG_BYTES} are accepted")
            )
            return None
    for name, count in (("structures", len(fmt.structures)), ("triggers", len(fmt.triggers))):
        if count > MAX_STRUCTURES:
            violations.append(FieldViolation(f"{where}.{name}", f"{count} {name}; at most {MAX_STRUCTURES}"))
            return None
    if fmt.HasField("format"):
        if len(fmt.structures) or len(fmt.triggers):
            violations.append(FieldViolation(f"{where}.format", "set either format or structures/triggers, not both"))
        body = _struct(fmt.format, f"{where}.format", violations)
        return Guide(where, "structural_tags_config", json.dumps({"type": "structural_tag", "format": body}))
    if not len(fmt.structures):
        violations.append(FieldViolation(f"{where}.structures", "required when type is structural_tag"))
    if not len(fmt.triggers):
        violations.append(FieldViolation(f"{where}.triggers", "required when type is structural_tag"))
    tags = []
    for index, structure in enumerate(fmt.structures):
        field = f"{where}.structures[{index}]"
        if not any(structure.begin.startswith(trigger) for trigger in fmt.triggers):
            violations.append(FieldViolation(f"{field}.begin", "must start with one of the triggers"))
        schema = _schema(structure, "schema", f"{field}.schema", violations)
        grammar = None if schema is None else _grammar(schema, f"{field}.schema", violations)
        tags.append(_tag(structure.begin, grammar or JSON_OBJECT, structure.end))
    body = {"type": "triggered_tags", "triggers": list(fmt.triggers), "tags": tags}
    return Guide(where, "structural_tags_config", json.dumps({"type": "structural_tag", "format": body}))


def _tool_calls(
    request: Any,
    violations: list[FieldViolation],
    tools: Sequence[dict[str, Any]],
    markup: CallMarkup,
    think: ThinkMarkup | None,
    named_field: str,
    parameters_field: str,
) -> Guide | None:
    """tool_choice "required" (one call or more) or named (exactly that call), in the model's markup.

    ``think``: the reasoning block the model may write first, None when the template gives it none.
    """
    required = _present(request, "tool_choice") and request.tool_choice == "required"
    named = _present(request, "named_tool_choice")
    if not (required or named):
        return None
    if named and _present(request, "tool_choice"):
        violations.append(FieldViolation(named_field, "set either the string or the object form of tool_choice"))
        return None
    indexed = list(enumerate(tools))
    if named:
        choice = request.named_tool_choice
        name = getattr(choice, "name", "") or choice.function.name
        if choice.type not in ("", "function"):
            violations.append(
                FieldViolation(f"{named_field}.type", f"unknown type {quote(choice.type)}; expected function")
            )
        indexed = [(i, tool) for i, tool in indexed if tool.get("function", {}).get("name") == name]
        if not indexed:
            violations.append(FieldViolation(named_field, f"no tool named {quote(name)} in tools"))
            return None
        indexed = indexed[:1]
    elif not indexed:
        violations.append(FieldViolation("tool_choice", '"required" needs at least one tool'))
        return None
    grammar = GrammarBuilder(markup.arguments)
    listed = _calls(request, violations, grammar, indexed, markup, parameters_field, one=named)
    if listed is None:
        return None
    return _guide(named_field if named else "tool_choice", grammar.ebnf(listed), think, forced_calls=True)


def _calls(
    request: Any,
    violations: list[FieldViolation],
    grammar: GrammarBuilder,
    indexed: Sequence[tuple[int, dict[str, Any]]],
    markup: CallMarkup,
    parameters_field: str,
    *,
    one: bool,
) -> str | None:
    """The rule text of the tool calls a reply may hold (``one``: exactly one), in the model's markup.

    A call is one of the tools' begin + compact arguments + end, in one EBNF grammar.
    """
    calls = []
    for index, tool in indexed:
        function = tool.get("function", {})
        field = parameters_field.format(index)
        name = function.get("name", "")
        problem = markup.name_problem(name)
        if problem is not None:  # the name's field sits beside the parameters' in both request types
            violations.append(FieldViolation(field.rpartition(".")[0] + ".name", problem))
            continue
        parameters = function.get("parameters") or {"type": "object"}
        schema = _checked_schema(parameters, field, violations)
        if schema is None:
            continue
        try:
            arguments = grammar.add(schema)
        except SchemaError as error:
            violations.append(FieldViolation(field + _path(error.path), error.message))
            continue
        calls.append(f"{literal(markup.begin(name))} {arguments} {literal(markup.call_end)}")
    if not calls:
        return None
    call = grammar.rule("call", " | ".join(calls))
    parallel = not _present(request, "parallel_tool_calls") or request.parallel_tool_calls
    more = f"({literal(markup.separator)} {call}){{0,{MAX_PARALLEL_CALLS - 1}}}"
    listed = call if one or not parallel else f"{call} {more}"
    opening, closing = (literal(text) if text else "" for text in (markup.opening, markup.closing))  # "[" ... "]"
    return f"{opening} {listed} {closing}".strip()


def _calls_or_answer(
    request: Any,
    violations: list[FieldViolation],
    tools: Sequence[dict[str, Any]],
    markup: CallMarkup,
    think: ThinkMarkup | None,
    answer: Guide,
    parameters_field: str,
) -> Guide | None:
    """Tool calls (arguments valid for their tool) or an answer valid for ``answer``'s schema, in one grammar."""
    if answer.schema is None:
        violations.append(
            FieldViolation(answer.field, "with tools only a JSON answer (json_object, json_schema) can be combined")
        )
        return None
    if markup.arguments != "json":
        violations.append(
            FieldViolation(answer.field, "a JSON answer beside tools needs a model whose tool calls are JSON")
        )
        return None
    grammar = GrammarBuilder(markup.arguments)
    calls = _calls(request, violations, grammar, list(enumerate(tools)), markup, parameters_field, one=False)
    try:
        reply = grammar.add(answer.schema)
    except SchemaError as error:  # checked alone already; a combined grammar may pass a limit
        violations.append(FieldViolation((answer.blame or answer.field) + _path(error.path), error.message))
        return None
    if calls is None:
        return None
    return _guide(answer.field, grammar.ebnf(f"({calls}) | {reply}"), think, blame=answer.blame)


def _guide(field: str, ebnf: str, think: ThinkMarkup | None, *, forced_calls: bool = False, blame: str = "") -> Guide:
    """A grammar guide; with ``think``, the reasoning block the template leaves to the model may come first."""
    if think is None:
        return Guide(field, "grammar", ebnf, blame=blame, forced_calls=forced_calls)
    # Free text until the end tag is what a structural tag says simply and EBNF does not.
    block = {"type": "tag", "begin": think.begin, "content": {"type": "any_text"}, "end": think.end + AFTER_THINK}
    body = {"type": "sequence", "elements": [block, {"type": "grammar", "grammar": ebnf}]}
    document = json.dumps({"type": "structural_tag", "format": body})
    return Guide(field, "structural_tags_config", document, blame=blame, forced_calls=forced_calls)


def _tag(begin: str, grammar: str, end: str) -> dict[str, Any]:
    return {"type": "tag", "begin": begin, "content": {"type": "grammar", "grammar": grammar}, "end": end}


def _check_name(name: str, field: str, violations: list[FieldViolation]) -> None:
    if not FORMAT_NAME.match(name):
        violations.append(FieldViolation(field, "required: 1-64 characters of a-z, A-Z, 0-9, _ and -"))


# ---- schemas ----


def _schema_guide(
    message: Any, name: str, field: str, guide_field: str, violations: list[FieldViolation]
) -> Guide | None:
    schema = _schema(message, name, field, violations)
    grammar = None if schema is None else _grammar(schema, field, violations)
    if grammar is None:
        return None
    # Blame the schema itself for what the grammar engine refuses (the guide names the constraint).
    return Guide(guide_field, "grammar", grammar, blame=field, schema=schema)


def _grammar(schema: dict[str, Any], field: str, violations: list[FieldViolation]) -> str | None:
    """The compact JSON grammar of a checked schema; what the converter cannot enforce is refused."""
    try:
        return schema_grammar(schema)
    except SchemaError as error:
        violations.append(FieldViolation(field + _path(error.path), error.message))
        return None


def _path(path: Sequence[str | int]) -> str:
    """A JSON path as field-name suffix: ("properties", "a", 0) -> ".properties.a[0]"."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _schema(message: Any, name: str, field: str, violations: list[FieldViolation]) -> dict[str, Any] | None:
    """The JSON schema in ``message.<name>`` (a google.protobuf.Struct), checked against the meta-schema."""
    if not message.HasField(name):
        violations.append(FieldViolation(field, "required"))
        return None
    schema = _struct(getattr(message, name), field, violations)
    return None if schema is None else _checked_schema(schema, field, violations)


def _checked_schema(schema: Any, field: str, violations: list[FieldViolation]) -> dict[str, Any] | None:
    if not isinstance(schema, dict):
        violations.append(FieldViolation(field, "must be a JSON Schema object"))
        return None
    try:  # size and depth first: the meta-schema check costs ~1 ms per KiB
        check_size(schema)
    except SchemaError as error:
        violations.append(FieldViolation(field + _path(error.path), error.message))
        return None
    schema = _integral(schema)
    # The schema's own $schema picks its draft; 2020-12 (what OpenAI documents) otherwise.
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        where = _path(list(error.absolute_path))
        violations.append(FieldViolation(field + where, f"not a valid JSON Schema: {error.message}"))
        return None
    return schema


def _struct(struct: Any, field: str, violations: list[FieldViolation]) -> Any:
    # canonical: a Struct iterates in hash-seed order; the grammar (and so the
    # order of properties in the output) must not change from process to process.
    try:
        return canonical(json_format.MessageToDict(struct))
    except (ValueError, json_format.Error) as error:  # NaN and Infinity are not JSON
        violations.append(FieldViolation(field, f"must be valid JSON: {error}"))
        return None


def _integral(value: Any) -> Any:
    """protobuf Struct numbers are doubles: 3.0 -> 3, or XGrammar refuses "minItems": 3.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


# ---- the grammar engine's verdict ----


async def check_compiles(model: ServedModel, constraint: OutputConstraint | None) -> None:
    """Refuse ``constraint`` (INVALID_ARGUMENT naming its field) if ``model``'s grammar compiler cannot run it.

    The compile runs in the engine's grammar checker, with the model's own tokenizer, off the event loop
    (see service/engine/grammar.py); verdicts are cached by grammar text.
    """
    if constraint is None:
        return
    error = await model.engine.check_constraint(constraint)
    if error is not None:
        raise InvalidArgument.of(constraint.field, f"the grammar engine refused it: {error}")
