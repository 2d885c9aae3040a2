"""Prefix-cache namespaces (ovserve.service.engine.salting): who shares cached prompt blocks, and that a salted
prompt computes what the raw one does on the real pipeline. The side channel itself is measured from outside in
tests/rest_bridge/test_prefix_isolation.py."""

from __future__ import annotations

import grpc
import numpy as np
import openvino as ov
import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.engine.salting import NAMESPACES, STRIDE, namespace, salt_holds, salted_prompt
from tests.conftest import TINY_CHAT
from tests.rpc import failure, parse


def test_one_tenant_without_salt_keeps_raw_ids() -> None:
    assert namespace("", "", "", isolated=True) == 0
    assert namespace("tenant-a", "", "", isolated=False) == 0  # --shared-prefix-cache: keys share


def test_namespaces_part_tenants_salts_and_adapters() -> None:
    spaces = {
        namespace(tenant, salt, adapter, isolated=True)
        for tenant in ("", "tenant-a", "tenant-b")
        for salt in ("", "blue", "green")
        for adapter in ("", "lora-1")
    }
    assert len(spaces) == 18  # 3 x 3 x 2, one of them 0 (no tenant, salt or adapter)
    assert all(0 <= space < NAMESPACES for space in spaces)
    assert namespace("tenant-a", "blue", "", isolated=True) == namespace("tenant-a", "blue", "", isolated=True)
    # Parts are kept apart: ("ab", "") is not ("a", "b").
    assert namespace("ab", "", "", isolated=True) != namespace("a", "b", "", isolated=True)
    # Shared: the salt still separates, the tenant no longer does.
    assert namespace("tenant-a", "blue", "", isolated=False) == namespace("tenant-b", "blue", "", isolated=False)


def test_a_salted_prompt_moves_every_id_by_whole_strides_unless_penalised() -> None:
    ids = [0, 7, 2047]
    salted = salted_prompt(ids, 5, None)
    assert salted.dtype == np.int64 and salted.shape == (1, 3)
    assert (salted[0] % STRIDE).tolist() == ids and (salted[0] // STRIDE).tolist() == [5, 5, 5]
    assert salted_prompt(ids, NAMESPACES - 1, 1.0).max() < 2**62
    assert salted_prompt(ids, 5, 1.3).tolist() == [ids]  # a repetition penalty reads prompt ids as indices
    assert salted_prompt(ids, 0, None).tolist() == [ids]


@pytest.fixture(scope="module")
def pipeline() -> ov_genai.ContinuousBatchingPipeline:
    scheduler = ov_genai.SchedulerConfig()
    scheduler.cache_size = 1
    scheduler.enable_prefix_caching = True
    return ov_genai.ContinuousBatchingPipeline(str(TINY_CHAT), scheduler, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def test_salted_ids_compute_what_raw_ids_do(pipeline: ov_genai.ContinuousBatchingPipeline) -> None:
    assert salt_holds(pipeline)
    assert pipeline.get_metrics().requests == 0  # the probe leaves no request counted (an unload would wait on it)
    config = ov_genai.GenerationConfig()
    config.max_new_tokens = 12
    config.logprobs = 1
    prompt = list(range(100, 400))  # longer than a KV block: cached blocks in play
    spaces = [0, 1, NAMESPACES - 1, 12345, 0]
    results = pipeline.generate([ov.Tensor(salted_prompt(prompt, space, None)) for space in spaces], [config] * 5)
    outputs = [result.m_generation_ids for result in results]
    assert all(output == outputs[0] for output in outputs)
    scores = [result.m_scores for result in results]
    np.testing.assert_allclose(scores, [scores[0]] * 5, atol=1e-4)


def test_a_cache_salt_out_of_bounds_is_refused_over_grpc(chat: chat_pb2_grpc.ChatServiceStub) -> None:
    request = parse(
        chat_pb2.CreateChatCompletionRequest,
        {"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "cache_salt": "s" * 300},
    )
    with pytest.raises(grpc.RpcError) as raised:
        chat.CreateChatCompletion(request)
    refused = failure(raised.value)
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "cache_salt" in refused.fields
