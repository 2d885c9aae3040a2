"""A request -> its engine runs: the one way chat, completions and the Responses API prepare a request.

Each API reads its own fields and collects what is wrong with them (``begin`` opens that list); from
there the steps are the same: refuse the request with the sampling fields' problems in the same error
(``refuse_invalid``), render the conversation with the chat template (``render``, ``templated_prompt``:
token ids, or text and images for a vision model), then ``build_runs``: the output constraint compiled
with the model's tokenizer, the sampling parameters within the room the prompt leaves, and one Run per
prompt (n of them for a model with assisted decoding). ``ApiNames`` holds what differs: the names each
API's request uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ovserve.service.api import prefix_isolation
from ovserve.service.api.cache_salt import cache_salt
from ovserve.service.api.chat_output import opens_reasoning
from ovserve.service.api.common import streaming_violations
from ovserve.service.api.generation import Budget, build_sampling_params, generation_violations
from ovserve.service.api.logit_bias import lane_asked, lane_fields, with_lane
from ovserve.service.api.logprobs import LogprobAsk, ScoredPrompt, output_cap, score_violations
from ovserve.service.api.media_parts import MediaParts, prompt_with_images
from ovserve.service.api.prefill import NO_PREFILL, Prefill
from ovserve.service.api.prompting import render_prompt, render_text
from ovserve.service.api.reasoning_budget import budget_violations, run_budget
from ovserve.service.api.runs import Run, fan_out
from ovserve.service.engine import PromptImages
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.media import MediaPolicy
from ovserve.service.models import ModelRegistry, ServedModel
from ovserve.service.structured.output import Guide, check_compiles, compile_problem, output_constraint


@dataclass(frozen=True)
class ApiNames:
    """What differs between the APIs on the way to the engine: the names their requests use."""

    stream_rpc: str  # the streaming RPC, named when a unary call asks to stream
    length_fields: tuple[str, ...]  # the fields capping the output length, the first one set wins
    prompt_field: str  # the field the prompt comes from, named when it is too long (completions: prompts[i] too)


CHAT = ApiNames("StreamChatCompletion", ("max_completion_tokens", "max_tokens"), "messages")
COMPLETIONS = ApiNames("StreamCompletion", ("max_tokens",), "prompt")
RESPONSES = ApiNames("StreamResponse", ("max_output_tokens",), "input")


@dataclass(frozen=True)
class Prompt:
    """One prompt as the engine takes it, and the request field it comes from."""

    ids: list[int]
    field: str  # named when the prompt leaves no room for the output: messages, input, prompt, prompts[i]
    images: PromptImages | None = None  # a vision model's text prompt and images (its pipeline takes no ids)
    reasoning_opened: bool = False  # the chat template ended the prompt inside the reasoning block


@dataclass(frozen=True)
class PreparedRuns:
    """A validated chat or completions request, split into engine runs."""

    model: ServedModel
    runs: list[Run]  # one per prompt, or n per prompt for an assisted model (see runs.fan_out)
    n: int
    prompt_tokens: int
    ask: LogprobAsk  # the logprobs asked for (ovserve.service.api.logprobs)
    skip_special_tokens: bool
    include_usage: bool

    @property
    def logprobs(self) -> bool:
        """Whether the output tokens' logprobs are returned."""
        return self.ask.chosen


def begin(
    models: ModelRegistry, request: Any, api: ApiNames, *, streaming: bool
) -> tuple[ServedModel, list[FieldViolation]]:
    """The model ``request`` names (NOT_FOUND naming ``model``) and the first violations: its ``stream`` fields'."""
    violations = streaming_violations(request, streaming=streaming, rpc=api.stream_rpc)
    return models.get(request.model), violations


def refuse_invalid(request: Any, model: ServedModel, violations: list[FieldViolation], *, streaming: bool) -> None:
    """Raise INVALID_ARGUMENT naming every violation, the sampling fields' problems included (one round trip)."""
    violations += budget_violations(request, model)
    if violations:
        violations += generation_violations(request, limits=model.limits, streaming=streaming)
    InvalidArgument.check(violations)


async def templated_constraint(
    model: ServedModel,
    request: Any,
    violations: list[FieldViolation],
    tools: list[dict[str, Any]],
    context: dict[str, Any],
    **field_names: str,
) -> Guide | None:
    """The output constraint of a request the chat template renders: forced tool calls in the model's own
    markup, after its reasoning block when the template context lets it think. ``field_names``: how the
    request names its tool choice and parameters (see structured.output.output_plan)."""
    output = model.output_format
    asked = request.HasField("tool_guided_generation")  # else the served model's setting
    return await output_constraint(
        request, violations, tools=tools, thinking=bool(context.get("enable_thinking")),
        markup=output.call_markup, think=output.think_markup,
        guided=request.tool_guided_generation if asked else model.spec.tool_guided_generation, by_default=not asked,
        spellings=model.spellings,
        **field_names,
    )  # fmt: skip


async def render(
    model: ServedModel,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    context: dict[str, Any],
    field: str,
    prefill: Prefill = NO_PREFILL,
) -> list[int] | str:
    """The conversation by the model's chat template: its token ids, or its text for a vision model (whose
    pipeline takes text and images, never token ids). Checked and rendered as ``prompting.render_prompt``."""
    if model.vision is not None:
        return await render_text(model, messages, tools, context, field=field, prefill=prefill)
    return await render_prompt(model, messages, tools, context, field=field, prefill=prefill)


async def templated_prompt(
    model: ServedModel, rendered: list[int] | str, media: MediaParts, policy: MediaPolicy, field: str
) -> Prompt:
    """A ``render``ed conversation as the engine takes it: a vision model's text with its images loaded."""
    if isinstance(rendered, str):
        ids, images = await prompt_with_images(model, rendered, media, policy, field)
        return Prompt(ids, field, images, reasoning_opened=opens_reasoning(model, ids))
    return Prompt(rendered, field, reasoning_opened=opens_reasoning(model, rendered))


async def build_runs(
    model: ServedModel,
    request: Any,
    prompts: list[Prompt],
    plan: Guide | None,
    api: ApiNames,
    *,
    streaming: bool,
    ask: LogprobAsk,
    n: int = 1,
) -> list[Run]:
    """The engine runs of a validated request: its output constraint (``plan``) compiled by the model's grammar
    checker, then per prompt its sampling parameters and n choices numbered after the prompts before it.

    INVALID_ARGUMENT when the grammar engine refuses the constraint or a prompt leaves no room for the output.
    """
    # A constraint applies after the reasoning block the prompt left open (the templates of QwQ, DeepSeek-R1).
    opened = any(prompt.reasoning_opened for prompt in prompts)
    biased = lane_asked(request)
    salt = cache_salt(request)
    # A penalised prompt, kept apart from other tenants' on the lane (prefix_isolation.py)
    isolated = not biased and prefix_isolation.needs_lane(request, model, salt, streaming=streaming)
    if (biased or isolated) and plan is not None and plan.optional:
        plan = None  # default guidance of tool calls: a lane request's calls go unguided (the lane has no grammar)
    lane = lane_fields(request, model) if biased else None
    constraint = None if plan is None else plan.constraint(opened=opened)
    if plan is not None and plan.optional and await compile_problem(model, constraint) is not None:
        plan = constraint = None  # default guidance the grammar engine cannot run: the model's calls go unguided
    suspects = () if plan is None else plan.suspects  # custom tools' grammars, blamed for what they alone fail
    await check_compiles(model, constraint, suspects)
    field = next((name for name in api.length_fields if request.HasField(name)), api.length_fields[0])
    limit = getattr(request, field) if request.HasField(field) else None
    scoring = ask.scoring()
    # Without a length set, outputs carrying scores end where the request's bound on them would be passed.
    cap = None if limit is not None else output_cap(ask, [ScoredPrompt(len(p.ids), p.field, n, 0) for p in prompts])
    runs: list[Run] = []
    scored: list[ScoredPrompt] = []
    for position, prompt in enumerate(prompts):
        params = build_sampling_params(
            request, defaults=model.defaults, limits=model.limits,
            budget=Budget(field, limit, len(prompt.ids), prompt.field, least=0 if not ask.generate else 1, cap=cap),
            # the sampler's logprob of each chosen token, unless the scoring copy computes it anyway
            streaming=streaming, logprobs=1 if ask.chosen and not (scoring and scoring.output) else 0,
            constraint=constraint,
        )  # fmt: skip
        budget = run_budget(
            model, request, plan, opened=prompt.reasoning_opened, max_new_tokens=params.max_new_tokens or 0,
            vision=prompt.images is not None, biased=lane is not None or isolated,
        )  # fmt: skip
        vision = prompt.images is not None
        if lane is not None:
            params = with_lane(request, model, params, lane, vision=vision, budget=budget is not None)
        elif isolated:
            params = prefix_isolation.on_lane(request, model, params, vision=vision, budget=budget is not None)
        if budget is not None and budget.answer is not None and budget.answer != constraint:
            await check_compiles(model, budget.answer, suspects)  # phase 2's: the same format, without the block
        run = Run(
            prompt.ids, params, first_choice=position * n, images=prompt.images, scoring=scoring, budget=budget,
            cache_salt=salt,
        )  # fmt: skip
        runs += fan_out(run, n, model)
        scored.append(ScoredPrompt(len(prompt.ids), prompt.field, n, params.max_new_tokens or 0))
    # Before any of them is submitted: the answer's logprobs bounded per request (ovserve.service.api.logprobs)
    InvalidArgument.check(score_violations(ask, scored, field))
    return runs


def choice_count(request: Any) -> int:
    """The choices asked for per prompt: ``n``, 1 when not set."""
    return request.n if request.HasField("n") else 1


def skips_special_tokens(request: Any) -> bool:
    """Whether the output text leaves special tokens out (the default)."""
    return not request.HasField("skip_special_tokens") or request.skip_special_tokens


def includes_usage(request: Any, *, streaming: bool) -> bool:
    """Whether a stream ends with a usage chunk (``stream_options.include_usage``)."""
    return streaming and request.stream_options.include_usage
