"""Request fields -> the engine's ``SamplingParams``: one rules table, one validation pass.

The completions, chat and Responses requests share their sampling fields (same
names, see proto/ovserve/v1), so one table serves all three. Every violation is
collected, not only the first, so a client fixes its request in one round trip.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovserve.service.engine import OutputConstraint, SamplingParams
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.models import ModelLimits

MAX_STOP_STRINGS = 16
MAX_STOP_TOKEN_IDS = 64  # vLLM sets no bound; each id is one more check per sampled token in the engine
MAX_SEED = 2**32 - 1
DEFAULT_NUM_ASSISTANT_TOKENS = 5  # OVMS's fallback when neither request nor model sets one


@dataclass(frozen=True)
class Rule:
    """One optional request field: its valid range, and the SamplingParams field it sets."""

    field: str
    target: str
    valid: Callable[[Any], bool]
    requirement: str
    convert: Callable[[Any], Any] = lambda value: value


def _finite(value: float) -> bool:
    return math.isfinite(value)


# The engine keeps every sampling float as a 32-bit float: a double below float32's smallest normal number
# becomes 0 or a denormal there (temperature 5e-324 turns 0 after do_sample is set, and the engine fails the
# request; temperature or repetition_penalty 1e-40 samples garbage, measured with openvino-genai 2026.4), and
# one above float32's largest becomes infinity. So a float field must be 0 or of a magnitude float32 keeps.
FLOAT32_TINY = 1.1754943508222875e-38  # numpy.finfo(numpy.float32).tiny
FLOAT32_MAX = 3.4028234663852886e38  # numpy.finfo(numpy.float32).max


def _engine_float(value: float) -> bool:
    """Whether the engine's float32 holds ``value`` as a normal number (or exactly 0)."""
    return value == 0.0 or FLOAT32_TINY <= abs(value) <= FLOAT32_MAX


# Request field -> SamplingParams field. NaN fails every comparison, so
# the range checks refuse it too.
RULES: tuple[Rule, ...] = (
    Rule("temperature", "temperature", lambda v: 0.0 <= v <= 2.0, "must be between 0 and 2"),
    Rule("top_p", "top_p", lambda v: 0.0 < v <= 1.0, "must be greater than 0 and at most 1"),
    Rule("top_k", "top_k", lambda v: v == -1 or v >= 1, "must be -1 (all tokens) or at least 1"),
    Rule("min_p", "min_p", lambda v: 0.0 <= v < 1.0, "must be at least 0 and less than 1"),
    Rule("repetition_penalty", "repetition_penalty", lambda v: _finite(v) and v > 0.0, "must be greater than 0"),
    Rule("frequency_penalty", "frequency_penalty", lambda v: -2.0 <= v <= 2.0, "must be between -2 and 2"),
    Rule("presence_penalty", "presence_penalty", lambda v: -2.0 <= v <= 2.0, "must be between -2 and 2"),
    Rule("seed", "seed", lambda v: 0 <= v <= MAX_SEED, f"must be between 0 and {MAX_SEED}"),
    Rule("length_penalty", "length_penalty", _finite, "must be a finite number"),
    Rule("diversity_penalty", "diversity_penalty", lambda v: _finite(v) and v >= 0.0, "must be at least 0"),
    Rule("num_assistant_tokens", "num_assistant_tokens", lambda v: 1 <= v <= 64, "must be between 1 and 64"),
    Rule(
        "assistant_confidence_threshold",
        "assistant_confidence_threshold",
        lambda v: 0.0 < v < 1.0,
        "must be greater than 0 and less than 1",
    ),
    Rule("max_ngram_size", "max_ngram_size", lambda v: 1 <= v <= 64, "must be between 1 and 64"),
    Rule("ignore_eos", "ignore_eos", lambda v: True, ""),
    Rule("include_stop_str_in_output", "include_stop_str_in_output", lambda v: True, ""),
)


@dataclass(frozen=True)
class Budget:
    """Which request field caps the output length, and the prompt it must fit beside."""

    field: str  # max_tokens | max_completion_tokens | max_output_tokens
    value: int | None
    prompt_tokens: int
    prompt_field: str  # prompt | messages | input
    least: int = 1  # the smallest value allowed (0: completions scoring a prompt with echo, nothing generated)
    cap: int | None = None  # the most output tokens when ``value`` is not set (the answer's logprobs: output_cap)


def build_sampling_params(
    request: Any,
    *,
    defaults: SamplingParams,
    limits: ModelLimits,
    budget: Budget,
    streaming: bool,
    logprobs: int = 0,
    constraint: OutputConstraint | None = None,
) -> SamplingParams:
    """Validate ``request``'s sampling fields and return the engine's parameters for it.

    ``defaults``: the model's own (its generation_config.json). Raises
    InvalidArgument naming every offending field. ``logprobs`` is the number
    of logprobs per token the caller has already validated (0 or 1);
    ``constraint`` the output constraint the caller has already validated
    (see ovserve.service.structured.output).
    """
    settings, violations = _settings(request, defaults, limits, streaming)
    violations += _length_rules(budget, settings, limits)
    violations += _min_tokens_room(settings, budget)
    settings["logprobs"] = logprobs
    settings["constraint"] = constraint
    InvalidArgument.check(violations)
    settings["stop_strings"] = frozenset(settings.get("stop_strings", ()))
    return SamplingParams(**settings)


def sampled_value(request: Any, name: str, *, defaults: SamplingParams, limits: ModelLimits, streaming: bool) -> Any:
    """What ``request`` samples with for the SamplingParams field ``name``, as build_sampling_params decides it
    (its own value, the model's default, or what beam search sets; None: the engine's own). Its violations are
    build_sampling_params' to report."""
    return _settings(request, defaults, limits, streaming)[0].get(name)


def generation_violations(request: Any, *, limits: ModelLimits, streaming: bool) -> list[FieldViolation]:
    """What is wrong with the sampling fields alone, to report beside a request's other errors."""
    return _settings(request, SamplingParams(), limits, streaming)[1]


def _settings(
    request: Any, defaults: SamplingParams, limits: ModelLimits, streaming: bool
) -> tuple[dict[str, Any], list[FieldViolation]]:
    violations: list[FieldViolation] = []
    settings: dict[str, Any] = defaults.settings()
    for rule in RULES:
        if not request.HasField(rule.field):
            continue
        value = getattr(request, rule.field)
        if isinstance(value, float) and not _engine_float(value):  # every double field; the rule's range too
            requirement = f"{rule.requirement}, and 0 or of a magnitude from {FLOAT32_TINY:.2g} to {FLOAT32_MAX:.2g}"
            violations.append(
                FieldViolation(rule.field, f"{requirement} (the engine computes in 32-bit floats); got {value}")
            )
        elif rule.valid(value):
            settings[rule.target] = rule.convert(value)
        else:
            violations.append(FieldViolation(rule.field, f"{rule.requirement}; got {value}"))
    if settings.get("top_k") == -1:
        del settings["top_k"]  # the engine's default is all tokens

    if request.HasField("temperature"):
        settings["do_sample"] = request.temperature > 0.0
    if settings.get("do_sample") and not request.HasField("seed"):
        # The engine's default seed is a constant: without this every unseeded
        # request would draw the same "random" sample.
        settings["seed"] = secrets.randbelow(MAX_SEED + 1)
    violations += _stop_rules(request, settings)
    violations += _token_rules(request, settings, limits)
    violations += _choice_rules(request, settings, limits)
    violations += _speculative_rules(request, settings, limits)
    return settings, violations


def _stop_rules(request: Any, settings: dict[str, Any]) -> list[FieldViolation]:
    violations = []
    if request.HasField("stop"):
        if len(request.stop_sequences):
            violations.append(FieldViolation("stop", "set either stop or stop_sequences, not both"))
        elif not request.stop:
            violations.append(FieldViolation("stop", "a stop string must not be empty"))
        stops = [request.stop]
    else:
        stops = list(request.stop_sequences)
        if len(stops) > MAX_STOP_STRINGS:
            violations.append(
                FieldViolation("stop_sequences", f"at most {MAX_STOP_STRINGS} stop strings; got {len(stops)}")
            )
        for index, stop in enumerate(stops):
            if not stop:
                violations.append(FieldViolation(f"stop_sequences[{index}]", "a stop string must not be empty"))
    if any(stops):
        settings["stop_strings"] = {stop for stop in stops if stop}
    return violations


def _token_rules(request: Any, settings: dict[str, Any], limits: ModelLimits) -> list[FieldViolation]:
    """vLLM's ``min_tokens`` and ``stop_token_ids`` (GenerationConfig's min_new_tokens and stop_token_ids)."""
    violations = []
    if request.HasField("min_tokens"):
        if request.min_tokens < 0:
            violations.append(FieldViolation("min_tokens", f"must be at least 0; got {request.min_tokens}"))
        elif request.min_tokens:
            settings["min_new_tokens"] = request.min_tokens
    ids = list(request.stop_token_ids)
    if len(ids) > MAX_STOP_TOKEN_IDS:
        violations.append(FieldViolation("stop_token_ids", f"at most {MAX_STOP_TOKEN_IDS} token ids; got {len(ids)}"))
    vocab = limits.vocab_size
    for index, token in enumerate(ids):
        if token < 0 or (vocab and token >= vocab):
            upper = f" (0 to {vocab - 1})" if vocab else ""
            violations.append(
                FieldViolation(f"stop_token_ids[{index}]", f"{token} is not a token id of {limits.name!r}{upper}")
            )
    if ids:  # besides the model's own (its generation_config.json's), as vLLM adds them to EOS
        settings["stop_token_ids"] = frozenset(settings.get("stop_token_ids", frozenset())) | frozenset(ids)
    return violations


def _min_tokens_room(settings: dict[str, Any], budget: Budget) -> list[FieldViolation]:
    """``min_tokens`` within the output's length (vLLM refuses min_tokens > max_tokens too)."""
    least, most = settings.get("min_new_tokens"), settings.get("max_new_tokens")
    if least is None or most is None or least <= most:
        return []
    limit = f"{budget.field} ({most})" if budget.value is not None else f"the room the prompt leaves ({most} tokens)"
    return [FieldViolation("min_tokens", f"must be at most {limit}; got {least}")]


# Sampling penalties the engine's beam search refuses, with the value that means "off".
_BEAM_SEARCH_INCOMPATIBLE = {"repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}


def _choice_rules(request: Any, settings: dict[str, Any], limits: ModelLimits) -> list[FieldViolation]:
    n = request.n if request.HasField("n") else 1
    best_of = request.best_of if request.HasField("best_of") else None
    violations = []
    if n < 1 or n > 16:
        violations.append(FieldViolation("n", f"must be between 1 and 16; got {n}"))
    if best_of is not None:
        if best_of < 1 or best_of > 16:
            violations.append(FieldViolation("best_of", f"must be between 1 and 16; got {best_of}"))
        elif best_of < n:
            violations.append(FieldViolation("best_of", f"must be at least n ({n}); got {best_of}"))
    beam_search = best_of is not None and best_of > 1
    if beam_search:
        if limits.assisted:
            violations.append(
                FieldViolation("best_of", f"model {limits.name!r} runs speculative decoding, which has no beam search")
            )
        if request.HasField("temperature") and request.temperature > 0.0:
            violations.append(
                FieldViolation("temperature", "best_of > 1 selects beam search, which does not sample; use 0")
            )
        for field, off in _BEAM_SEARCH_INCOMPATIBLE.items():
            if request.HasField(field) and getattr(request, field) != off:
                violations.append(FieldViolation(field, f"not supported with beam search (best_of > 1); use {off}"))
        if settings.get("stop_strings"):
            # openvino-genai 2026.4.1's beam search with stop strings fails the engine step (taking
            # every request in the batch with it) or ignores the stop: measured on tiny-chat.
            field = "stop" if request.HasField("stop") else "stop_sequences"
            violations.append(FieldViolation(field, "stop strings are not supported with beam search (best_of > 1)"))
        settings.update(do_sample=False, num_beams=best_of, num_return_sequences=n)
        settings.update({field: off for field, off in _BEAM_SEARCH_INCOMPATIBLE.items()})
        if request.HasField("diversity_penalty"):
            settings["num_beam_groups"] = best_of  # diverse (group) beam search: one beam per group
    elif n > 1 and (settings.get("do_sample") or not request.HasField("temperature")):
        # (n > 1 with greedy asked for, temperature 0, is not here: n choices, each the greedy answer, as OpenAI
        # gives them; the engine returns several sequences only when it samples, so runs.fan_out makes n requests.)
        if not settings.get("do_sample"):
            # The model decodes greedily by default, but n choices at default settings sample, as OpenAI's
            # do (temperature 1 unless the model's generation_config.json names one).
            settings["do_sample"] = True
            settings.setdefault("seed", secrets.randbelow(MAX_SEED + 1))
        # An assisted pipeline generates one sequence per request: the API
        # layer runs n requests instead (see runs.fan_out).
        if not limits.assisted:
            settings["num_return_sequences"] = n
    if request.HasField("diversity_penalty") and not beam_search:
        violations.append(FieldViolation("diversity_penalty", "applies to beam search only (best_of > 1)"))
    return violations


def _speculative_rules(request: Any, settings: dict[str, Any], limits: ModelLimits) -> list[FieldViolation]:
    violations = []
    has_tokens = request.HasField("num_assistant_tokens")
    has_threshold = request.HasField("assistant_confidence_threshold")
    if has_tokens and has_threshold:
        violations.append(
            FieldViolation(
                "assistant_confidence_threshold", "set either num_assistant_tokens or assistant_confidence_threshold"
            )
        )
    assisted = limits.assisted
    for field, allowed in (
        ("num_assistant_tokens", assisted),
        ("assistant_confidence_threshold", limits.has_draft_model),
        ("max_ngram_size", limits.prompt_lookup),
    ):
        if request.HasField(field) and not allowed:
            kind = "prompt lookup" if field == "max_ngram_size" else "a draft model"
            violations.append(FieldViolation(field, f"model {limits.name!r} is not served with {kind}"))
    if not assisted:
        settings.pop("num_assistant_tokens", None)
        settings.pop("assistant_confidence_threshold", None)
    elif has_threshold:
        settings["num_assistant_tokens"] = 0  # the threshold decides instead
    elif not settings.get("num_assistant_tokens") and not settings.get("assistant_confidence_threshold"):
        settings["num_assistant_tokens"] = DEFAULT_NUM_ASSISTANT_TOKENS
    if limits.prompt_lookup and not settings.get("max_ngram_size"):
        settings["max_ngram_size"] = 3
    return violations


def _length_rules(budget: Budget, settings: dict[str, Any], limits: ModelLimits) -> list[FieldViolation]:
    room = limits.max_model_len - budget.prompt_tokens
    if room <= 0:
        return [
            FieldViolation(
                budget.prompt_field,
                f"the prompt is {budget.prompt_tokens} tokens; model {limits.name!r} allows "
                f"{limits.max_model_len} tokens in all, prompt and output",
            )
        ]
    if budget.value is None:
        settings["max_new_tokens"] = min(settings.get("max_new_tokens", room), room, budget.cap or room)
        return []
    if budget.value < budget.least:
        return [FieldViolation(budget.field, f"must be at least {budget.least}; got {budget.value}")]
    if budget.value > room:
        return [
            FieldViolation(
                budget.field,
                f"the prompt ({budget.prompt_tokens} tokens) plus {budget.field} ({budget.value}) exceeds "
                f"model {limits.name!r}'s maximum length of {limits.max_model_len} tokens",
            )
        ]
    settings["max_new_tokens"] = budget.value
    return []
