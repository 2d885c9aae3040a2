"""A reasoning budget: a reasoning block that has used its tokens is ended by the server, and the answer follows.

Templates that end the prompt inside the reasoning block (QwQ, DeepSeek-R1, Apriel 1.6, Nemotron 3 Nano, ...)
give a forced call the constraint "any text until the block's end, then the calls" (``Guide.constraint``). A
model that never writes the end reaches max_tokens inside its reasoning and no call comes. A bounded reasoning
rule inside the grammar is too slow to compile (XGrammar expands the repetition: 1,000 characters took 25 s), so
the budget is kept outside the grammar, in two phases, as vLLM's ``thinking_token_budget`` and llama.cpp's
``--reasoning-budget`` do:

1. the run is submitted as it is (same constraint: a model that closes its block in time needs one engine
   request); the tokens the sequence writes inside the block are counted (``BlockWatch``);
2. when the block has used its budget with no end written, that request is cancelled and a second one submitted:
   the prompt, the tokens kept and the block's end markup (``ThinkMarkup.end`` and what follows it) as the
   prompt, the rest of max_new_tokens, and the constraint without the block (``Guide.after_block``).

To the caller it is one sequence (``BudgetedGeneration``): phase 1's deltas up to the budget, one delta that
carries the end markup's tokens and text, then phase 2's deltas. Tokens phase 1 wrote past the budget (the
cancel lands a step late) are dropped, never sent. Usage counts every token sent, the end markup's included;
the finish reason is phase 2's.

Served: a block the prompt opened or one the model opens (its begin markup seen in the output), n > 1 (one
single-sequence run per choice: ``runs.fan_out``). Refused with a 400 naming ``thinking_token_budget``: beam
search (best_of > 1: the beams share one request, a cut would have to pick one of them) and vision prompts (their
pipeline takes text and images, never the token ids phase 2 continues from); a model without a reasoning format.

Where a request sets it: chat's ``thinking_token_budget`` (vLLM's name) and the Responses API's
``reasoning.max_tokens`` (OpenRouter's, inside OpenAI's ``reasoning`` object, beside ``effort``). Unset, the
reasoning effort (chat's ``reasoning_effort``, Responses' ``reasoning.effort``) is a budget: a share of the
output's tokens (``EFFORT_PERCENT``). That one is a hint, not a demand: where a budget is not served (beam search,
vision, the biased lane of logit_bias) the effort only switches thinking on, as it did before budgets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ovserve.service.engine import GenerationStream, OutputConstraint, SamplingParams, Scoring, SequenceDelta, Update
from ovserve.service.errors import FieldViolation
from ovserve.service.models import ServedModel
from ovserve.service.parsing.markup import ThinkMarkup
from ovserve.service.structured.output import AFTER_THINK, Guide

FIELD = "thinking_token_budget"  # vLLM's name for it
RESPONSES_FIELD = "reasoning.max_tokens"  # OpenRouter's, the Responses API's field
# The share (in percent) of the output's tokens that each reasoning effort gives the reasoning block, as OpenRouter
# maps an effort onto a token budget (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens: "high"
# about 80% of max_tokens, "medium" 50%, "low" 20%, "minimal" 10%). "none" has no share: it switches thinking off
# in the chat template instead (ovserve.service.api.prompting.template_context).
EFFORT_PERCENT = {"minimal": 10, "low": 20, "medium": 50, "high": 80}
# The logprob given to each end-markup token the server writes: it was forced, so under the distribution it was
# chosen from (one token allowed) its probability is 1. A number, not null: clients that sum logprobs keep working
# and the token and logprob lists stay aligned.
FORCED_LOGPROB = 0.0

Submit = Callable[[list[int], SamplingParams, Scoring | None], GenerationStream]  # (prompt ids, params, scoring)
Decode = Callable[[list[int], bool], str]  # (token ids, skip_special_tokens) -> text


@dataclass(frozen=True)
class ReasoningBudget:
    """How many tokens a run's reasoning block may hold, and how the server ends it."""

    tokens: int  # the block's budget: 0 ends it at once
    opened: bool  # the prompt opened the block; else it opens when the model writes one of ``begins``
    begins: tuple[str, ...]  # the block's opening spellings (unused when ``opened``)
    ends: tuple[str, ...]  # the spellings that end it when the model writes them
    end_ids: tuple[int, ...]  # the tokens the server writes to end it: the end markup and what follows it
    answer: OutputConstraint | None = None  # phase 2's constraint: the request's without the block (None: none)


def default_budget(max_new_tokens: int) -> int:
    """The budget of a forced call's reasoning when the request sets none: half of max_new_tokens (rounded up).

    The reasoning and the calls share the room when the model does not end its block: a model that reasons well
    ends it itself and is not cut unless it reasons past half of max_tokens (a fixed cap far below max_tokens would
    cut a real model's reasoning short); the other half holds the calls. A fixed reserve was measured too small:
    with 512 tokens kept for the calls of max_tokens 2,400, tiny-chat's "required" lists (up to 8 calls) in
    Cohere2 MoE's and Kimi K3's markup (75 and 215 of its tokens a call) ran out before the list closed. Calls cut
    by max_tokens keep those complete (ovserve.service.parsing.cut_lists).
    """
    return max_new_tokens - max_new_tokens // 2


def effort_budget(effort: str | None, max_new_tokens: int) -> int | None:
    """The reasoning budget an effort gives an output of ``max_new_tokens``: its share (``EFFORT_PERCENT``),
    rounded down but at least 1, since any effort but "none" asks for some reasoning; None for "none" or unset."""
    percent = EFFORT_PERCENT.get(effort or "")
    return None if percent is None else max(1, max_new_tokens * percent // 100)


def budget_violations(request: Any, model: ServedModel) -> list[FieldViolation]:
    """What is wrong with the request's explicit reasoning budget on this model (none when it sets none)."""
    asked = explicit_budget(request)
    if asked is None:
        return []
    field, value = asked
    if value < 0:
        return [FieldViolation(field, f"must be at least 0 (0 ends the reasoning at once); got {value}")]
    if model.output_format.think_markup is None:
        return [FieldViolation(field, f"model {model.name!r} has no reasoning format (its reasoning parser is none)")]
    if _beams(request):
        return [FieldViolation(field, "not supported with beam search (best_of > 1): the beams share one request")]
    if model.vision is not None:
        return [FieldViolation(field, "not supported on a vision model (its pipeline takes text, not token ids)")]
    return []


def explicit_budget(request: Any) -> tuple[str, int] | None:
    """The budget the request sets, with the field it is set in (chat's or the Responses API's), or None."""
    fields = request.DESCRIPTOR.fields_by_name
    if FIELD in fields:
        return (FIELD, request.thinking_token_budget) if request.HasField(FIELD) else None
    if "reasoning" in fields and request.reasoning.HasField("max_tokens"):
        return RESPONSES_FIELD, request.reasoning.max_tokens
    return None


def requested_effort(request: Any) -> str | None:
    """The request's reasoning effort (chat's ``reasoning_effort``, Responses' ``reasoning.effort``), or None."""
    fields = request.DESCRIPTOR.fields_by_name
    if "reasoning_effort" in fields:
        return request.reasoning_effort if request.HasField("reasoning_effort") else None
    if "reasoning" in fields and request.reasoning.HasField("effort"):
        return str(request.reasoning.effort)
    return None


def _beams(request: Any) -> bool:
    """Whether the request asks for beam search (only chat and completions have ``best_of``)."""
    return "best_of" in request.DESCRIPTOR.fields_by_name and request.HasField("best_of") and request.best_of > 1


def run_budget(
    model: ServedModel,
    request: Any,
    plan: Guide | None,
    *,
    opened: bool,
    max_new_tokens: int,
    vision: bool,
    biased: bool = False,
) -> ReasoningBudget | None:
    """The reasoning budget of one run (validated by ``budget_violations``), or None.

    The request's own, on any reasoning format; else its effort's (``effort_budget``); a forced call after a block
    the prompt opened (or the request lets the model open) holds at most ``default_budget``, so the call always
    comes. None where no block can come (no reasoning format) or where an implicit budget is not served (beam
    search, vision, the ``biased`` lane of logit_bias: the effort and the default are not applied there).
    """
    think = plan.think if plan is not None and plan.think is not None else model.output_format.think_markup
    if think is None:
        return None
    asked = explicit_budget(request)
    if asked is not None:
        tokens: int | None = asked[1]
    elif vision or biased or _beams(request):
        return None
    else:
        tokens = effort_budget(requested_effort(request), max_new_tokens)
        if plan is not None and plan.forced and (opened or plan.thinking):
            default = default_budget(max_new_tokens)
            tokens = default if tokens is None else min(tokens, default)
    if tokens is None:
        return None
    return ReasoningBudget(
        tokens,
        opened=opened,
        begins=think.begins,
        ends=think.ends,
        end_ids=tuple(model.engine.encode(think.end + _after(think), add_special_tokens=False)),
        answer=None if plan is None else plan.after_block(),
    )


def _after(think: ThinkMarkup) -> str:
    """What follows the block's end before the reply, as the forced-call grammar writes it."""
    return AFTER_THINK if think.after is None else think.after


class BlockWatch:
    """One output sequence's reasoning block, token by token: where it opens, whether it ends within the budget.

    The markup is found in the text decoded with special tokens (an end such as ``<|end|>`` may be one), over
    a window of the last tokens that a marker can span (a token holds at least one byte), so each delta costs
    one small decode, whatever the reasoning's length.
    """

    def __init__(self, budget: ReasoningBudget, decode: Decode) -> None:
        self._budget = budget
        self._decode = decode
        self.ids: list[int] = []  # the output tokens kept
        self._start: int | None = 0 if budget.opened else None  # where in ``ids`` the block's text starts
        self.done = False  # nothing more to watch: the block ended, or the budget did
        markers = (*budget.begins, *budget.ends)
        self._span = max((len(marker.encode()) for marker in markers), default=1)

    def feed(self, new: list[int]) -> int | None:
        """Take a delta's tokens: how many of them to keep when the budget ends the block among them, else None
        (all kept; the model ended the block, or the budget is not spent yet)."""
        if self.done:
            self.ids += new
            return None
        offset = 0
        if self._start is None:
            opened = self._first(self._budget.begins, len(self.ids), new)
            if opened is None:
                self.ids += new
                return None
            self.ids += new[:opened]
            self._start, offset, new = len(self.ids), opened, new[opened:]
        room = self._budget.tokens - (len(self.ids) - self._start)
        inside = new[: max(room, 0)]
        if self._first(self._budget.ends, self._start, inside) is not None:  # ended within the budget
            self.done = True
            self.ids += new
            return None
        if len(new) < room:
            self.ids += new
            return None
        self.done = True
        self.ids += inside
        return offset + len(inside)

    def _first(self, markers: tuple[str, ...], start: int, new: list[int]) -> int | None:
        """The fewest of ``new`` after which one of ``markers`` is written (looking no further back than
        ``start``), or None."""
        if not new:
            return None
        before = self.ids[max(start, len(self.ids) - self._span) :]
        if not _holds(self._decode(before + new, False), markers):
            return None
        return next(k for k in range(1, len(new) + 1) if _holds(self._decode(before + new[:k], False), markers))


def _holds(text: str, markers: tuple[str, ...]) -> bool:
    return any(marker in text for marker in markers)


class BudgetedGeneration:
    """A single-sequence run under a reasoning budget, iterated as one Generation (async-iterate Updates;
    close() cancels the engine request running now). Submits phase 1 on construction."""

    def __init__(
        self,
        submit: Submit,
        decode: Decode,
        prompt_ids: list[int],
        params: SamplingParams,
        scoring: Scoring | None,
        budget: ReasoningBudget,
        *,
        skip_special_tokens: bool,
    ) -> None:
        self._submit, self._decode = submit, decode
        self._prompt_ids, self._params, self._scoring, self._budget = prompt_ids, params, scoring, budget
        self._skip = skip_special_tokens
        self._generation = submit(prompt_ids, params, scoring)

    def close(self) -> None:
        """Cancel the engine request running now (idempotent)."""
        self._generation.close()

    def __aiter__(self) -> AsyncIterator[Update]:
        return self._updates()

    async def _updates(self) -> AsyncIterator[Update]:
        watch = BlockWatch(self._budget, self._decode)
        sent = ""  # the text passed on so far
        async for update in self._generation:
            if watch.done or not update.sequences:
                yield update
                continue
            (delta,) = update.sequences  # a budgeted run has one sequence (runs.fan_out)
            keep = watch.feed(delta.token_ids)
            rest = self._rest(len(watch.ids))
            if keep is not None and rest < 1:  # no room to answer after the end markup: phase 1 runs out instead
                keep = None
            if keep is None:
                sent += delta.text
                yield update
                continue
            self._generation.close("reasoning_budget")  # its tokens past the budget are dropped
            yield Update([self._ending(delta, keep, watch.ids, sent)], prompt=update.prompt)
            self._generation = self._submit(*self._phase_two(watch.ids, rest))
            async for later in self._generation:
                yield later
            return

    def _rest(self, kept: int) -> int:
        """The tokens phase 2 may write after ``kept`` tokens and the end markup."""
        return (self._params.max_new_tokens or 0) - kept - len(self._budget.end_ids)

    def _ending(self, delta: SequenceDelta, keep: int, kept: list[int], sent: str) -> SequenceDelta:
        """``delta`` cut to its first ``keep`` tokens, with the end markup's tokens after them.

        Its text is everything not yet sent up to the end markup (the detokenizer may have held some back), so
        decoded from the kept ids rather than cut out of ``delta.text``, which may hold text past the budget.
        """
        end = list(self._budget.end_ids)
        full = self._decode(kept + end, self._skip)
        text = full[len(sent) :] if full.startswith(sent) else self._decode(end, self._skip)
        out = SequenceDelta(delta.index, delta.token_ids[:keep] + end, text)
        scoring = self._scoring
        if self._params.logprobs or (scoring is not None and scoring.output):
            out.logprobs = delta.logprobs[:keep] + [FORCED_LOGPROB] * len(end)
        if scoring is not None and scoring.output and scoring.top:
            # The only token allowed there is the one written: it is its own single alternative.
            out.top_logprobs = delta.top_logprobs[:keep] + [((token, FORCED_LOGPROB),) for token in end]
        return out

    def _phase_two(self, kept: list[int], rest: int) -> tuple[list[int], SamplingParams, Scoring | None]:
        """Phase 2's request: it continues after the end markup, under the constraint without the block."""
        written = len(kept) + len(self._budget.end_ids)
        params = self._params.continued(written, max_new_tokens=rest, constraint=self._budget.answer)
        # The prompt was scored with phase 1's first update; phase 2's scores its output only.
        scoring = self._scoring
        scoring = dataclasses.replace(scoring, prompt=False) if scoring is not None and scoring.output else None
        return self._prompt_ids + kept + list(self._budget.end_ids), params, scoring
