"""Structured outputs: a request's output constraints -> the engine's ``OutputConstraint``.

The constraints a request may set (at most one of them):

- ``response_format`` (chat, completions, Responses): text | json_object | json_schema | structural_tag;
- ``guided_json`` / ``guided_regex`` / ``guided_choice`` (chat, completions; vLLM's names);
- ``grammar`` (llama.cpp's GBNF) / ``guided_grammar`` (vLLM's) and ``structured_outputs`` (vLLM's newer
  spelling: one of grammar, regex, choice, json) on chat and completions (``ovserve.service.structured.gbnf``);
- ``text.format`` (Responses): text | json_object | json_schema;
- ``tool_choice`` "required" or a named function (chat, Responses): the model must write tool calls in
  the markup its tool parser reads (``ovserve.service.parsing.markup``; the Hermes/Qwen form
  ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` for a model without one) with
  arguments valid against the tool's ``parameters``.

Every schema is checked against the JSON Schema meta-schema (``jsonschema``), then turned into a
compact EBNF grammar by ``ovserve.service.structured.json_grammar`` (not handed to the engine as a schema: XGrammar's
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
import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from google.protobuf import json_format

from ovserve.service.engine import OutputConstraint
from ovserve.service.engine.vocabulary import NO_SPELLINGS, Spellings
from ovserve.service.errors import FieldViolation, InvalidArgument, quote
from ovserve.service.models import ServedModel
from ovserve.service.parsing.markup import HERMES, THINK, CallMarkup, ThinkMarkup, spaced_ebnf
from ovserve.service.structured.canonical import canonical
from ovserve.service.structured.custom_input import CUSTOM_FORMAT, CustomFormat, custom_arguments
from ovserve.service.structured.gbnf import GrammarTextError, check_grammar
from ovserve.service.structured.json_grammar import GrammarBuilder, SchemaError, check_size, literal, schema_grammar
from ovserve.service.structured.limits import (
    MAX_ALTERNATIVES,
    MAX_CHOICE_BYTES,
    MAX_GRAMMAR_BYTES,
    MAX_PATTERN_LENGTH,
    MAX_STRUCTURAL_TAG_BYTES,
    MAX_STRUCTURES,
    MAX_TOTAL_PROPERTIES,
)
from ovserve.service.structured.spelling import spelled_document, spelled_grammar, spelled_regex

FORMAT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # OpenAI's rule for json_schema.name
JSON_OBJECT = schema_grammar({"type": "object"})  # json_object: any JSON object
MAX_PARALLEL_CALLS = 8  # "required" with parallel calls: a bound, so a small model cannot call forever
AFTER_THINK = "\n\n"  # what chat templates write between the reasoning block and the reply
AFTER_THINK_BLANKS = r"[ \t\r\n]{0,4}"  # what a model may write there under a constraint
UNKNOWN_FORMAT = (
    "this model's tool-call format is unknown (its chat template shows none that ovserve reads), so a call "
    "cannot be forced; serve it with --tool-parser NAME=PARSER (tool_parser in the TOML) naming its format"
)


@dataclass(frozen=True)
class Guide:
    """One output constraint: the request field that asked for it, and its grammar.

    ``think``: the model's reasoning block, which comes before what the guide constrains when the
    prompt leaves it open (``constraint(opened=True)``: QwQ's and DeepSeek-R1's templates end the prompt
    with ``<think>``) or, for tool calls, when the request lets the model think first (``thinking``).
    """

    field: str  # e.g. "response_format", "guided_regex", "tool_choice"
    kind: str  # regex | grammar | structural_tags_config
    value: str
    blame: str = ""  # the field named if the grammar engine refuses it (default: field)
    schema: dict[str, Any] | None = None  # a JSON answer's schema (json_object, json_schema, guided_json)
    think: ThinkMarkup | None = None
    calls: bool = False  # writes tool calls: with ``thinking``, the model may open the block itself first
    thinking: bool = False
    forced: bool = False  # the reply must be tool calls (tool_choice "required" or named)
    # Guidance nobody asked for (the served model's default tool-guided generation): where the grammar engine
    # cannot run it, the request goes on unguided rather than failing (build_runs).
    optional: bool = False
    # The custom tools' grammar formats among its calls: what the grammar engine refuses is blamed on the format
    # it refuses alone, if one (check_compiles), as the user's grammar is likelier at fault than ovserve's own.
    suspects: tuple[CustomFormat, ...] = ()

    def spelled(self, spellings: Spellings) -> Guide:
        """This guide for a vocabulary that spells ``spellings``' characters otherwise (ovserve.service.structured.
        spelling): each literal, class and regex of it takes both spellings, whoever wrote it."""
        if not spellings:
            return self
        if self.kind == "grammar":
            return dataclasses.replace(self, value=spelled_grammar(self.value, spellings))
        if self.kind == "regex":
            return dataclasses.replace(self, value=spelled_regex(self.value, spellings))
        if self.kind == "structural_tags_config":
            return dataclasses.replace(self, value=json.dumps(spelled_document(json.loads(self.value), spellings)))
        return self

    def constraint(self, *, opened: bool = False) -> OutputConstraint:
        """The engine's form of this constraint; ``opened``: the prompt ends inside the reasoning block."""
        blame = self.blame or self.field
        if self.think is None or not (opened or self.thinking):
            return OutputConstraint(self.kind, self.value, blame)
        # Free text until the end tag is what a structural tag says simply and EBNF does not; a block the
        # prompt opened has no begin left to write.
        think = self.think
        after = AFTER_THINK if think.after is None else think.after  # gpt-oss: the next message's header
        begin = "" if opened else think.begin
        # The block ends at its end tag. Blank lines after it are the model's to write or not (MiniMax-M3's template
        # writes a call right after </mm:think>): were they part of the end, a model that went straight on would
        # stay "inside" the block until max_tokens. A bounded run, so a small model cannot pad for ever. Markup
        # after it (gpt-oss's next header, Kimi K3's empty response channel before calls) is written after the end
        # tag before forced calls; else the block ends with what every reply writes after it (the next header, or
        # the opening of the tags the reply is wrapped in: K3's response channel, which an answer fills). Were the
        # empty channel part of the end, a model that answered would stay "inside" the block, never to stop.
        blank = not after.strip()
        block: dict[str, Any] = {"type": "tag", "begin": begin, "content": {"type": "any_text"}, "end": think.end}
        follows: list[dict[str, str]] = []
        if blank and after:
            follows = [{"type": "regex", "pattern": AFTER_THINK_BLANKS}]
        elif not blank and self.forced:
            follows = [{"type": "const_string", "value": after}]
        elif not blank:
            block["end"] += think.reply[0] if think.reply is not None else after
        elements = [block, *follows, self._format()]
        document = {"type": "structural_tag", "format": {"type": "sequence", "elements": elements}}
        return OutputConstraint("structural_tags_config", json.dumps(document), blame)

    def after_block(self) -> OutputConstraint:
        """The engine's form of this constraint after a reasoning block the server ended (a reasoning budget,
        ovserve.service.api.reasoning_budget): the constrained output alone."""
        return dataclasses.replace(self, thinking=False).constraint(opened=False)

    def _format(self) -> dict[str, Any]:
        """This guide as one structural-tag format."""
        if self.kind == "structural_tags_config":
            return dict(json.loads(self.value)["format"])
        if self.kind == "regex":
            return {"type": "regex", "pattern": self.value}
        return {"type": "grammar", "grammar": self.value}


def structured_output_config(
    request: Any, violations: list[FieldViolation], *, opened: bool = False, **options: Any
) -> OutputConstraint | None:
    """The request's output constraint for the engine, or None (``output_plan``'s, for a prompt that
    leaves the reasoning block open or not: ``opened``)."""
    plan = output_plan(request, violations, **options)
    return None if plan is None else plan.constraint(opened=opened)


def output_plan(
    request: Any,
    violations: list[FieldViolation],
    *,
    tools: Sequence[dict[str, Any]] = (),
    thinking: bool = False,
    markup: CallMarkup | None = None,
    think: ThinkMarkup | None = None,
    named_field: str = "named_tool_choice",
    parameters_field: str = "tools[{}].function.parameters",
    guided: bool = False,
    by_default: bool = False,
    spellings: Spellings = NO_SPELLINGS,
) -> Guide | None:
    """The request's output constraint, or None; appends what is wrong to ``violations``.

    The engine's form comes from ``Guide.constraint`` once the prompt is rendered (whether it leaves the
    model's reasoning block open decides what comes first). Whether the served model's grammar compiler
    takes it is checked later (``check_compiles``).

    ``tools``: the request's tools in the chat template's form ({"type": "function", "function": {...}});
    ``thinking``: the chat template lets the model open a reasoning block first (forced tool calls
    may follow one); ``markup`` / ``think``: the served model's tool-call and reasoning markup
    (``OutputFormat.call_markup`` / ``think_markup``; ``markup`` None: the model's tool-call format is
    unknown, so no call can be forced (a violation); ``think`` None: ``<think>``);
    ``named_field`` / ``parameters_field``: how this request type names the named tool choice and a
    tool's parameters in errors; ``guided``: the served model's calls are guided when the model may call
    any tool or answer (``ModelSpec.tool_guided_generation``), as allowed_tools' are: a call it opens
    is one of the tools, with valid arguments (for a markup whose calls open with fixed text); ``by_default``: that
    guidance is the model's default, not the request's: what it cannot guide (a schema past the grammar's limits)
    is left unguided instead of refused, and the guide is ``optional``; ``spellings``: the characters the served
    model's vocabulary writes with pieces of their own under a grammar (``ServedModel.spellings``: a byte-fallback
    SentencePiece's newline and space), which the guide's literals, classes and regexes accept either way
    (``Guide.spelled``).
    """
    before = len(violations)
    choice = _tool_choice(request, violations, tools, named_field)
    if markup is None and choice is not None:
        # Writing a call needs the model's own markup; another family's would be text it never learned.
        # (With "auto" the model may still answer: an answer's format then applies alone.)
        if choice.mode == "required" or choice.restricted:
            violations.append(FieldViolation(choice.field, UNKNOWN_FORMAT))
        choice = None
    calling = markup or HERMES
    guides = [
        guide
        for guide in (
            _response_format(request, violations),
            _text_format(request, violations),
            _guided_json(request, violations),
            _guided_regex(request, violations),
            _guided_choice(request, violations),
            _free_grammars(request, violations),
            _structured_outputs(request, violations),
        )
        if guide is not None
    ]
    if choice is not None and choice.mode == "required":
        # A forced call is this turn's reply; an answer's format shapes a later turn's (after the results).
        forced = _forced_calls(request, violations, choice, calling, parameters_field)
        guides = [forced] if forced is not None else []
    elif choice is not None and choice.mode == "auto" and len(guides) == 1:
        # Tools the model may call, and a format its answer must follow: either is a valid reply.
        combined = _calls_or_answer(request, violations, choice, calling, guides[0], parameters_field)
        guides = [combined] if combined is not None else []
    elif (
        choice is not None
        and choice.mode == "auto"
        and not guides
        and (choice.restricted or (guided and bool(calling.tag or _lead(calling, choice.callable))))
    ):
        lenient = by_default and not choice.restricted
        problems: list[FieldViolation] = [] if lenient else violations
        allowed = _allowed_calls(request, problems, choice, calling, parameters_field, spellings)
        if allowed is not None and lenient:
            allowed = dataclasses.replace(allowed, optional=True)
        guides = [allowed] if allowed is not None and not (lenient and problems) else []
    if len(guides) > 1:
        first, second = guides[0], guides[1]
        violations.append(
            FieldViolation(second.field, f"cannot be combined with {first.field}: set at most one output constraint")
        )
    if len(violations) > before or not guides:
        return None
    # The reasoning block a forced call may follow (the model's, or <think>), and that any constraint follows
    # when the rendered prompt leaves it open (Guide.constraint).
    block = think or (THINK if thinking else None)
    suspects = _grammar_formats(choice.callable) if choice is not None and guides[0].calls else ()
    guide = dataclasses.replace(guides[0], think=block, thinking=thinking and guides[0].calls, suspects=suspects)
    return guide.spelled(spellings)


def _grammar_formats(callable_tools: Sequence[tuple[int, dict[str, Any]]]) -> tuple[CustomFormat, ...]:
    """The grammar formats (lark, regex) of the custom tools among ``callable_tools``."""
    formats = (tool.get(CUSTOM_FORMAT) for _index, tool in callable_tools)
    return tuple(fmt for fmt in formats if isinstance(fmt, CustomFormat) and fmt.syntax != "text")


@dataclass(frozen=True)
class ToolChoice:
    """What the request lets the model do with its tools, when it may call any."""

    mode: str  # "auto": call some of ``callable`` or answer; "required": call at least one
    callable: Sequence[tuple[int, dict[str, Any]]]  # (index in tools, tool) the model may call
    field: str  # the request field that chose: tool_choice, or the object form's name
    one: bool = False  # a named function: exactly one call
    restricted: bool = False  # allowed_tools: only some of the tools may be called


def _tool_choice(
    request: Any, violations: list[FieldViolation], tools: Sequence[dict[str, Any]], named_field: str
) -> ToolChoice | None:
    """The request's tool choice (string or object form); None when no tool may be called."""
    indexed = list(enumerate(tools))
    if not _present(request, "named_tool_choice"):
        mode = request.tool_choice if _present(request, "tool_choice") else "auto"
        if mode == "required" and not indexed:
            violations.append(FieldViolation("tool_choice", '"required" needs at least one tool'))
            return None
        return ToolChoice(mode, indexed, "tool_choice") if indexed and mode in ("auto", "required") else None
    if _present(request, "tool_choice"):
        violations.append(FieldViolation(named_field, "set either the string or the object form of tool_choice"))
        return None
    choice = request.named_tool_choice
    if choice.type == "allowed_tools":
        return _allowed_tools(violations, choice, indexed, named_field)
    if choice.type not in ("", "function", "custom"):
        violations.append(
            FieldViolation(
                f"{named_field}.type", f"unknown type {quote(choice.type)}; expected function, custom or allowed_tools"
            )
        )
        return None
    named = _tools_named(violations, [(named_field, _choice_name(choice), choice.type)], indexed)
    return ToolChoice("required", named[:1], named_field, one=True) if named else None


def _allowed_tools(
    violations: list[FieldViolation], choice: Any, indexed: list[tuple[int, dict[str, Any]]], named_field: str
) -> ToolChoice | None:
    """tool_choice {"type": "allowed_tools", ...}: chat nests mode and tools in allowed_tools, Responses does not."""
    nested = "allowed_tools" in choice.DESCRIPTOR.fields_by_name
    where = f"{named_field}.allowed_tools" if nested else named_field
    if nested and not choice.HasField("allowed_tools"):
        violations.append(FieldViolation(where, "required when type is allowed_tools"))
        return None
    allowed = choice.allowed_tools if nested else choice
    before = len(violations)
    if allowed.mode not in ("auto", "required"):
        violations.append(FieldViolation(f"{where}.mode", f"{quote(allowed.mode)} is not one of auto, required"))
    if not allowed.tools:
        violations.append(FieldViolation(f"{where}.tools", "at least one tool is required"))
    for number, tool in enumerate(allowed.tools):
        if tool.type not in ("", "function", "custom"):
            violations.append(
                FieldViolation(f"{where}.tools[{number}].type", "only function and custom tools can be allowed")
            )
    names = [(f"{where}.tools[{number}]", _choice_name(tool), tool.type) for number, tool in enumerate(allowed.tools)]
    callable_ = _tools_named(violations, names, indexed)
    if len(violations) > before:
        return None
    return ToolChoice(allowed.mode, callable_, where, restricted=True)


def _tool_name(tool: dict[str, Any]) -> str:
    """A tool's function name, in the chat template's form ("" when it has none: validation names that)."""
    return str(tool.get("function", {}).get("name", ""))


def _tool_kind(tool: dict[str, Any]) -> str:
    """A tool's kind, in the chat template's form: custom (offered as a function, its format beside) or function."""
    return "custom" if CUSTOM_FORMAT in tool else "function"


def _choice_name(choice: Any) -> str:
    """The function (or custom tool) a tool_choice object names: flat (Responses) or nested (chat) form."""
    nested = choice.custom if choice.type == "custom" and "custom" in choice.DESCRIPTOR.fields_by_name else None
    return getattr(choice, "name", "") or (nested or choice.function).name


# A tool choice's type -> the kind of tool it may name ("" is an unset type, a function as OpenAI's older form).
_CHOICE_KINDS = {"": "function", "function": "function", "custom": "custom"}


def _tools_named(
    violations: list[FieldViolation], names: Sequence[tuple[str, str, str]], indexed: list[tuple[int, dict[str, Any]]]
) -> list[tuple[int, dict[str, Any]]]:
    """The tools of ``names`` ((field, name, type) triples), in request order; a name with no tool, or naming a tool
    of another kind than its type says (a function by type custom, or a custom tool by type function), is a
    violation."""
    by_name = {_tool_name(tool): (index, tool) for index, tool in reversed(indexed)}
    found = []
    for field, name, kind in names:
        if name not in by_name:
            violations.append(FieldViolation(field, f"no tool named {quote(name)} in tools"))
            continue
        actual = _tool_kind(by_name[name][1])
        if kind in _CHOICE_KINDS and _CHOICE_KINDS[kind] != actual:  # (an unknown type is refused by the caller)
            violations.append(
                FieldViolation(f"{field}.type", f"{quote(name)} is a {actual} tool: name it with type {actual}")
            )
        elif by_name[name] not in found:
            found.append(by_name[name])
    return sorted(found, key=lambda pair: pair[0])


# Requests up to this size (serialized) have their constraints checked and built on the event loop
# (a few milliseconds at most); larger ones in a worker thread, so other streams keep their pace.
INLINE_REQUEST_BYTES = 16_384


async def output_constraint(request: Any, violations: list[FieldViolation], **options: Any) -> Guide | None:
    """``output_plan`` (same arguments), off the event loop when the request is large or offers a custom tool with a
    Lark grammar (Lark reads one, its imports included, in ~8 ms)."""
    lark = any(getattr(tool.get(CUSTOM_FORMAT), "syntax", "") == "lark" for tool in options.get("tools", ()))
    if request.ByteSize() <= INLINE_REQUEST_BYTES and not lark:
        return output_plan(request, violations, **options)
    return await asyncio.to_thread(output_plan, request, violations, **options)


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
    return _regex_guide(request.guided_regex, "guided_regex", violations)


def _regex_guide(pattern: str, field: str, violations: list[FieldViolation]) -> Guide | None:
    """A regular expression the whole output matches (XGrammar's regex syntax)."""
    if not pattern:
        violations.append(FieldViolation(field, "must not be empty"))
        return None
    if len(pattern) > MAX_PATTERN_LENGTH:
        message = f"{len(pattern)} characters; at most {MAX_PATTERN_LENGTH} are accepted"
        violations.append(FieldViolation(field, message))
        return None
    return Guide(field, "regex", pattern)


def _guided_choice(request: Any, violations: list[FieldViolation]) -> Guide | None:
    if not _present(request, "guided_choice"):
        return None
    return _choice_guide(list(request.guided_choice), "guided_choice", violations)


def _choice_guide(choices: list[str], field: str, violations: list[FieldViolation]) -> Guide | None:
    """The output is exactly one of ``choices``."""
    size = sum(len(choice.encode()) for choice in choices)
    if len(choices) > MAX_ALTERNATIVES or size > MAX_CHOICE_BYTES:
        message = f"{len(choices)} choices of {size} bytes; at most {MAX_ALTERNATIVES} choices of {MAX_CHOICE_BYTES}"
        violations.append(FieldViolation(field, message))
        return None
    for index, choice in enumerate(choices):
        if not choice:
            violations.append(FieldViolation(f"{field}[{index}]", "a choice must not be empty"))
    # An EBNF alternation of string literals: XGrammar reads JSON's string escapes, so no regex escaping.
    grammar = "root ::= " + " | ".join(json.dumps(choice, ensure_ascii=False) for choice in dict.fromkeys(choices))
    return Guide(field, "grammar", grammar)


def _free_grammars(request: Any, violations: list[FieldViolation]) -> Guide | None:
    """llama.cpp's ``grammar`` and vLLM's ``guided_grammar``: GBNF / EBNF (both set is refused)."""
    guides = [
        _grammar_guide(getattr(request, name), name, violations)
        for name in ("grammar", "guided_grammar")
        if _present(request, name)
    ]
    if len(guides) > 1:
        violations.append(FieldViolation("guided_grammar", "cannot be combined with grammar: set one of them"))
    return guides[0] if guides else None


def _grammar_guide(text: str, field: str, violations: list[FieldViolation]) -> Guide | None:
    """A free-form grammar (GBNF or XGrammar EBNF, start rule ``root``), bounded; the compiler's verdict comes
    later (check_compiles), naming ``field``."""
    try:
        return Guide(field, "grammar", check_grammar(text))
    except GrammarTextError as error:
        violations.append(FieldViolation(field, str(error)))
        return None


# vLLM's structured_outputs: each form and the guide it makes (its field named ``structured_outputs.<form>``).
_STRUCTURED_OUTPUTS: dict[str, Callable[[Any, str, list[FieldViolation]], Guide | None]] = {
    "grammar": lambda outputs, field, violations: _grammar_guide(outputs.grammar, field, violations),
    "regex": lambda outputs, field, violations: _regex_guide(outputs.regex, field, violations),
    "choice": lambda outputs, field, violations: _choice_guide(list(outputs.choice), field, violations),
    "json": lambda outputs, field, violations: _schema_guide(outputs, "json", field, field, violations),
}


def _structured_outputs(request: Any, violations: list[FieldViolation]) -> Guide | None:
    """vLLM's ``structured_outputs``: exactly one of grammar, regex, choice and json."""
    if not _present(request, "structured_outputs"):
        return None
    outputs = request.structured_outputs
    forms = [form for form in _STRUCTURED_OUTPUTS if _present(outputs, form)]
    if len(forms) != 1:
        got = ", ".join(forms) or "none"
        violations.append(
            FieldViolation("structured_outputs", f"set exactly one of grammar, regex, choice and json (got {got})")
        )
        return None
    field = f"structured_outputs.{forms[0]}"
    return _STRUCTURED_OUTPUTS[forms[0]](outputs, field, violations)


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


def _forced_calls(
    request: Any,
    violations: list[FieldViolation],
    choice: ToolChoice,
    markup: CallMarkup,
    parameters_field: str,
) -> Guide | None:
    """tool_choice "required" (one call or more) or named (exactly that call), in the model's markup."""
    grammar = GrammarBuilder(markup.arguments)
    listed = _calls(request, violations, grammar, choice.callable, markup, parameters_field, one=choice.one)
    if listed is None:
        return None
    return dataclasses.replace(_guide(choice.field, {"type": "grammar", "grammar": grammar.ebnf(listed)}), forced=True)


def _allowed_calls(
    request: Any,
    violations: list[FieldViolation],
    choice: ToolChoice,
    markup: CallMarkup,
    parameters_field: str,
    spellings: Spellings = NO_SPELLINGS,
) -> Guide | None:
    """Tool choice auto, guided (allowed_tools, or the served model's tool-guided generation): free text, and any
    call the model opens is one of the allowed tools, with arguments valid for it.

    A markup whose calls open with a tag of their own (Hermes ``<tool_call>``) amid free text: an XGrammar
    triggered tag per tool on it. A markup whose calls are the whole reply (pythonic ``[f(x=1)]``, Llama 3's bare
    JSON, Mistral's ``[{...}]``, the generic ``{"tool_calls": [...]}``): the reply is the list of calls, or text that
    does not begin the way every list of these calls begins (``_lead``), so an answer that starts otherwise is the
    model's own, unchanged.
    """
    if markup.tag:
        return _tagged_calls(request, violations, choice, markup, parameters_field, spellings)
    lead = _lead(markup, choice.callable)
    if not lead:
        violations.append(
            FieldViolation(
                f"{choice.field}.mode",
                '"auto" needs a model whose tool calls open with fixed text (such as <tool_call> or "["); '
                'this model writes them without any: use "required"',
            )
        )
        return None
    grammar = GrammarBuilder(markup.arguments)
    listed = _calls(request, violations, grammar, choice.callable, markup, parameters_field, one=False)
    if listed is None:
        return None
    free = grammar.rule("free", _not_beginning(lead))
    return _guide(choice.field, {"type": "grammar", "grammar": grammar.ebnf(f"({listed}) | {free}")})


def _tagged_calls(
    request: Any,
    violations: list[FieldViolation],
    choice: ToolChoice,
    markup: CallMarkup,
    parameters_field: str,
    spellings: Spellings = NO_SPELLINGS,
) -> Guide | None:
    """Free text with a triggered tag per allowed tool on the markup's opening tag (``_allowed_calls``)."""
    if _respelled(markup, choice.callable, spellings):
        return _spelled_tag(request, violations, choice, markup, parameters_field)
    tags = []
    spent = (0, 0)  # rule text and properties so far: the tags share one grammar's limits, as "required"'s calls do
    for index, tool in choice.callable:
        grammar = GrammarBuilder(markup.arguments)
        grammar.size, grammar.properties = spent
        arguments = _arguments(violations, grammar, index, tool, markup, parameters_field)
        spent = (grammar.size, grammar.properties)
        if grammar.size > MAX_GRAMMAR_BYTES or grammar.properties > MAX_TOTAL_PROPERTIES:
            break  # the budget is spent: every tool after this one would be refused the same way
        if arguments is not None:
            # A tag's begin is fixed text: the list's opening (a section's token, for DeepSeek and Kimi K2)
            # and the call's up to any "{index}"; its digits and the rest are grammar. One call a tag.
            head, *rest = markup.begin_parts(_tool_name(tool))
            content = " ".join([*(f"{markup.INDEX_EBNF} {literal(part)}" for part in rest), arguments])
            tags.append(_tag(markup.opening + head, grammar.ebnf(content), markup.call_end + markup.closing))
    if len(tags) < len(choice.callable):
        return None
    body: dict[str, Any] = {"type": "triggered_tags", "triggers": [markup.tag], "tags": tags}
    if not _parallel(request, markup):
        body["stop_after_first"] = True  # parallel_tool_calls false, or a turn that ends at its call: one call
    return _guide(choice.field, body)


def _respelled(markup: CallMarkup, callable_tools: Sequence[tuple[int, dict[str, Any]]], spellings: Spellings) -> bool:
    """Whether a tag's fixed text (``_tagged_calls``) holds a character the vocabulary spells otherwise (InternLM2's
    ``<|action_start|><|plugin|>\\n{...`` on its SentencePiece) past the trigger: no token writes it as a tag's
    literal text, so that text must be grammar (``_spelled_tag``)."""
    texts = [markup.opening + "".join(markup.begin_parts(_tool_name(tool))) for _index, tool in callable_tools]
    return any(char in spellings for text in [*texts, markup.call_end + markup.closing] for char in text) and all(
        text.startswith(markup.tag) for text in texts
    )


def _spelled_tag(
    request: Any, violations: list[FieldViolation], choice: ToolChoice, markup: CallMarkup, parameters_field: str
) -> Guide | None:
    """``_tagged_calls`` for a markup whose tags hold characters the vocabulary spells otherwise: one tag on the
    trigger, whose grammar writes the rest of any allowed call (its opening, arguments and end; their literals
    spelled with the rest of the guide: Guide.spelled)."""
    grammar = GrammarBuilder(markup.arguments)
    calls = []
    for index, tool in choice.callable:
        arguments = _arguments(violations, grammar, index, tool, markup, parameters_field)
        if arguments is None:
            return None
        head, *rest = markup.begin_parts(_tool_name(tool))
        opening = spaced_ebnf((markup.opening + head)[len(markup.tag) :])
        digits = [f"{markup.INDEX_EBNF} {spaced_ebnf(part)}" for part in rest]
        calls.append(" ".join([opening, *digits, arguments, spaced_ebnf(markup.call_end + markup.closing)]))
    body: dict[str, Any] = {
        "type": "triggered_tags",
        "triggers": [markup.tag],
        "tags": [_tag(markup.tag, grammar.ebnf(grammar.rule("call", " | ".join(calls))), "")],
    }
    if not _parallel(request, markup):
        body["stop_after_first"] = True
    return _guide(choice.field, body)


def _lead(markup: CallMarkup, callable_tools: Sequence[tuple[int, dict[str, Any]]]) -> str:
    """The fixed text every list of calls begins with, up to the first call's function name ("" when a call
    begins with its name): a reply that begins so is a call, whichever name follows, so an unoffered tool's call
    cannot pass for text."""
    if not callable_tools:
        return ""
    head = markup.begin_parts(_NAME_MARK)[0]
    return markup.opening + head[: head.index(_NAME_MARK)] if _NAME_MARK in head else ""


# A function name that every markup writes as it is (an identifier, no characters to escape): where it shows in a
# call's opening text, the name begins.
_NAME_MARK = "ovserveNameMark"


def _not_beginning(text: str) -> str:
    """EBNF of any text, the empty one too, that does not begin with ``text`` (a proper prefix of it, then any
    other character, then anything)."""
    anything = "[^]*"
    body = f'"" | {_other_than(text[-1])} {anything}'
    for char in reversed(text[:-1]):
        body = f'"" | {_other_than(char)} {anything} | {literal(char)} ({body})'
    return body


def _other_than(char: str) -> str:
    """An EBNF character class of every character but ``char``."""
    return f"[^{_CLASS_ESCAPES.get(char, char)}]"


# Characters a character class must escape (XGrammar's EBNF reads these escapes inside [...]).
_CLASS_ESCAPES = {"\\": "\\\\", "]": "\\]", "[": "\\[", "^": "\\^", "-": "\\-", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _parallel(request: Any, markup: CallMarkup) -> bool:
    """Whether a reply may hold several calls: the markup's turns allow it and the request does not say otherwise."""
    return markup.parallel and (not _present(request, "parallel_tool_calls") or request.parallel_tool_calls)


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
        arguments = _arguments(violations, grammar, index, tool, markup, parameters_field)
        if arguments is not None:
            calls.append(f"{markup.begin_ebnf(_tool_name(tool))} {arguments} {spaced_ebnf(markup.call_end)}")
    if not calls:
        return None
    call = grammar.rule("call", " | ".join(calls))
    # One call when the request says so, or when the model's turn ends at its call (gpt-oss).
    parallel = _parallel(request, markup)
    separator = spaced_ebnf(markup.separator) if markup.separator else ""  # DeepSeek V3.1, Kimi K2: back to back
    more = f"({separator} {call}){{0,{MAX_PARALLEL_CALLS - 1}}}"
    listed = call if one or not parallel else f"{call} {more}"
    opening, closing = (spaced_ebnf(text) if text else "" for text in (markup.opening, markup.closing))  # "[" "]"
    return f"{opening} {listed} {closing}".strip()


def _arguments(
    violations: list[FieldViolation],
    grammar: GrammarBuilder,
    index: int,
    tool: dict[str, Any],
    markup: CallMarkup,
    parameters_field: str,
) -> str | None:
    """The rule of a tool's arguments in ``grammar``; None (and a violation) when it cannot be written."""
    function = tool.get("function", {})
    field = parameters_field.format(index)
    custom = tool.get(CUSTOM_FORMAT)
    problem = markup.name_problem(_tool_name(tool))
    if problem is not None:  # a function's name field sits beside its parameters' in both request types
        named = custom.name_field if isinstance(custom, CustomFormat) else field.rpartition(".")[0] + ".name"
        violations.append(FieldViolation(named, problem))
        return None
    if isinstance(custom, CustomFormat):  # a custom tool: one string, "input", in the tool's format
        try:
            return custom_arguments(grammar, custom, f"c{index}")
        except SchemaError as error:
            violations.append(FieldViolation(custom.field, error.message))
            return None
    schema = _checked_schema(function.get("parameters") or {"type": "object"}, field, violations)
    if schema is None:
        return None
    try:
        return grammar.add(schema)
    except SchemaError as error:
        violations.append(FieldViolation(field + _path(error.path), error.message))
        return None


def _calls_or_answer(
    request: Any,
    violations: list[FieldViolation],
    choice: ToolChoice,
    markup: CallMarkup,
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
    calls = _calls(request, violations, grammar, choice.callable, markup, parameters_field, one=False)
    try:
        reply = grammar.add(answer.schema)
    except SchemaError as error:  # checked alone already; a combined grammar may pass a limit
        violations.append(FieldViolation((answer.blame or answer.field) + _path(error.path), error.message))
        return None
    if calls is None:
        return None
    ebnf = grammar.ebnf(f"({calls}) | {reply}")
    return _guide(answer.field, {"type": "grammar", "grammar": ebnf}, blame=answer.blame)


def _guide(field: str, body: dict[str, Any], *, blame: str = "") -> Guide:
    """A tool-call guide of one structural-tag format (a plain grammar when it is one)."""
    if body["type"] == "grammar":
        return Guide(field, "grammar", body["grammar"], blame=blame, calls=True)
    document = json.dumps({"type": "structural_tag", "format": body})
    return Guide(field, "structural_tags_config", document, blame=blame, calls=True)


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


async def check_compiles(
    model: ServedModel, constraint: OutputConstraint | None, suspects: Sequence[CustomFormat] = ()
) -> None:
    """Refuse ``constraint`` (INVALID_ARGUMENT naming its field) if ``model``'s grammar compiler cannot run it.

    The compile runs in the engine's grammar checker, with the model's own tokenizer, off the event loop
    (see service/engine/grammar.py); verdicts are cached by grammar text. ``suspects`` (``Guide.suspects``): custom
    tools' grammar formats inside ``constraint``; when it is refused, each is compiled alone (only then), and the
    first one refused alone is the field named, with the compiler's words about it.
    """
    error = await compile_problem(model, constraint)
    if error is None or constraint is None:
        return
    field = constraint.field
    for fmt in suspects:
        alone = await compile_problem(model, await asyncio.to_thread(_alone, fmt))  # Lark reads it off the loop
        if alone is not None:
            field, error = fmt.field, alone
            break
    raise InvalidArgument.of(field, f"the grammar engine refused it: {error}")


def _alone(fmt: CustomFormat) -> OutputConstraint:
    """A custom tool's grammar format as a constraint of its own: its call's arguments, the input guided as in a
    call (JSON-escaped), blamed on the format's field."""
    grammar = GrammarBuilder()
    return OutputConstraint("grammar", grammar.ebnf(custom_arguments(grammar, fmt, "c")), fmt.field)


async def compile_problem(model: ServedModel, constraint: OutputConstraint | None) -> str | None:
    """Why ``model``'s grammar compiler cannot run ``constraint`` (its words), or None when it can (or there is
    none)."""
    return None if constraint is None else await model.engine.check_constraint(constraint)
