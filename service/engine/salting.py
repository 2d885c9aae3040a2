"""Prefix-cache isolation: each tenant's prompts get token ids of their own, so cached blocks are never shared.

openvino-genai 2026.4 keys a cached KV block by a hash of the prompt's token ids alone (``Sequence::get_hash``:
the block's ids and the hash of the blocks before it). Any request whose prompt starts like a cached one reuses
its blocks, whoever sent it, and its first token comes sooner: one API key could time its first tokens to learn
whether another key's prompt began with a given text (the class of CVE-2025-46570; vLLM added ``cache_salt``).

The pipeline offers no salt, so the salt goes into the ids themselves: a request in namespace k sends its prompt
as ``id + k * 2**32``. The pipeline hashes the 64-bit ids, so every namespace's blocks differ from every other's;
the CPU plugin reads ``input_ids`` as 32-bit integers (it keeps no 64-bit integers), so the model computes
exactly what it computes for the raw ids. That last fact is the plugin's, not a promise of OpenVINO's: each
pipeline is checked at load (``salt_holds``: a probe's output with salted ids must equal its output with raw
ids), and one that fails serves with prefix caching off. Output ids are sampled over the vocabulary as ever, so
only the prompt carries the salt. A namespace is a keyed hash of who sent the request (the API key's tenant),
its ``cache_salt`` and its LoRA adapter; namespace 0 (raw ids) is the single tenant's with no salt.

One sampler transform reads the prompt's ids as vocabulary indices: the repetition penalty (openvino-genai's
``RepetitionPenaltyTransform`` asserts ``prompt_id < vocab_size`` and fails the whole engine step), and the hash
reads exactly the ids the penalty reads, so no id can carry a salt past it. A penalised prompt therefore never
reaches a pipeline that caches prefixes in namespaces (``penalised``): in a namespace other than 0 it decodes on
the biased lane, which caches nothing (ovserve.service.api.prefix_isolation), and a model whose own defaults set a
penalty (Qwen2.5's 1.05: every request that keeps it) serves API keys with prefix caching off (engine.py).
``salted_prompt`` keeps such a prompt's ids raw all the same, so a stray one cannot fail the step.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: A namespace's ids are the raw ids plus namespace x STRIDE: above every 32-bit id, below 2**62 for 2**30 spaces.
STRIDE = 1 << 32
NAMESPACES = 1 << 30
#: The secret namespaces are derived with, one per server process: a client can neither compute another
#: tenant's namespace nor search for a cache_salt that lands in it.
_SECRET = secrets.token_bytes(32)


def takes_token_ids(model_dir: Path) -> bool:
    """Whether the model's pipeline takes prompts as token ids, which can be salted (a vision model's takes text)."""
    return (model_dir / "openvino_model.xml").is_file()


def namespace(tenant: str, cache_salt: str, adapter: str, *, isolated: bool) -> int:
    """The prefix-cache namespace of a request: 0 (raw ids) for the one tenant with no salt and no adapter, else a
    keyed hash of (tenant, cache_salt, adapter) in ``1 .. NAMESPACES - 1``.

    ``isolated`` False (--shared-prefix-cache): API keys share; a cache_salt and an adapter still get their own.
    """
    owner = tenant if isolated else ""
    if not (owner or cache_salt or adapter):
        return 0
    message = b"\0".join(part.encode() for part in (owner, cache_salt, adapter))
    digest = int.from_bytes(hmac.new(_SECRET, message, hashlib.sha256).digest()[:8], "little")
    return 1 + digest % (NAMESPACES - 1)


def penalised(repetition_penalty: float | None) -> bool:
    """Whether a request with this repetition penalty (None: the engine's, 1) has its prompt ids read by the
    sampler's penalty, which a salted id would fail."""
    return repetition_penalty is not None and repetition_penalty != 1.0


def salted_prompt(ids: list[int], space: int, repetition_penalty: float | None) -> np.ndarray:
    """The prompt as the pipeline takes it in namespace ``space``: a 1 x length int64 array.

    Raw ids when ``space`` is 0, or when the request has a repetition penalty (its transform reads prompt ids as
    vocabulary indices and fails the whole engine step on a salted one).
    """
    prompt = np.array([ids], dtype=np.int64)
    if space and not penalised(repetition_penalty):
        prompt += np.int64(space) * np.int64(STRIDE)
    return prompt


#: The probe: a few ids every vocabulary has, the tokens after them greedy, with their logprobs.
PROBE_IDS = [1, 2, 3, 5, 8, 13, 21, 34]
PROBE_TOKENS = 4
PROBE_SPACE = NAMESPACES - 1


def salt_holds(pipeline: Any) -> bool:
    """Whether ``pipeline`` (a ContinuousBatchingPipeline) computes the same for salted ids as for raw ones: the
    probe's greedy tokens equal, their logprobs within 1e-4."""
    import openvino as ov
    import openvino_genai as ov_genai

    config = ov_genai.GenerationConfig()
    config.max_new_tokens = PROBE_TOKENS
    config.ignore_eos = True
    config.logprobs = 1
    prompts = [salted_prompt(PROBE_IDS, space, None) for space in (0, PROBE_SPACE)]
    try:
        raw, salted = pipeline.generate([ov.Tensor(prompt) for prompt in prompts], [config, config])
    except Exception as error:  # a plugin that checks its input ids' range
        log.warning("salted token ids fail on this pipeline: %s", error)
        return False
    # The pipeline's metrics still count the probe's two requests until it steps again, and an idle pipeline does
    # not step: the engine's stats would show them running for ever (an unload drains until they end).
    pipeline.step()
    same = raw.m_generation_ids == salted.m_generation_ids and np.allclose(raw.m_scores, salted.m_scores, atol=1e-4)
    return bool(same)
