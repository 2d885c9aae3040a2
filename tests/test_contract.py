"""The ovserve.v1 contract as Python sees it: generated stubs, descriptors and OpenAI JSON."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.api import annotations_pb2
from google.protobuf import descriptor_pool, json_format
from google.protobuf.descriptor import FieldDescriptor, MethodDescriptor

import ovserve.clients.v1

ROOT = Path(__file__).resolve().parents[1]

# service -> {rpc: server-streaming?}: the whole v1 API; a unary and a streaming RPC for each generation API.
EXPECTED_RPCS = {
    "ovserve.v1.CompletionService": {"CreateCompletion": False, "StreamCompletion": True},
    "ovserve.v1.ChatService": {
        "CreateChatCompletion": False,
        "StreamChatCompletion": True,
        "GetChatCompletion": False,
        "ListChatCompletions": False,
        "ListChatCompletionMessages": False,
        "UpdateChatCompletion": False,
        "DeleteChatCompletion": False,
    },
    "ovserve.v1.ResponseService": {
        "CreateResponse": False,
        "StreamResponse": True,
        "GetResponse": False,
        "DeleteResponse": False,
        "CancelResponse": False,
        "ListResponseInputItems": False,
        "CountResponseInputTokens": False,
        "CompactResponse": False,
        "ResumeResponseStream": True,
    },
    "ovserve.v1.ConversationService": {
        "CreateConversation": False,
        "GetConversation": False,
        "UpdateConversation": False,
        "DeleteConversation": False,
        "ListConversationItems": False,
        "CreateConversationItems": False,
        "GetConversationItem": False,
        "DeleteConversationItem": False,
    },
    "ovserve.v1.ModelService": {
        "ListModels": False,
        "GetModel": False,
        "LoadLoraAdapter": False,
        "UnloadLoraAdapter": False,
        "LoadModel": True,
        "UnloadModel": False,
        "ReloadConfig": False,
    },
    "ovserve.v1.TokenizerService": {"Tokenize": False, "Detokenize": False},
    "ovserve.v1.FileService": {
        "CreateFile": False,
        "GetFile": False,
        "ListFiles": False,
        "DeleteFile": False,
        "GetFileContent": True,
    },
    "ovserve.v1.BatchService": {"CreateBatch": False, "GetBatch": False, "ListBatches": False, "CancelBatch": False},
    "ovserve.v1.ImageService": {
        "CreateImage": False,
        "StreamImage": True,
        "CreateImageEdit": False,
        "StreamImageEdit": True,
    },
    "ovserve.v1.SpeechService": {"CreateSpeech": False, "StreamSpeech": True},
}
# The one client-streaming RPC: an upload's bytes arrive in chunks.
CLIENT_STREAMING = {"CreateFile"}

# Unary and streaming twins must take field-identical requests: the service
# treats them alike and the bridge fills either from the same OpenAI body.
REQUEST_TWINS = [
    ("CreateCompletionRequest", "StreamCompletionRequest"),
    ("CreateChatCompletionRequest", "StreamChatCompletionRequest"),
    ("CreateResponseRequest", "StreamResponseRequest"),
]

# Twins of the other APIs (images...): field-identical too, without sampling fields.
MEDIA_TWINS = [
    ("CreateImageRequest", "StreamImageRequest"),
    ("CreateImageEditRequest", "StreamImageEditRequest"),
    ("CreateSpeechRequest", "StreamSpeechRequest"),
]

# Fields whose proto3 zero is not OpenAI's default, so presence must be tracked.
SAMPLING_FIELDS = {
    "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty",
    "presence_penalty", "seed", "n", "best_of", "length_penalty", "diversity_penalty",
    "max_tokens", "max_completion_tokens", "max_output_tokens", "ignore_eos",
    "include_stop_str_in_output", "skip_special_tokens", "num_assistant_tokens",
    "assistant_confidence_threshold", "max_ngram_size", "logprobs", "top_logprobs", "echo",
}  # fmt: skip

# Parameters every completions and chat request must carry: the sampling fields they share, plus the
# request-level ones (model, stream, stop and its typed alternative, stream_options, user, metadata).
COMMON_FIELDS = SAMPLING_FIELDS - {"max_completion_tokens", "max_output_tokens", "top_logprobs", "echo"} | {
    "model", "stream", "stop", "stop_sequences", "stream_options", "user", "metadata",
}  # fmt: skip

EVENT_TYPES = {
    "created", "in_progress", "output_item_added", "output_item_done", "content_part_added",
    "content_part_done", "output_text_delta", "output_text_done", "reasoning_summary_part_added",
    "reasoning_summary_part_done", "reasoning_summary_text_delta", "reasoning_summary_text_done",
    "function_call_arguments_delta", "function_call_arguments_done", "completed", "incomplete",
    "failed", "error",
}  # fmt: skip

POOL = descriptor_pool.Default()


def _generated_modules() -> list[str]:
    return [f"ovserve.clients.v1.{m.name}" for m in pkgutil.iter_modules(ovserve.clients.v1.__path__)]


def message(name: str):
    """Descriptor of an ovserve.v1 message, after importing every generated module."""
    for module in _generated_modules():
        importlib.import_module(module)
    return POOL.FindMessageTypeByName(f"ovserve.v1.{name}")


def message_class(name: str):
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(message(name))


def test_generated_modules_import() -> None:
    modules = _generated_modules()
    assert {m.rsplit(".", 1)[1] for m in modules} >= {
        f"{f}{s}" for f in ("common", "completion", "chat", "response", "response_events", "model") for s in ("_pb2",)
    }
    for module in modules:
        importlib.import_module(module)


@pytest.mark.parametrize("service", sorted(EXPECTED_RPCS))
def test_service_exposes_every_rpc(service: str) -> None:
    message("Model")  # load the pool
    desc = POOL.FindServiceByName(service)
    actual = {m.name: m.server_streaming for m in desc.methods}
    assert actual == EXPECTED_RPCS[service]
    for method in desc.methods:
        assert method.client_streaming == (method.name in CLIENT_STREAMING)
        assert method.input_type.name == f"{method.name}Request"
        assert method.output_type.name == f"{method.name}Response"


@pytest.mark.parametrize("service", sorted(EXPECTED_RPCS))
def test_generated_stub_and_servicer_exist(service: str) -> None:
    short = service.rsplit(".", 1)[1]
    module = next(
        importlib.import_module(m) for m in _generated_modules()
        if m.endswith("_pb2_grpc") and hasattr(importlib.import_module(m), f"{short}Stub")
    )  # fmt: skip
    servicer = getattr(module, f"{short}Servicer")
    for rpc in EXPECTED_RPCS[service]:
        assert callable(getattr(servicer, rpc))
    assert callable(getattr(module, f"add_{short}Servicer_to_server"))


def _http_rule(method: MethodDescriptor):
    options = method.GetOptions()
    assert options.HasExtension(annotations_pb2.http), f"{method.full_name} has no google.api.http"
    return options.Extensions[annotations_pb2.http]


def test_every_rpc_has_an_http_annotation_under_v3() -> None:
    message("Model")
    seen = set()
    for service in EXPECTED_RPCS:
        for method in POOL.FindServiceByName(service).methods:
            rule = _http_rule(method)
            path = getattr(rule, rule.WhichOneof("pattern"))
            assert path.startswith("/v3/"), (method.full_name, path)
            key = (rule.WhichOneof("pattern"), path)
            assert key not in seen, f"two RPCs share {key}"
            seen.add(key)


@pytest.mark.parametrize(("unary", "streaming"), REQUEST_TWINS + MEDIA_TWINS)
def test_stream_request_twins_are_field_identical(unary: str, streaming: str) -> None:
    def type_of(f: FieldDescriptor) -> object:
        if f.message_type is None:
            return f.type
        if f.message_type.GetOptions().map_entry:  # each message has its own XEntry type
            key, value = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            return ("map", type_of(key), type_of(value))
        return f.message_type.full_name

    def shape(name: str) -> list[tuple]:
        return [(f.name, f.number, f.is_repeated, f.has_presence, type_of(f)) for f in message(name).fields]

    assert shape(unary) == shape(streaming)


@pytest.mark.parametrize("name", [pair[0] for pair in REQUEST_TWINS])
def test_sampling_fields_track_presence(name: str) -> None:
    fields = {f.name: f for f in message(name).fields}
    present = SAMPLING_FIELDS & fields.keys()
    assert len(present) >= 3, f"{name} carries almost no sampling fields"
    for field_name in present:
        field: FieldDescriptor = fields[field_name]
        assert field.has_presence, f"{name}.{field_name} must be optional"


@pytest.mark.parametrize("name", ["CreateCompletionRequest", "CreateChatCompletionRequest"])
def test_common_parameters_present(name: str) -> None:
    fields = {f.name for f in message(name).fields}
    assert fields >= COMMON_FIELDS, sorted(COMMON_FIELDS - fields)


def test_response_stream_event_covers_every_event_type() -> None:
    event = message("ResponseStreamEvent")
    assert "sequence_number" in event.fields_by_name
    oneof = event.oneofs_by_name["event"]
    names = {f.name for f in oneof.fields}
    assert names >= EVENT_TYPES, sorted(EVENT_TYPES - names)
    for response_type in ("StreamResponseResponse", "ResumeResponseStreamResponse"):
        assert message(response_type).fields_by_name["event"].message_type is event


@pytest.mark.parametrize(
    ("enum", "values"),
    [
        ("FinishReason", {"stop", "length", "tool_calls"}),
        ("ResponseStatus", {"queued", "in_progress", "completed", "incomplete", "failed", "cancelled"}),
    ],
)
def test_enums_have_unspecified_zero_and_openai_values(enum: str, values: set[str]) -> None:
    message("Model")
    desc = POOL.FindEnumTypeByName(f"ovserve.v1.{enum}")
    prefix = "".join("_" + c if c.isupper() else c for c in enum).lstrip("_").upper() + "_"
    assert desc.values_by_number[0].name == f"{prefix}UNSPECIFIED"
    assert {v.name.removeprefix(prefix).lower() for v in desc.values} >= values


# Real OpenAI request bodies (the simple forms) parse as-is into the proto: what
# a grpcurl or `buf curl` user types is what the OpenAI docs show.
OPENAI_BODIES = {
    "CreateChatCompletionRequest": {
        "model": "tiny-chat",
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "hi"},
            # the typed alternative of OpenAI's list-valued content
            {"role": "user", "content_parts": [{"type": "text", "text": "hi"},
                                               {"type": "image_url", "image_url": {"url": "data:,AA"}}]},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "call_1", "type": "function",
                             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
        "max_tokens": 16, "max_completion_tokens": 16, "temperature": 0.7, "top_p": 0.9, "stop": "\n",
        "stream": True, "stream_options": {"include_usage": True}, "seed": 7, "n": 1, "logprobs": True,
        "top_logprobs": 2, "user": "u1", "metadata": {"k": "v"}, "parallel_tool_calls": False,
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "x", "strict": True, "schema": {"type": "object"}}},
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                                                    "parameters": {"type": "object"}}}],
        "tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "low",
        "top_k": 5, "min_p": 0.1, "repetition_penalty": 1.1, "ignore_eos": False,
        "include_stop_str_in_output": False, "skip_special_tokens": True,
    },
    "CreateCompletionRequest": {
        "model": "tiny-chat", "prompt": "Once upon a time", "suffix": "", "echo": True, "logprobs": 2,
        "max_tokens": 8, "best_of": 2, "n": 1, "stop": "\n", "frequency_penalty": 0.5,
        "presence_penalty": 0.5, "length_penalty": 1.0, "diversity_penalty": 0.0,
        "num_assistant_tokens": 3, "max_ngram_size": 2, "assistant_confidence_threshold": 0.4,
    },
    "CreateResponseRequest": {
        "model": "tiny-chat", "input": "Tell me a story", "instructions": "Be brief.",
        "previous_response_id": "resp_1", "store": True, "background": False, "max_output_tokens": 32,
        "temperature": 0.5, "top_p": 0.9, "truncation": "auto", "metadata": {"a": "b"},
        "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "medium", "summary": "auto"},
        "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}, "strict": True}},
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        "tool_choice": "required", "parallel_tool_calls": True,
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(OPENAI_BODIES))
def test_openai_json_parses_into_request(name: str) -> None:
    body = OPENAI_BODIES[name]
    request = json_format.ParseDict(body, message_class(name)())
    assert request.model == "tiny-chat"
    roundtrip = json_format.MessageToDict(request, preserving_proto_field_name=True)
    # Every top-level OpenAI key survives (None-valued keys aside).
    assert {k for k, v in body.items() if v is not None} <= roundtrip.keys() | {
        k for k, v in body.items() if v in (False, 0, "", 0.0)
    }


def test_responses_input_items_parse_from_openai_json() -> None:
    body = {
        "model": "tiny-chat",
        "input": None,
        "input_items": [
            {"type": "message", "role": "user", "content_parts": [
                {"type": "input_text", "text": "What is the weather?"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA"}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
        ],
    }  # fmt: skip
    body.pop("input")
    request = json_format.ParseDict(body, message_class("CreateResponseRequest")())
    assert [item.type for item in request.input_items] == [
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
    ]


def test_stubs_are_current() -> None:
    """Regenerating clients/v1 from proto/ changes nothing (CI fails otherwise)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "generate_stubs.py"), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
