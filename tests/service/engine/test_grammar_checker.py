"""The engine's grammar checker: compiles with the served model's tokenizer in a child process, bounded in time.

Real compiles on the bundled tiny-chat's tokenizer; the process is killed and
restarted on purpose to check what a crash or a runaway compile costs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovserve.service.engine import OutputConstraint
from ovserve.service.engine.grammar import GrammarChecker

OBJECT = 'root ::= "{" "}"'
BROKEN = "root ::= ("  # the EBNF parser refuses it


@pytest.fixture
def checker(tiny_chat_dir: Path) -> Iterator[GrammarChecker]:
    checker = GrammarChecker(tiny_chat_dir, timeout=60)
    yield checker
    checker.close()


def check(checker: GrammarChecker, kind: str, value: str) -> str | None:
    return asyncio.run(checker.check(OutputConstraint(kind, value, "response_format")))


def test_a_grammar_that_compiles_passes_and_a_broken_one_is_explained(checker: GrammarChecker) -> None:
    assert check(checker, "grammar", OBJECT) is None
    assert check(checker, "regex", "[0-9]{3}") is None
    error = check(checker, "grammar", BROKEN)
    assert error is not None and error.strip()
    assert "jenkins" not in error and "Check failed" not in error  # the engine's noise is cut
    assert checker.restarts == 0  # a refusal is an answer, not a crash


def test_verdicts_are_cached_by_text(checker: GrammarChecker) -> None:
    assert check(checker, "grammar", OBJECT) is None
    error = check(checker, "grammar", BROKEN)
    checker.close()  # no process left: only the cache can answer now
    checker._helper._started = None  # type: ignore[assignment,method-assign]  # any compile would now fail loudly
    assert check(checker, "grammar", OBJECT) is None
    assert check(checker, "grammar", BROKEN) == error


def test_a_compile_past_the_timeout_is_refused_and_the_process_replaced(tiny_chat_dir: Path) -> None:
    checker = GrammarChecker(tiny_chat_dir, timeout=1e-6)  # no compile is that fast
    try:
        error = check(checker, "regex", "[a-z]+@[a-z]+")
        assert error is not None and "longer than" in error
        assert checker.restarts == 1
        checker._timeout = 60  # the next check gets a fresh process, and time enough
        assert check(checker, "grammar", OBJECT) is None
        assert checker.restarts == 1
    finally:
        checker.close()


def test_a_process_killed_between_checks_is_replaced_without_blaming_the_next_grammar(
    checker: GrammarChecker,
) -> None:
    assert check(checker, "grammar", OBJECT) is None
    process = checker._helper.process
    assert process is not None
    process.kill()
    process.wait()
    assert check(checker, "regex", "[0-9]+") is None
    assert checker.restarts == 1
    assert checker._helper.process is not None and checker._helper.process.pid != process.pid


def test_concurrent_checks_share_one_process_and_all_get_answers(checker: GrammarChecker) -> None:
    grammars = [f'root ::= "{"x" * i}"' for i in range(1, 9)] + [BROKEN]

    async def all_of_them() -> list[str | None]:
        return await asyncio.gather(
            *(checker.check(OutputConstraint("grammar", grammar, "guided_grammar")) for grammar in grammars)
        )

    verdicts = asyncio.run(all_of_them())
    assert verdicts[:-1] == [None] * 8
    assert verdicts[-1] is not None
    assert checker.restarts == 0


def test_a_timeout_is_not_cached(tiny_chat_dir: Path) -> None:
    """A slow compile may be the machine's fault: the same grammar is compiled again next time."""
    checker = GrammarChecker(tiny_chat_dir, timeout=1e-6)
    try:
        assert "longer than" in (check(checker, "grammar", OBJECT) or "")
        checker._timeout = 60
        assert check(checker, "grammar", OBJECT) is None
    finally:
        checker.close()
