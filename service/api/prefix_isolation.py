"""Prompts the prefix cache cannot keep apart: a repetition penalty's, decoded on the biased lane instead.

With API keys (or a ``cache_salt``) a prompt reaches the pipeline's prefix cache in a namespace of its own
(ovserve.service.engine.salting): its token ids are salted. openvino-genai's repetition penalty reads the prompt's
ids as vocabulary indices and fails the engine step on a salted one, and the cache's hash reads exactly the ids the
penalty reads, so a penalised prompt cannot be salted. Sent to the pipeline raw, it would reuse and leave blocks
that any other key's penalised prompt reuses: the timing channel isolation closes. Such a request therefore
decodes on the biased lane (ovserve.service.engine.biased_lane), the model's scoring copy, which caches nothing
across requests: isolated, at the lane's cost (docs/api/parameters.md). What the lane cannot run (output
constraints, beam search, images, a reasoning budget) is refused naming ``repetition_penalty``; a model's prompt
lookup is left out there, which changes how fast it decodes, not what.

A model whose own defaults set a penalty (Qwen2.5's 1.05) serves API keys with prefix caching off instead
(engine.py), so its requests stay batched on the pipeline; this module then finds nothing to do for them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ovserve.service.api.generation import sampled_value
from ovserve.service.api.logit_bias import lane_refusals
from ovserve.service.engine import SamplingParams
from ovserve.service.engine.salting import penalised
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.models import ServedModel
from ovserve.service.store import tenancy


def needs_lane(request: Any, model: ServedModel, cache_salt: str, *, streaming: bool) -> bool:
    """Whether the request's prompt would reach a prefix cache kept in namespaces, in one of its own, with a
    repetition penalty (its own or the model's default) that keeps its ids raw: it must decode on the biased lane."""
    penalty = sampled_value(
        request, "repetition_penalty", defaults=model.defaults, limits=model.limits, streaming=streaming
    )
    return penalised(penalty) and model.engine.keeps_apart(tenancy.tenant.get(), cache_salt)


def on_lane(request: Any, model: ServedModel, params: SamplingParams, *, vision: bool, budget: bool) -> SamplingParams:
    """``params`` decoded on the biased lane; INVALID_ARGUMENT naming repetition_penalty when the request also asks
    for something the lane does not run."""
    asked = "repetition_penalty" in request.DESCRIPTOR.fields_by_name and request.HasField("repetition_penalty")
    whose = "" if asked else f" (the model's default {params.repetition_penalty:g})"
    InvalidArgument.check(
        [
            FieldViolation(
                "repetition_penalty",
                f"a repetition penalty{whose} keeps the prompt out of this server's per-key prefix caches, so the "
                f"request decodes on the biased lane, which is not served with {why}; send repetition_penalty 1",
            )
            for why in lane_refusals(model, params, vision=vision, budget=budget, unassisted=True)
        ]
    )
    return dataclasses.replace(params, isolated=True)
