"""The default precision, chosen by measurement (ovserve.service.engine.precision; issue 51): f32 for compressed
weights on a CPU that would compute in bf16 under --optimize-for decode, OpenVINO's default otherwise."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.engine import EngineSettings
from ovserve.service.engine.cpu_features import cpu_flags
from ovserve.service.engine.precision import BF16_FLAGS, default_precision, weights_compressed
from ovserve.service.models import ModelSpec
from ovserve.service.sources import resolve
from tests.conftest import TINY_CHAT, start_server
from tests.rpc import parse
from tests.sources.checkpoints import gguf_file

AMX = frozenset({"avx512f", "amx_bf16", "amx_int8"})
EPYC = frozenset({"avx512f", "avx512_bf16"})  # AVX-512 BF16 without AMX
AVX2 = frozenset({"avx2", "avx_vnni"})


@pytest.fixture(scope="module")
def int8_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny-chat with int8 weights: its Q8_0 GGUF, converted as a user's would be."""
    root = tmp_path_factory.mktemp("int8")
    directory, provenance = resolve(str(gguf_file(root / "q8.gguf", "Q8_0")), cache_dir=root / "cache")
    assert provenance.precision == "int8"
    return Path(directory)


def test_compressed_weights_are_told_from_float_ones(int8_model: Path, tmp_path: Path) -> None:
    assert weights_compressed(int8_model)
    assert not weights_compressed(TINY_CHAT)  # fp16 weights
    assert not weights_compressed(tmp_path)  # no IR at all


@pytest.mark.parametrize(
    ("flags", "optimize_for", "compressed", "expected"),
    [
        (AMX, "decode", True, "f32"),
        (EPYC, "decode", True, "f32"),
        (AMX, "prefill", True, None),  # OpenVINO's bf16
        (AMX, "decode", False, None),  # fp16 weights: bf16 halves what is read
        (AVX2, "decode", True, None),  # f32 is OpenVINO's default there already
        (frozenset(), "decode", True, None),  # flags unknown: nothing changes
    ],
)
def test_the_rule(
    flags: frozenset[str], optimize_for: str, compressed: bool, expected: str | None, int8_model: Path
) -> None:
    model = int8_model if compressed else TINY_CHAT
    assert default_precision("CPU", model, optimize_for, flags) == expected
    assert default_precision("GPU", model, optimize_for, flags) is None


def test_a_given_precision_is_kept(int8_model: Path) -> None:
    assert EngineSettings(inference_precision="bf16").for_model(int8_model).inference_precision == "bf16"
    assert EngineSettings(optimize_for="prefill").for_model(int8_model).inference_precision is None


def _greedy_logprobs(model: Path, settings: EngineSettings) -> tuple[str | None, list[float]]:
    """The engine's chosen precision and a greedy answer's logprobs, served with ``settings``."""
    server = start_server([ModelSpec("m", model, settings=settings)])
    try:
        [served] = list(server.server.registry)
        body = {"model": "m", "messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 12,
                "temperature": 0, "logprobs": True, "ignore_eos": True}  # fmt: skip
        with grpc.insecure_channel(server.target) as channel:
            reply = chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
                parse(chat_pb2.CreateChatCompletionRequest, body)
            )
        return served.engine.settings.inference_precision, [item.logprob for item in reply.choices[0].logprobs.content]
    finally:
        server.stop()


def test_the_default_is_what_the_pipeline_computes_in(int8_model: Path) -> None:
    """Served with no precision, an int8 model computes as the rule says for this CPU: on one with bf16, its
    logprobs are f32's to the last digit and not bf16's (the measurement can tell them apart); elsewhere f32 is
    OpenVINO's own default, and the two servers agree all the same."""
    base = EngineSettings(max_num_seqs=8)
    chosen, default = _greedy_logprobs(int8_model, base)
    assert chosen == default_precision("CPU", int8_model, "decode")
    _, f32 = _greedy_logprobs(int8_model, dataclasses.replace(base, inference_precision="f32"))
    assert default == pytest.approx(f32, abs=1e-6)
    if (cpu_flags() or frozenset()) & BF16_FLAGS:
        _, bf16 = _greedy_logprobs(int8_model, dataclasses.replace(base, inference_precision="bf16"))
        assert default != pytest.approx(bf16, abs=1e-6)
