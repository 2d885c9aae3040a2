"""Running a request's prompts on the engine and folding the output into choices.

A request may carry several prompts (completions batch) and ask for n choices
each; every prompt is one engine request ("run") and its choices are numbered
after those of the runs before it, as OpenAI numbers them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ovserve.service.api.generation import MAX_SEED
from ovserve.service.api.reasoning_budget import BudgetedGeneration, ReasoningBudget
from ovserve.service.engine import (
    EngineError,
    EngineOverloaded,
    EngineRejected,
    EngineUnavailable,
    GenerationStream,
    PromptImages,
    SamplingParams,
    Scoring,
    SequenceDelta,
    TokenScores,
    Update,
)
from ovserve.service.errors import Internal, InvalidArgument, ResourceExhausted, ServiceError, Unavailable
from ovserve.service.models import ServedModel
from ovserve.service.store import tenancy

# The engine's failures -> the service's errors, most specific first: servicers know only ServiceError.
ENGINE_ERRORS: tuple[tuple[type[EngineError], type[ServiceError]], ...] = (
    (EngineRejected, InvalidArgument),  # settings the engine cannot run
    (EngineOverloaded, ResourceExhausted),  # its KV cache is full
    (EngineUnavailable, Unavailable),  # its process is not running
    (EngineError, Internal),
)


def service_error(error: EngineError) -> ServiceError:
    """The ServiceError that reports ``error`` to the client."""
    kind = next(service for engine, service in ENGINE_ERRORS if isinstance(error, engine))
    return kind(str(error))


@dataclass(frozen=True)
class Run:
    """One prompt of a request, ready for the engine."""

    prompt_ids: list[int]
    params: SamplingParams
    first_choice: int  # OpenAI index of this run's first choice
    images: PromptImages | None = None  # a vision request's images and text prompt
    scoring: Scoring | None = None  # alternatives or prompt logprobs asked for (ovserve.service.engine.scoring)
    budget: ReasoningBudget | None = None  # its reasoning block's budget (ovserve.service.api.reasoning_budget)
    cache_salt: str = ""  # its prefix-cache salt (ovserve.service.api.cache_salt)


def fan_out(run: Run, n: int, model: ServedModel) -> list[Run]:
    """n single-sequence runs with consecutive seeds, for a model whose pipeline generates one sequence per request,
    a run under a reasoning budget, or greedy choices.

    A pipeline with a draft model or prompt lookup (assisted generation)
    refuses num_return_sequences > 1; n independent samples are what n > 1 asks for.
    A reasoning budget ends each sequence's block at its own time, with a request of its own (BudgetedGeneration).
    Greedy decoding (temperature 0, no beam search) returns one sequence a request: n greedy choices are n requests,
    run side by side in the engine's batch.
    """
    greedy = not run.params.do_sample and (run.params.num_beams or 1) == 1
    if n == 1 or not (model.limits.assisted or run.budget is not None or greedy):
        return [run]
    seed = run.params.seed or 0
    return [
        dataclasses.replace(
            run,
            params=dataclasses.replace(run.params, seed=(seed + i) % (MAX_SEED + 1), num_return_sequences=None),
            first_choice=run.first_choice + i,
        )
        for i in range(n)
    ]


class RunStream:
    """Every run of a request, submitted to the engine on construction; iterate (run, update) pairs as they come.

    Submitting at once lets the engine work while the caller sends its first
    messages. close() (idempotent; iterating to the end or closing the
    iterator also does it) cancels the runs still going: a caller must close
    a RunStream it does not iterate to the end.
    """

    def __init__(self, model: ServedModel, runs: list[Run], *, skip_special_tokens: bool) -> None:
        self._runs = runs
        self._generations: list[GenerationStream | BudgetedGeneration] = []
        try:
            for run in runs:
                self._generations.append(_submit(model, run, skip_special_tokens))
        except EngineError as error:
            self.close()
            raise service_error(error) from error
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Cancel what is still running."""
        for generation in self._generations:
            generation.close()

    async def __aiter__(self) -> AsyncIterator[tuple[Run, Update]]:
        try:
            if len(self._runs) == 1:  # the common case needs no tasks
                async for update in self._generations[0]:
                    yield self._runs[0], update
                return
            async for pair in self._interleaved():
                yield pair
        except EngineError as error:
            raise service_error(error) from error
        finally:
            self.close()

    async def _interleaved(self) -> AsyncIterator[tuple[Run, Update]]:
        queue: asyncio.Queue[tuple[Run, Update | BaseException | None]] = asyncio.Queue()

        async def pump(run: Run, generation: GenerationStream | BudgetedGeneration) -> None:
            try:
                async for update in generation:
                    queue.put_nowait((run, update))
            except Exception as error:
                queue.put_nowait((run, error))
            finally:
                queue.put_nowait((run, None))

        tasks = [asyncio.create_task(pump(run, gen)) for run, gen in zip(self._runs, self._generations, strict=True)]
        try:
            remaining = len(tasks)
            while remaining:
                run, item = await queue.get()
                if item is None:
                    remaining -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield run, item
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _submit(model: ServedModel, run: Run, skip_special_tokens: bool) -> GenerationStream | BudgetedGeneration:
    """Send ``run`` to the engine: as it is, or in two phases under its reasoning budget."""

    def submit(prompt_ids: list[int], params: SamplingParams, scoring: Scoring | None) -> GenerationStream:
        return model.engine.submit(
            prompt_ids, params, skip_special_tokens=skip_special_tokens, images=run.images, scoring=scoring,
            adapter=model.adapter, tenant=tenancy.tenant.get(), cache_salt=run.cache_salt,
        )  # fmt: skip

    if run.budget is None:
        return submit(run.prompt_ids, run.params, run.scoring)
    return BudgetedGeneration(
        submit, lambda ids, skip: model.engine.decode(ids, skip_special_tokens=skip), run.prompt_ids, run.params,
        run.scoring, run.budget, skip_special_tokens=skip_special_tokens,
    )  # fmt: skip


async def collect_choices(
    model: ServedModel,
    runs: list[Run],
    *,
    skip_special_tokens: bool,
    prompts: dict[int, TokenScores] | None = None,
) -> list[SequenceDelta]:
    """Run to the end and return every choice whole (index = its OpenAI index), in OpenAI order; ``prompts``
    gets each run's scored prompt, when asked, by the index of the run's first choice."""
    choices: dict[int, SequenceDelta] = {}
    async for run, update in RunStream(model, runs, skip_special_tokens=skip_special_tokens):
        if update.prompt is not None and prompts is not None:
            prompts[run.first_choice] = update.prompt
        for delta in update.sequences:
            index = run.first_choice + delta.index
            choices.setdefault(index, SequenceDelta(index)).extend(delta)
    return [choices[index] for index in sorted(choices)]


class DeltaStream:
    """A streaming request's output: per hand-over, the deltas worth sending, with their choice index.

    Its runs are submitted on construction: build it before sending anything,
    and close it in a ``finally`` (see RunStream).

    Counts completion tokens as they pass (for the usage chunk), and leaves out
    deltas with nothing to show yet (text the detokenizer holds back), unless
    their tokens carry logprobs.
    """

    def __init__(self, model: ServedModel, runs: list[Run], *, skip_special_tokens: bool, logprobs: bool) -> None:
        self._updates = RunStream(model, runs, skip_special_tokens=skip_special_tokens)  # submitted now
        self._logprobs = logprobs
        self.completion_tokens = 0
        self.prompts: dict[int, TokenScores] = {}  # scored prompts (when asked), by their run's first choice

    def close(self) -> None:
        """Cancel the runs still going (see RunStream)."""
        self._updates.close()

    async def __aiter__(self) -> AsyncIterator[list[tuple[int, SequenceDelta]]]:
        async for run, update in self._updates:
            if update.prompt is not None:
                self.prompts[run.first_choice] = update.prompt
            ready = []
            for delta in update.sequences:
                self.completion_tokens += len(delta.token_ids)
                if delta.text or delta.finish_reason is not None or (self._logprobs and delta.token_ids):
                    ready.append((run.first_choice + delta.index, delta))
            if ready:
                yield ready
