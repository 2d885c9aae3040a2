"""OpenAI's ``logit_bias`` and vLLM's ``bad_words``: checked, and as the engine's biased lane takes them.

openvino-genai has no hook on the logits, so a request with either decodes on the biased lane
(service/engine/biased_lane.py). ``{}`` and ``[]`` are no-ops: such a request stays on the pipeline. What the lane
does not run (the grammar engine's output constraints, beam search, a draft model, LoRA adapters, images, a
reasoning budget) is refused naming the field, with the reason.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ovserve.service.engine import SamplingParams
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.models import ServedModel

#: Entries of a logit_bias map (OpenAI's document sets no bound; the lane's cost does not grow with it, the
#: request's size does).
MAX_LOGIT_BIAS = 300
BIAS_RANGE = 100.0  # OpenAI's: -100..100
MAX_BAD_WORDS = 64
MAX_BAD_WORD_CHARS = 100


def lane_asked(request: Any) -> bool:
    """Whether the request has a logit bias or bad words (fields chat and completions have, Responses has not)."""
    names = request.DESCRIPTOR.fields_by_name
    return any(name in names and len(getattr(request, name)) > 0 for name in ("logit_bias", "bad_words"))


def _named(request: Any) -> str:
    """The field a refusal names: logit_bias when set, else bad_words."""
    return "logit_bias" if len(request.logit_bias) else "bad_words"


def lane_fields(request: Any, model: ServedModel) -> tuple[tuple[tuple[int, float], ...], tuple[tuple[int, ...], ...]]:
    """The request's bias as (token id, value) pairs and its bad words as token sequences; INVALID_ARGUMENT naming
    every entry out of bounds."""
    violations: list[FieldViolation] = []
    vocab = model.limits.vocab_size
    bias: list[tuple[int, float]] = []
    if len(request.logit_bias) > MAX_LOGIT_BIAS:
        violations.append(
            FieldViolation("logit_bias", f"at most {MAX_LOGIT_BIAS} entries; got {len(request.logit_bias)}")
        )
    for key, value in sorted(request.logit_bias.items()):
        where = f"logit_bias[{key!r}]"
        if not (key.isascii() and key.isdigit()) or (vocab and int(key) >= vocab):
            upper = f" (0 to {vocab - 1})" if vocab else ""
            violations.append(FieldViolation(where, f"keys are token ids of {model.limits.name!r}{upper}; got {key!r}"))
        elif not (math.isfinite(value) and -BIAS_RANGE <= value <= BIAS_RANGE):
            violations.append(FieldViolation(where, f"must be between -100 and 100; got {value}"))
        else:
            bias.append((int(key), value))
    words = list(request.bad_words)
    if len(words) > MAX_BAD_WORDS:
        violations.append(FieldViolation("bad_words", f"at most {MAX_BAD_WORDS} words; got {len(words)}"))
    for index, word in enumerate(words):
        if not word.strip():
            violations.append(FieldViolation(f"bad_words[{index}]", "a bad word must not be empty"))
        elif len(word) > MAX_BAD_WORD_CHARS:
            violations.append(
                FieldViolation(f"bad_words[{index}]", f"at most {MAX_BAD_WORD_CHARS} characters; got {len(word)}")
            )
    InvalidArgument.check(violations)
    return tuple(bias), bad_word_tokens(model, words)


def bad_word_tokens(model: ServedModel, words: list[str]) -> tuple[tuple[int, ...], ...]:
    """Each word's token sequences as vLLM finds them: the word as written (leading spaces dropped), and with one
    leading space where that makes a different first token of the same length (a word in mid-sentence)."""
    forms: list[tuple[int, ...]] = []
    for word in words:
        bare = tuple(model.engine.encode(word.lstrip(), add_special_tokens=False))
        if bare:
            forms.append(bare)
        spaced = tuple(model.engine.encode(" " + word.lstrip(), add_special_tokens=False))
        if spaced and (not bare or (spaced[0] != bare[0] and len(spaced) == len(bare))):
            forms.append(spaced)
    return tuple(dict.fromkeys(forms))


# What the lane does not run: (does this request have it, why it is refused).
_UNSERVED: tuple[tuple[str, str], ...] = (
    ("constraint", "output constraints (response_format, guided_*, grammar, forced tool calls) run in the engine's "
     "grammar, which the biased lane has not"),
    ("beam_search", "beam search (best_of > 1) is the pipeline's; the biased lane samples or decodes greedily"),
    ("assisted", "the model is served with speculative decoding or prompt lookup, which the biased lane has not"),
    ("adapter", "LoRA adapters run in the pipeline only; the biased lane decodes the base model"),
    ("vision", "images go through the vision pipeline only"),
    ("budget", "a reasoning budget (thinking_token_budget, reasoning.max_tokens) is the pipeline's"),
)  # fmt: skip


def lane_refusals(
    model: ServedModel, params: SamplingParams, *, vision: bool, budget: bool, unassisted: bool = False
) -> list[str]:
    """Why the biased lane cannot run a request with ``params`` (empty: it can). ``unassisted``: the request may
    decode without the model's prompt lookup or draft (they change how fast it decodes, not what)."""
    has = {
        "constraint": params.constraint is not None,
        "beam_search": (params.num_beams or 1) > 1,
        "assisted": model.limits.assisted and not unassisted,
        "adapter": bool(model.adapter),
        "vision": vision,
        "budget": budget,
    }
    return [why for what, why in _UNSERVED if has[what]]


def with_lane(
    request: Any,
    model: ServedModel,
    params: SamplingParams,
    fields: tuple[tuple[tuple[int, float], ...], tuple[tuple[int, ...], ...]],
    *,
    vision: bool,
    budget: bool,
) -> SamplingParams:
    """``params`` with the request's bias and bad words; INVALID_ARGUMENT naming the field when the request also
    asks for something the lane does not run."""
    refusals = lane_refusals(model, params, vision=vision, budget=budget)
    InvalidArgument.check([FieldViolation(_named(request), f"not served with {why}") for why in refusals])
    bias, bad_words = fields
    return dataclasses.replace(params, logit_bias=bias, bad_words=bad_words)
