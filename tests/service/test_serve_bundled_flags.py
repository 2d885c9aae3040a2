"""``ovserve serve`` with per-model flags naming the bundled models it serves (issue 45: they exited with "no
model named 'tiny-chat'"): a real serve, its models listed over gRPC show the flags took effect."""

from __future__ import annotations

import signal
from pathlib import Path

import grpc

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, model_pb2, model_pb2_grpc
from ovserve.service.models import BUNDLED_MODELS_DIR
from tests.conftest import SERVED_BY_DEFAULT
from tests.rest_bridge.test_cli import ovserve, read_until
from tests.rpc import parse

CAPITALS = BUNDLED_MODELS_DIR / "tiny-chat-capitals"  # the bundled LoRA adapter of tiny-chat


def test_per_model_flags_naming_bundled_models_take_effect_in_a_real_serve() -> None:
    argv = ["serve", "--port", "0", "--no-rest", "--cache-size-gb", "1", "--tool-parser", "tiny-chat=llama3_json",
            "--lora", f"caps=tiny-chat:{CAPITALS}"]  # fmt: skip
    with ovserve(*argv) as process:
        lines: list[str] = []
        port = int(read_until(process, r"gRPC listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        read_until(process, r"serving tiny-chat", lines)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            listed = model_pb2_grpc.ModelServiceStub(channel).ListModels(model_pb2.ListModelsRequest(), timeout=30)
        models = {model.id: model for model in listed.data}
        assert [name for name in models if name != "caps"] == SERVED_BY_DEFAULT  # every bundled model, as ever
        assert models["tiny-chat"].tool_parser == "llama3_json"  # the flag's, not the template's
        assert models["tiny-chat-speculative"].tool_parser == "hermes"  # the template's: only tiny-chat was named
        assert models["caps"].parent == "tiny-chat"  # the adapter on the bundled model
        assert models["caps"].root == str(CAPITALS / "adapter_model.safetensors")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_one_inference_thread_at_the_default_precision_serves_on_any_cpu() -> None:
    """OpenVINO 2026.4 dies of SIGFPE compiling a model in bf16 on one inference thread of a CPU with AMX (issue
    45; reproduced on this project's Intel Xeon with AMX): ``ovserve serve`` computes in f32 there, with a warning,
    and serves; on another CPU the default precision compiles as it is. Either way the model answers."""
    model = BUNDLED_MODELS_DIR / "tiny-chat"
    argv = ["serve", "--port", "0", "--no-rest", "--cache-size-gb", "1", "--model", f"one={model}",
            "--inference-threads", "1"]  # fmt: skip
    with ovserve(*argv) as process:
        lines: list[str] = []
        port = int(read_until(process, r"gRPC listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        read_until(process, r"serving one", lines)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            request = parse(chat_pb2.CreateChatCompletionRequest, {
                "model": "one", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
            })  # fmt: skip
            reply = chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(request, timeout=60)
        assert reply.usage.completion_tokens > 0
        amx = "amx_bf16" in Path("/proc/cpuinfo").read_text()
        assert amx == any("computes in f32" in line for line in lines)  # the warning exactly where it applies
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
