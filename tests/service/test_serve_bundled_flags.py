"""``ovserve serve`` with per-model flags naming the bundled models it serves (issue 45: they exited with "no
model named 'tiny-chat'"): a real serve, its models listed over gRPC show the flags took effect."""

from __future__ import annotations

import signal

import grpc

from clients.v1 import model_pb2, model_pb2_grpc
from service.models import BUNDLED_MODELS_DIR
from tests.conftest import SERVED_BY_DEFAULT
from tests.rest_bridge.test_cli import ovserve, read_until

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
