"""ovserve's grammars on a byte-fallback SentencePiece vocabulary: each literal newline or space (a tool call's
markup, a JSON schema's enum) is written as the character or as the vocabulary's piece (``<0x0A>``, ``▁``), the only
token that writes it under OpenVINO GenAI's RAW vocabulary (ovserve.service.structured.spelling); a client's own
grammar, regex or structural tag too. The real pipeline's checks are the family matrix's InternLM2 row
(tests/families: its forced calls, unary, streamed, one call and the history after one) and
tests/families/test_family_models.py::test_spelled_literals_under_a_grammar."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, completion_pb2, completion_pb2_grpc
from ovserve.service.engine import OutputConstraint
from ovserve.service.engine.grammar import GrammarChecker
from ovserve.service.engine.vocabulary import PIECES, grammar_spellings
from ovserve.service.errors import FieldViolation
from ovserve.service.parsing import OutputFormat
from ovserve.service.parsing.calls_json import INTERNLM
from ovserve.service.parsing.markup import CallMarkup
from ovserve.service.structured.output import structured_output_config
from ovserve.service.structured.spelling import spelled_ebnf, spelled_grammar, spelled_regex
from tests.fakes import FakeEngine, fake_model, scripted_server
from tests.fakes import text as reply
from tests.rpc import parse as parse_request
from tests.service.api.ebnf import to_regex
from tests.service.parsing.feeding import fed

SPM = {"\n": "<0x0A>", "\t": "<0x09>", "\r": "<0x0D>", " ": "\u2581"}  # what grammar_spellings finds on Llama 2's
ASK = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
]  # fmt: skip


class SentencePiece:
    """A byte-fallback SentencePiece as openvino_genai.Tokenizer shows it: pieces as stored (bytes keys), decoded
    with "▁" as a space (dropped at the start) and each <0xNN> as its byte."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces

    def get_vocab(self) -> dict[bytes, int]:
        return {piece.encode(): index for index, piece in enumerate(self.pieces)}

    def decode(self, ids: list[int]) -> str:
        text = "".join(self.pieces[i] for i in ids).replace("\u2581", " ")
        return re.sub(r"<0x([0-9A-F]{2})>", lambda match: chr(int(match[1], 16)), text).removeprefix(" ")


@pytest.fixture(scope="module")
def checker(tiny_chat_dir: Path) -> Iterator[GrammarChecker]:
    """The engine's grammar compiler (XGrammar in openvino_genai) on tiny-chat's tokenizer."""
    checker = GrammarChecker(tiny_chat_dir, timeout=120)
    yield checker
    checker.close()


def test_spellings_are_found_by_what_the_vocabulary_holds_and_decodes() -> None:
    pieces = ["<unk>", "a", "<0x0A>", "<0x09>", "<0x0D>", "\u2581", "\u2581Paris"]
    assert grammar_spellings(SentencePiece(pieces)) == SPM == PIECES
    # A piece that does not decode to its character is no spelling of it (a vocabulary that holds the text
    # "<0x0A>" as an ordinary word); without byte pieces there is nothing to spell.
    word = SentencePiece(["a", "<0x0A>"])
    word.decode = lambda ids: "".join(word.pieces[i] for i in ids)  # type: ignore[method-assign]
    assert grammar_spellings(word) == {}
    assert grammar_spellings(SentencePiece(["a", "\u2581"])) == {" ": "\u2581"}


def test_a_byte_level_vocabulary_spells_nothing(tiny_chat_dir: Path) -> None:
    """tiny-chat's byte-level BPE: GenAI hands XGrammar its tokens' bytes, so every character is itself."""
    assert grammar_spellings(ov_genai.Tokenizer(str(tiny_chat_dir))) == {}


def test_spelled_text_takes_the_character_or_its_piece() -> None:
    expression = spelled_ebnf("<|plugin|>\n{x} y", SPM)
    assert expression == '"<|plugin|>" ("\\n" | "<0x0A>") "{x}" (" " | "\u2581") "y"'
    pattern = to_regex(expression)
    for text in ("<|plugin|>\n{x} y", "<|plugin|><0x0A>{x}\u2581y", "<|plugin|><0x0A>{x} y"):
        assert re.fullmatch(pattern, text), text
    assert not re.fullmatch(pattern, "<|plugin|>{x}y")
    assert spelled_ebnf("a\nb", {}) == json.dumps("a\nb") and spelled_ebnf("", SPM) == '""'


def test_a_grammar_s_literals_are_spelled_and_nothing_else() -> None:
    """Each literal holding a spelled character, in parentheses (a quantifier after it applies to all of it);
    classes, other literals, escapes and rule names as they were; no spellings, the grammar as it is."""
    grammar = 'root ::= "{" sep "\\"New York\\"" [^"\\ ] "a\\nb"{1,2}\nsep ::= " "?\n'
    spelled = spelled_grammar(grammar, SPM)
    assert spelled == (
        'root ::= "{" sep ("\\"New" (" " | "\u2581") "York\\"") [^"\\ ] ("a" ("\\n" | "<0x0A>") "b"){1,2}\n'
        'sep ::= ((" " | "\u2581"))?\n'
    )
    pattern = to_regex(spelled)
    for text in ('{"New York"xa\nb', '{\u2581"New\u2581York"xa<0x0A>ba\nb'):
        assert re.fullmatch(pattern, text), text
    assert spelled_grammar(grammar, {}) == grammar


@pytest.mark.parametrize(
    ("written", "spelled"),
    [
        ("[A-Za-z\\u0020]", '([A-Za-z\\u0020] | "\u2581")'),  # a pattern's class with a space (regex_grammar's)
        ("[ -~]", '([ -~] | "\u2581")'),  # a range that holds the space
        ("[a\\n\\u0020]", '([a\\n\\u0020] | "<0x0A>" | "\u2581")'),  # each piece beside the class
        ("[^ ]", "[^ ]"),  # negated: it takes every piece's text already
        ("[a\\-!]", "[a\\-!]"),  # an escaped "-" is no range
        ("[0-9]", "[0-9]"),
    ],
)
def test_a_class_that_holds_a_spelled_character_takes_its_piece(
    written: str, spelled: str, checker: GrammarChecker
) -> None:
    """The pieces beside the class, not in it (a class's syntax has traps: a trailing "-", a leading "]")."""
    made = OutputConstraint("grammar", spelled_grammar(f"root ::= {written}+", SPM), "f")
    assert made.value == f"root ::= {spelled}+" and asyncio.run(checker.check(made)) is None


def test_a_pattern_with_a_space(checker: GrammarChecker) -> None:
    """A JSON schema's pattern (translated by ovserve: regex_grammar) whose class holds a space takes "▁" there."""
    schema = {"type": "object", "properties": {"city": {"type": "string", "pattern": "^[A-Za-z ]+$"}}}
    fields = {"response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": schema}}}
    made = forced(INTERNLM, SPM, [], **fields)
    assert asyncio.run(checker.check(made)) is None
    assert re.fullmatch(to_regex(made.value), '{"city":"New\u2581York"}')


def test_an_enum_with_a_space_and_the_client_s_own_grammar(checker: GrammarChecker) -> None:
    """A JSON schema's literal with a space takes the "▁" piece too (measured on InternLM2's vocabulary: without it
    the model wrote '{"city":"New' and then <unk> to max_tokens); so do a client's guided_regex and grammar."""
    schema = {"type": "object", "properties": {"city": {"enum": ["New York", "Paris"]}}, "required": ["city"]}
    fields = {"response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": schema}}}
    made = forced(INTERNLM, SPM, [], **fields)
    assert made.kind == "grammar" and asyncio.run(checker.check(made)) is None
    for text in ('{"city":"New\u2581York"}', '{"city": "New York"}', '{"city":"Paris"}'):
        assert re.fullmatch(to_regex(made.value), text), text
    spelled = {
        "guided_regex": ("New York\n", "New(?: |\u2581)York(?:\\n|<0x0A>)"),
        "grammar": ('root ::= "New York\\n"', 'root ::= ("New" (" " | "\u2581") "York" ("\\n" | "<0x0A>"))'),
    }
    for field, (sent, written) in spelled.items():
        made = forced(INTERNLM, SPM, [], **{field: sent})
        assert made.value == written and asyncio.run(checker.check(made)) is None
        assert re.fullmatch(to_regex(made.value) if field == "grammar" else made.value, "New\u2581York<0x0A>")


@pytest.mark.parametrize(
    ("pattern", "spelled"),
    [
        ("New York", "New(?: |\u2581)York"),
        ("a\\nb", "a(?:\\n|<0x0A>)b"),  # the escape
        ("a\nb", "a(?:\\n|<0x0A>)b"),  # the character
        ("\\w+ \\d{1,3}", "\\w+(?: |\u2581)\\d{1,3}"),
        ("\\s*x", "(?:\\s|<0x0A>|<0x09>|<0x0D>|\u2581)*x"),
        ("[A-Za-z ]+", "(?:[A-Za-z ]|\u2581)+"),
        ("[^ ]+", "[^ ]+"),  # a negated class takes every piece's text already
        ("[a\\-z]", "[a\\-z]"),  # an escaped "-" is no range
        ("\\x20", "(?:\\x20|\u2581)"),
        ("a{1,3}", "a{1,3}"),
    ],
)
def test_a_regex_s_spelled_characters(pattern: str, spelled: str, checker: GrammarChecker) -> None:
    assert spelled_regex(pattern, SPM) == spelled and spelled_regex(pattern, {}) == pattern
    assert asyncio.run(checker.check(OutputConstraint("regex", spelled, "guided_regex"))) is None


def forced(markup: CallMarkup, spellings: dict[str, str], tools: list[dict[str, Any]] = TOOLS, **fields: Any) -> Any:
    """The constraint of a request with ``tools`` and ``fields`` on a model of ``markup`` and ``spellings``."""
    request = parse_request(
        chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": tools, **fields}
    )
    violations: list[FieldViolation] = []
    made = structured_output_config(request, violations, tools=tools, markup=markup, spellings=spellings)
    assert made is not None and not violations, violations
    return made


@pytest.mark.parametrize("spellings", [SPM, {}], ids=["sentencepiece", "byte-level"])
def test_a_forced_call_writes_the_newline_either_way(spellings: dict[str, str], checker: GrammarChecker) -> None:
    """InternLM2's ``<|action_start|><|plugin|>\\n{...}<|action_end|>``: on a SentencePiece the newline may be its
    piece (decoded, a newline: the parser reads the call); on a byte-level vocabulary the grammar is as before."""
    made = forced(INTERNLM, spellings, tool_choice="required")
    assert made.kind == "grammar" and asyncio.run(checker.check(made)) is None
    pattern = to_regex(made.value)
    written = INTERNLM.opening + INTERNLM.begin("get_weather") + '{"city":"Paris"}' + INTERNLM.call_end
    assert re.fullmatch(pattern, written.replace(": ", ":").replace(", ", ","))
    assert bool(re.fullmatch(pattern, written.replace("\n", "<0x0A>"))) == bool(spellings)
    assert ("<0x0A>" in made.value) == bool(spellings)
    turn, _ = fed(OutputFormat("internlm"), [written])
    assert [(call.name, json.loads(call.arguments)) for call in turn.calls] == [("get_weather", {"city": "Paris"})]


def test_a_guided_call_opens_on_the_trigger_and_writes_the_rest(checker: GrammarChecker) -> None:
    """tool_choice auto, guided: the tag's fixed text stops at the trigger, the newline after it is grammar (a
    tag's text must be written as it is, which no token of a SentencePiece does for a newline); on a byte-level
    vocabulary, a tag per tool with its whole opening, as before."""
    allowed = {"mode": "auto", "tools": [{"type": "function", "function": {"name": "get_weather"}}]}
    choice = {"named_tool_choice": {"type": "allowed_tools", "allowed_tools": allowed}}
    made = forced(INTERNLM, SPM, **choice)
    assert made.kind == "structural_tags_config" and asyncio.run(checker.check(made)) is None
    document = json.loads(made.value)["format"]
    [tag] = document["tags"]
    assert document["triggers"] == [INTERNLM.tag] and (tag["begin"], tag["end"]) == (INTERNLM.tag, "")
    written = INTERNLM.begin("get_weather") + '{"city": "Paris"}' + INTERNLM.call_end
    pattern = to_regex(tag["content"]["grammar"])
    for rest in (written.removeprefix(INTERNLM.tag), written.removeprefix(INTERNLM.tag).replace("\n", "<0x0A>")):
        assert re.fullmatch(pattern, rest), rest
    plain = json.loads(forced(INTERNLM, {}, **choice).value)["format"]["tags"][0]
    assert plain["begin"] == INTERNLM.begin("get_weather") and plain["end"] == INTERNLM.call_end


def test_chat_and_completions_hand_the_engine_spelled_grammars() -> None:
    """Through ovserve's gRPC server (a scripted engine): a model loaded with spellings gets spelled grammars from
    chat and completions alike, a client's own guided_regex too."""
    engine = FakeEngine()
    model = dataclasses.replace(fake_model(engine), spellings=SPM)
    schema = {"type": "object", "properties": {"city": {"enum": ["New York"]}}, "required": ["city"]}

    async def main() -> None:
        async with scripted_server(model) as channel:
            chat = {"model": "fake", "messages": ASK, "guided_json": schema}
            await chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
                parse_request(chat_pb2.CreateChatCompletionRequest, chat)
            )
            for fields in ({"guided_json": schema}, {"guided_regex": "New York"}):
                body = {"model": "fake", "prompt": "Hi", **fields}
                completion = parse_request(completion_pb2.CreateCompletionRequest, body)
                await completion_pb2_grpc.CompletionServiceStub(channel).CreateCompletion(completion)

    engine.script(reply('{"city": "New York"}'), reply('{"city": "New York"}'), reply("New York"))
    asyncio.run(main())
    chat, completion, regex = (generation.params.constraint for generation in engine.generations)
    for constraint in (chat, completion):
        assert constraint is not None and '(" " | "\u2581")' in constraint.value
        assert re.fullmatch(to_regex(constraint.value), '{"city":"New\u2581York"}')
    assert regex is not None and (regex.kind, regex.value) == ("regex", "New(?: |\u2581)York")
