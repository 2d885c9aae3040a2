"""Our translation of JSON Schema patterns into EBNF, checked against Python's own ``re.fullmatch``.

The translated expression is turned back into a Python regex (``tests.service.api.ebnf``) and both run on
every short string over an alphabet that exercises the pattern: they must agree on every string JSON
writes unescaped, and the translation may never accept what Python rejects. What lies outside the
documented subset is refused, saying what.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest

from ovserve.service.structured.limits import MAX_PATTERN_LENGTH, MAX_PATTERN_REPEAT
from ovserve.service.structured.regex_grammar import PatternError, regex_expression
from tests.service.api.ebnf import to_regex

# Patterns in the subset, with the alphabet their candidate strings are made of.
TRANSLATED = [
    ("^[A-Z]{2}-\\d{3}$", "A-1"),
    ('say "(hi|yo)"', 'sh"'),
    ("a*b+c?", "abc"),
    ("(ab|c){1,3}", "abc"),
    ("(?:a|)b{2,}", "ab"),
    ("x{,2}y{3}", "xy"),
    ("[^a-c]d", "abde-"),
    ("[]a]+", "]ab"),
    ("[-a]|[a-]", "-ab"),
    ("\\w\\s\\d", "a_ 1-\t"),
    ("[\\w.]+@x", "a.@x-"),
    ("a.c", 'abc"\\\n'),
    ("\\.\\*\\(\\)", ".*()a"),
    ("\\x41\\u00e9", "Aé"),
    ("a{2}|b{0}", "ab"),
    ("(?P<g>a)(?:b)?", "ab"),
    ("a*?b??", "ab"),
    ("^a$|^b$", "ab"),
    ("\\Aab\\Z", "ab"),
    ("a{x}", "a{x}"),
    ("", "a"),
    ("()|a", "a"),
    ("a\\nb", "a\nb"),
    ('[a"\\\\]', 'a"\\'),
    ("[\\x01-~]+", 'a"\\\t'),
]

# Longer strings for patterns that need them (the candidates are short).
EXAMPLES = {
    "^[A-Z]{2}-\\d{3}$": ["AZ-123", "AZ-12", "aZ-123", "AZ-1234", "AZ 123"],
    'say "(hi|yo)"': ['say "hi"', 'say "yo"', 'say "ho"', "say hi"],
}

REFUSED = [
    ("(?=a)b", "lookarounds"),
    ("(?!a)b", "lookarounds"),
    ("(?<=a)b", "lookarounds"),
    ("(a)\\1", "backreferences"),
    ("(?P=g)", "backreferences"),
    ("a\\bb", "word boundaries"),
    ("(?i)a", "flags"),
    ("a*+", "possessive"),
    ("a^b", "anchors"),
    ("a$b", "anchors"),
    ("(a$)", "anchors"),
    ("\\D", "negated categories"),
    ("[^\\d]", "negated class"),
    ("[\\d-z]", "bad character range"),
    ("[z-a]", "bad character range"),
    ("(a", "missing )"),
    ("a)", "unbalanced"),
    ("*a", "nothing to repeat"),
    ("{2}", "nothing to repeat"),
    ("a**", "multiple repeat"),
    ("a{3,2}", "min repeat greater than max"),
    ("[ab", "unterminated"),
    ("\\q", "bad escape"),
    ("\\xZZ", "bad escape"),
    ('["\\\\]', "only characters JSON must escape"),
    ("a" * (MAX_PATTERN_LENGTH + 1), f"at most {MAX_PATTERN_LENGTH}"),
    (f"a{{{MAX_PATTERN_REPEAT + 1}}}", "multiply to"),
    ("(a{64}){65}", "multiply to"),
    ("((a{16}|b){16}){17}", "multiply to"),
]

JSON_UNESCAPED = re.compile(r'[^"\\\x00-\x1f]*')


def candidates(alphabet: str, longest: int = 5) -> list[str]:
    """Every string of up to ``longest`` characters over ``alphabet``."""
    return ["".join(chars) for size in range(longest + 1) for chars in itertools.product(alphabet, repeat=size)]


@pytest.mark.parametrize(("pattern", "alphabet"), TRANSLATED, ids=[p for p, _ in TRANSLATED])
def test_translation_matches_what_python_fully_matches(pattern: str, alphabet: str) -> None:
    ours = re.compile(to_regex(regex_expression(pattern)))
    theirs = re.compile(pattern)
    accepted = 0
    for text in candidates(alphabet) + EXAMPLES.get(pattern, []):
        content = json.dumps(text, ensure_ascii=False)[1:-1]  # what the model writes inside the quotes
        mine = bool(ours.fullmatch(content))
        python = bool(theirs.fullmatch(text))
        if JSON_UNESCAPED.fullmatch(text) and "\\s" not in pattern:
            assert mine == python, text
        else:
            assert python or not mine, text  # narrowed to what JSON writes unescaped: never wider
        accepted += mine
    assert accepted, "the translation accepts none of the candidates"
    for content in candidates(alphabet):  # read as the text between the quotes: valid JSON, and matching
        if ours.fullmatch(content):
            assert theirs.fullmatch(json.loads(f'"{content}"')), content
    for content in candidates(alphabet):  # read as the text between the quotes: valid JSON, and matching
        if ours.fullmatch(content):
            assert theirs.fullmatch(json.loads(f'"{content}"')), content


def test_translation_writes_control_characters_escaped() -> None:
    assert regex_expression("a\\nb") == json.dumps("a\\nb")  # the JSON text a\nb
    assert regex_expression("^x$") == '"x"'  # literals merge, anchors at the ends go


def test_nested_repeats_below_the_limit_are_accepted() -> None:
    assert regex_expression("(a{64}){64}") == '("a"{64}){64}'


@pytest.mark.parametrize(("pattern", "reason"), REFUSED, ids=[p[:40] for p, _ in REFUSED])
def test_outside_the_subset_is_refused_saying_what(pattern: str, reason: str) -> None:
    with pytest.raises(PatternError) as raised:
        regex_expression(pattern)
    assert reason in str(raised.value)


def test_ecma_named_groups_read_as_groups() -> None:
    assert regex_expression("(?<year>\\d{4})-(?P<month>\\d{2})") == '([0-9]{4}) "-" ([0-9]{2})'
