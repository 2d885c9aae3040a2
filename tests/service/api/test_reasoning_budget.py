"""The reasoning budget over scripted engine requests (ovserve.service.api.reasoning_budget): where the block is cut,
what
phase 2 is asked, what the caller sees. End to end on tiny-chat: test_reasoning_budget_served.py."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from ovserve.clients.v1 import chat_pb2, response_object_pb2, response_pb2
from ovserve.service.api.reasoning_budget import (
    FORCED_LOGPROB,
    BlockWatch,
    BudgetedGeneration,
    ReasoningBudget,
    budget_violations,
    default_budget,
    effort_budget,
    run_budget,
)
from ovserve.service.api.runs import Run, fan_out
from ovserve.service.engine import FinishReason, OutputConstraint, SamplingParams, Scoring, SequenceDelta, Update
from ovserve.service.engine.generation import Generation as EngineGeneration
from ovserve.service.engine.generation import Mailbox
from ovserve.service.parsing.markup import THINK
from ovserve.service.structured.output import Guide

# A toy tokenizer: token id -> its text. "</think>" is one token (as in Qwen's), and also spelled in two.
VOCAB = ["a", "b", " ", "</think>", "\n\n", "<", "/think>", "<think>", "X", "é"[0], "<|eos|>"]
A, B, SPACE, END, BLANK, LT, SLASH_THINK, BEGIN, X, E_ACUTE, EOS = range(len(VOCAB))
SPECIAL = {EOS}
ANSWER = OutputConstraint("grammar", 'root ::= "X"', "tool_choice")
PROMPT = [100, 101]


def decode(ids: list[int], skip_special_tokens: bool) -> str:
    return "".join(VOCAB[i] for i in ids if not (skip_special_tokens and i in SPECIAL))


def budget(tokens: int, *, opened: bool = True) -> ReasoningBudget:
    return ReasoningBudget(tokens, opened, ("<think>",), ("</think>",), (END, BLANK), answer=ANSWER)


def step(*ids: int, text: str | None = None, finish: FinishReason | None = None, logprobs: bool = False) -> Update:
    """One engine hand-over of a single sequence; its text as a detokenizer would send it (``text``: held back)."""
    delta = SequenceDelta(0, list(ids), decode(list(ids), True) if text is None else text, finish_reason=finish)
    if logprobs:
        delta.logprobs = [-0.5] * len(ids)
    return Update([delta], finished=finish is not None)


class Scripted:
    """A submitted engine request that hands over its scripted updates; records whether it was cancelled."""

    def __init__(self, updates: list[Update]) -> None:
        self.updates = updates
        self.read = 0
        self.closed = False
        self.outcome = ""

    def close(self, outcome: str = "cancelled") -> None:
        self.closed = True
        self.outcome = self.outcome or outcome

    async def _iterate(self) -> AsyncIterator[Update]:
        for update in self.updates:
            if self.closed:
                return
            self.read += 1
            yield update

    def __aiter__(self) -> AsyncIterator[Update]:
        return self._iterate()


class Engine:
    """Scripted phases, in order; records each submission (prompt ids, params, scoring)."""

    def __init__(self, *phases: list[Update]) -> None:
        self.phases = [Scripted(updates) for updates in phases]
        self.submitted: list[tuple[list[int], SamplingParams, Scoring | None]] = []

    def submit(self, prompt_ids: list[int], params: SamplingParams, scoring: Scoring | None) -> Any:
        self.submitted.append((prompt_ids, params, scoring))
        return self.phases[len(self.submitted) - 1]


def run(
    engine: Engine,
    rules: ReasoningBudget,
    *,
    max_new_tokens: int = 20,
    logprobs: int = 0,
    scoring: Scoring | None = None,
) -> list[Update]:
    """Every update the caller sees of one budgeted run."""
    params = SamplingParams(max_new_tokens=max_new_tokens, logprobs=logprobs, constraint=ANSWER)

    async def main() -> list[Update]:
        generation = BudgetedGeneration(engine.submit, decode, PROMPT, params, scoring, rules, skip_special_tokens=True)  # type: ignore[arg-type]
        return [update async for update in generation]

    return asyncio.run(main())


def joined(updates: list[Update]) -> SequenceDelta:
    whole = SequenceDelta(0)
    for update in updates:
        for delta in update.sequences:
            whole.extend(delta)
    return whole


def test_the_budget_ends_the_block_and_a_second_request_answers() -> None:
    engine = Engine(
        [step(A), step(B, A, B, B), step(A)],  # the cancel lands late: B B past the budget, then another step
        [step(X), step(EOS, finish=FinishReason.STOP)],
    )
    updates = run(engine, budget(3), max_new_tokens=20)
    whole = joined(updates)
    # Three reasoning tokens, the end markup, then phase 2's output: nothing phase 1 wrote past the budget.
    assert whole.token_ids == [A, B, A, END, BLANK, X, EOS]
    assert whole.text == "aba</think>\n\nX"
    assert whole.finish_reason is FinishReason.STOP
    assert [len(update.sequences[0].token_ids) for update in updates] == [1, 4, 1, 1]
    first, _second = engine.phases
    assert first.closed and first.read == 2  # cancelled at the budget; its third step never read
    assert first.outcome == "reasoning_budget"  # the metrics tell it from a client that went away
    prompt, params, _ = engine.submitted[1]
    assert prompt == [*PROMPT, A, B, A, END, BLANK]
    assert params.max_new_tokens == 20 - 3 - 2  # what is left of the request's
    assert params.constraint == ANSWER


def test_a_block_ended_in_time_needs_one_request() -> None:
    engine = Engine([step(A), step(END, BLANK), step(X, B, B, B, B), step(EOS, finish=FinishReason.STOP)])
    whole = joined(run(engine, budget(2)))
    assert whole.token_ids == [A, END, BLANK, X, B, B, B, B, EOS]
    assert len(engine.submitted) == 1 and not engine.phases[0].closed


def test_an_end_split_across_deltas_is_seen() -> None:
    """``<`` then ``/think>``: the model ended its block with its 3rd token, within a budget of 3."""
    engine = Engine([step(A), step(LT), step(SLASH_THINK, BLANK, X, X), step(EOS, finish=FinishReason.STOP)])
    whole = joined(run(engine, budget(3)))
    assert whole.text == "a</think>\n\nXX" and len(engine.submitted) == 1


def test_an_end_past_the_budget_is_cut_off() -> None:
    """The same end one token too late for a budget of 2: the server's end markup replaces it."""
    engine = Engine([step(A), step(LT), step(SLASH_THINK, BLANK)], [step(X, finish=FinishReason.STOP)])
    whole = joined(run(engine, budget(2)))
    assert whole.token_ids == [A, LT, END, BLANK, X]
    assert len(engine.submitted) == 2


def test_a_zero_budget_ends_the_block_at_once() -> None:
    engine = Engine([step(A, B)], [step(X, finish=FinishReason.STOP)])
    updates = run(engine, budget(0))
    assert updates[0].sequences[0].token_ids == [END, BLANK]
    assert joined(updates).text == "</think>\n\nX"
    assert engine.submitted[1][0] == [*PROMPT, END, BLANK]


def test_text_the_detokenizer_held_back_comes_with_the_end() -> None:
    """Phase 1's last kept token's text had not been sent (an incomplete character, say): it is not lost."""
    engine = Engine([step(A), step(E_ACUTE, text="")], [step(X, finish=FinishReason.STOP)])
    whole = joined(run(engine, budget(2)))
    assert whole.text == "aé</think>\n\nX"


def test_logprobs_stay_aligned_with_the_tokens() -> None:
    engine = Engine([step(A, logprobs=True), step(B, B, B, logprobs=True)], [step(X, logprobs=True)])
    for update in (updates := run(engine, budget(2), logprobs=1)):
        delta = update.sequences[0]
        assert len(delta.logprobs) == len(delta.token_ids)
    assert joined(updates).logprobs == [-0.5, -0.5, FORCED_LOGPROB, FORCED_LOGPROB, -0.5]


def test_alternatives_of_the_end_markup_are_the_tokens_written() -> None:
    scored = Scoring(top=2, prompt=True, output=True)
    engine = Engine([step(A, B, logprobs=True)], [step(X, logprobs=True)])
    engine.phases[0].updates[0].sequences[0].top_logprobs = [((A, -0.5),), ((B, -0.5),)]
    updates = run(engine, budget(1), scoring=scored)
    assert updates[0].sequences[0].top_logprobs == [((A, -0.5),), ((END, 0.0),), ((BLANK, 0.0),)]
    assert engine.submitted[1][2] == dataclasses.replace(scored, prompt=False)  # the prompt was scored once


def test_a_block_the_model_opens_is_counted_from_its_begin() -> None:
    engine = Engine([step(B, BEGIN, A), step(A, A, A)], [step(X, finish=FinishReason.STOP)])
    whole = joined(run(engine, budget(2, opened=False)))
    assert whole.token_ids == [B, BEGIN, A, A, END, BLANK, X]
    assert engine.submitted[1][0] == [*PROMPT, B, BEGIN, A, A, END, BLANK]


def test_no_block_no_cut() -> None:
    engine = Engine([step(A, B, A, B), step(A, B, finish=FinishReason.STOP)])
    assert joined(run(engine, budget(1, opened=False))).token_ids == [A, B, A, B, A, B]
    assert len(engine.submitted) == 1


def test_no_room_left_to_answer_lets_phase_one_run_out() -> None:
    """A budget that leaves no token after the end markup would only swap the model's last tokens for it."""
    engine = Engine([step(A, A), step(A, finish=FinishReason.LENGTH)])
    whole = joined(run(engine, budget(2), max_new_tokens=3))
    assert whole.token_ids == [A, A, A] and whole.finish_reason is FinishReason.LENGTH
    assert len(engine.submitted) == 1


def test_a_finish_within_the_budget_passes() -> None:
    engine = Engine([step(A, EOS, finish=FinishReason.STOP)])
    assert joined(run(engine, budget(5))).finish_reason is FinishReason.STOP
    assert len(engine.submitted) == 1


def test_the_watch_window_is_bounded() -> None:
    """Each delta decodes the new tokens and the few before them that a marker can span, not the whole block."""
    seen: list[int] = []

    def counting(ids: list[int], skip: bool) -> str:
        seen.append(len(ids))
        return decode(ids, skip)

    watch = BlockWatch(budget(10_000), counting)
    for _ in range(1_000):
        assert watch.feed([A]) is None
    assert max(seen) <= len(b"</think>") + 1


def test_n_choices_under_a_budget_fan_out_into_single_sequences() -> None:
    model: Any = SimpleNamespace(limits=SimpleNamespace(assisted=False))
    params = SamplingParams(max_new_tokens=8, num_return_sequences=3, seed=7, do_sample=True)
    runs = fan_out(Run(PROMPT, params, first_choice=0, budget=budget(2)), 3, model)
    assert [r.first_choice for r in runs] == [0, 1, 2]
    assert [r.params.seed for r in runs] == [7, 8, 9]
    assert {r.params.num_return_sequences for r in runs} == {None}
    assert fan_out(Run(PROMPT, params, first_choice=0), 3, model)[0].params.num_return_sequences == 3


def served_model(*, think: Any = THINK, vision: Any = None) -> Any:
    output = SimpleNamespace(think_markup=think)
    engine = SimpleNamespace(encode=lambda text, add_special_tokens: [END, BLANK] if text == "</think>\n\n" else [])
    return SimpleNamespace(name="m", output_format=output, vision=vision, engine=engine)


@pytest.mark.parametrize(
    ("fields", "model", "message"),
    [
        ({"thinking_token_budget": -1}, served_model(), "must be at least 0"),
        ({"thinking_token_budget": 4}, served_model(think=None), "has no reasoning format"),
        ({"thinking_token_budget": 4, "best_of": 2}, served_model(), "beam search"),
        ({"thinking_token_budget": 4}, served_model(vision=object()), "vision model"),
    ],
)
def test_refusals_name_the_field(fields: dict[str, Any], model: Any, message: str) -> None:
    (violation,) = budget_violations(chat_pb2.CreateChatCompletionRequest(**fields), model)
    assert violation.field == "thinking_token_budget" and message in violation.description


def test_accepted_values() -> None:
    for value in (0, 4, 1 << 30):
        request = chat_pb2.CreateChatCompletionRequest(thinking_token_budget=value)
        assert budget_violations(request, served_model()) == []
    assert budget_violations(chat_pb2.CreateChatCompletionRequest(), served_model(think=None)) == []


def test_which_runs_get_a_budget() -> None:
    forced = Guide("tool_choice", "grammar", 'root ::= "X"', think=THINK, calls=True, forced=True)
    allowed = dataclasses.replace(forced, forced=False)
    plain = chat_pb2.CreateChatCompletionRequest()
    asked = chat_pb2.CreateChatCompletionRequest(thinking_token_budget=4)
    model = served_model()

    def rules(request: Any, plan: Guide | None, opened: bool = True, vision: bool = False) -> ReasoningBudget | None:
        return run_budget(model, request, plan, opened=opened, max_new_tokens=1000, vision=vision)

    default = rules(plain, forced)
    assert default is not None and default.tokens == default_budget(1000) == 500
    assert default.end_ids == (END, BLANK)
    assert default.answer == OutputConstraint("grammar", 'root ::= "X"', "tool_choice")  # the call format alone
    assert rules(plain, forced, opened=False) is None  # no block can come before the call
    assert rules(plain, dataclasses.replace(forced, thinking=True), opened=False) is not None  # the model opens it
    assert rules(plain, allowed) is None and rules(plain, None) is None
    assert rules(plain, forced, vision=True) is None
    asked_budget = rules(asked, None, opened=False)
    assert asked_budget is not None and asked_budget.tokens == 4 and asked_budget.answer is None
    assert default_budget(5000) == 2500 and default_budget(101) == 51 and default_budget(1) == 1


@pytest.mark.parametrize(
    ("effort", "budget"), [("minimal", 100), ("low", 200), ("medium", 500), ("high", 800), ("none", None), (None, None)]
)
def test_an_effort_is_openrouters_share_of_the_output(effort: str | None, budget: int | None) -> None:
    assert effort_budget(effort, 1000) == budget


def test_an_effort_budget_is_rounded_down_but_never_zero() -> None:
    assert effort_budget("high", 7) == 5 and effort_budget("low", 9) == 1 and effort_budget("minimal", 1) == 1


def test_an_effort_is_a_budget_the_explicit_one_wins() -> None:
    model = served_model()

    def tokens(request: Any, plan: Guide | None = None, **flags: bool) -> int | None:
        budget = run_budget(model, request, plan, opened=True, max_new_tokens=1000, vision=False, **flags)
        return None if budget is None else budget.tokens

    chat = chat_pb2.CreateChatCompletionRequest
    assert tokens(chat(reasoning_effort="low")) == 200 and tokens(chat(reasoning_effort="high")) == 800
    assert tokens(chat(reasoning_effort="none")) is None  # "none" switches thinking off instead
    assert tokens(chat(reasoning_effort="low", thinking_token_budget=7)) == 7
    assert tokens(chat(reasoning_effort="high", thinking_token_budget=0)) == 0
    # A forced call keeps room for its calls: the smaller of the effort's share and the default's half.
    forced = Guide("tool_choice", "grammar", 'root ::= "X"', think=THINK, calls=True, forced=True)
    assert tokens(chat(reasoning_effort="high"), forced) == 500 and tokens(chat(reasoning_effort="low"), forced) == 200
    # The effort is a hint: where a budget is not served it only switches thinking on (as before budgets).
    assert tokens(chat(reasoning_effort="low"), biased=True) is None
    assert tokens(chat(reasoning_effort="low", best_of=2)) is None
    assert run_budget(model, chat(reasoning_effort="low"), None, opened=True, max_new_tokens=9, vision=True) is None
    no_format = served_model(think=None)
    assert (
        run_budget(no_format, chat(reasoning_effort="low"), None, opened=True, max_new_tokens=9, vision=False) is None
    )


def test_the_responses_api_sets_its_budget_in_reasoning() -> None:
    model = served_model()

    def responses(**reasoning: Any) -> response_pb2.CreateResponseRequest:
        return response_pb2.CreateResponseRequest(reasoning=response_object_pb2.ReasoningConfig(**reasoning))

    def tokens(request: Any) -> int | None:
        budget = run_budget(model, request, None, opened=True, max_new_tokens=1000, vision=False)
        return None if budget is None else budget.tokens

    assert tokens(responses(effort="medium")) == 500 and tokens(responses(effort="minimal")) == 100
    assert tokens(responses(effort="low", max_tokens=3)) == 3 and tokens(responses(max_tokens=9)) == 9
    assert tokens(response_pb2.CreateResponseRequest()) is None
    (violation,) = budget_violations(responses(max_tokens=-1), model)
    assert violation.field == "reasoning.max_tokens" and "must be at least 0" in violation.description
    (violation,) = budget_violations(responses(max_tokens=4), served_model(think=None))
    assert violation.field == "reasoning.max_tokens" and "has no reasoning format" in violation.description
    assert budget_violations(responses(effort="high"), served_model(think=None)) == []  # effort alone: a hint


class Meter:
    """Records how a Generation reports its end (ovserve.service.observability.metrics.GenerationMeter's calls)."""

    def __init__(self) -> None:
        self.ended: list[str] = []

    def tokens(self, count: int) -> None:
        pass

    def end(self, outcome: str) -> None:
        self.ended.append(outcome)


def test_a_generation_ended_at_the_budget_is_counted_as_such_not_as_cancelled() -> None:
    released: list[bool] = []
    meter = Meter()
    generation = EngineGeneration(Mailbox(), released.append, meter)
    generation.close("reasoning_budget")
    generation.close()  # idempotent: the first outcome stands
    assert meter.ended == ["reasoning_budget"] and released == [True]  # still cancelled in the engine
    plain = Meter()
    EngineGeneration(Mailbox(), released.append, plain).close()
    assert plain.ended == ["cancelled"]
