"""Tool-guided generation by default, over a scripted engine: who turns it on or off, and that guidance nobody
asked for never fails a request (the served model's default, the request's tool_guided_generation, and what
happens when a tool cannot be guided or the grammar engine refuses the guide)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import grpc
import pytest

from ovserve.clients import field_violations
from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.models import ServedModel
from tests.fakes import FakeEngine, fake_model, scripted_server, text
from tests.rpc import parse

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def nested(depth: int) -> dict[str, Any]:
    """An object three properties wide, ``depth`` levels deep: twenty tools of depth 4 pass the grammar's limits."""
    if depth == 0:
        return {"type": "string"}
    return {"type": "object", "properties": {f"p{i}": nested(depth - 1) for i in range(3)}}


TOO_MANY = [{"type": "function", "function": {"name": f"tool_{i}", "parameters": nested(4)}} for i in range(20)]


def submitted(model: ServedModel, engine: FakeEngine, tools: list[dict[str, Any]], **fields: Any) -> Any:
    """The constraint the engine was given for a chat request with ``tools`` (tool_choice auto), and the reply."""

    async def main() -> Any:
        async with scripted_server(model) as channel:
            body = {"model": "fake", "messages": [{"role": "user", "content": "Hi"}], "tools": tools, **fields}
            request = parse(chat_pb2.CreateChatCompletionRequest, body)
            return await chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(request)

    engine.script(text("Sunny."))
    reply = asyncio.run(main())
    return engine.generations[-1].params.constraint, reply


def served(*, guided: bool = True) -> tuple[ServedModel, FakeEngine]:
    """The fake model, its tool-guided generation as served ``guided``; room for TOO_MANY's prompt."""
    engine = FakeEngine(max_model_len=1 << 20)
    model = fake_model(engine)
    return dataclasses.replace(model, spec=dataclasses.replace(model.spec, tool_guided_generation=guided)), engine


def test_calls_are_guided_by_default() -> None:
    model, engine = served()
    constraint, reply = submitted(model, engine, [WEATHER])
    assert reply.choices[0].message.content == "Sunny."
    assert constraint is not None and constraint.kind == "structural_tags_config"
    document = json.loads(constraint.value)["format"]
    assert document["type"] == "triggered_tags" and document["triggers"] == ["<tool_call>"]


@pytest.mark.parametrize(("served_guided", "asked", "guided"), [(True, False, False), (False, True, True),
                                                                 (False, None, False)])  # fmt: skip
def test_the_request_overrides_the_models_setting(served_guided: bool, asked: bool | None, guided: bool) -> None:
    model, engine = served(guided=served_guided)
    fields = {} if asked is None else {"tool_guided_generation": asked}
    constraint, _ = submitted(model, engine, [WEATHER], **fields)
    assert (constraint is not None) is guided


def test_tools_past_the_grammars_limits_go_unguided_unless_asked() -> None:
    """By default the request is served as it was before guidance existed; asked for, the limit is named."""
    model, engine = served()
    constraint, reply = submitted(model, engine, TOO_MANY)
    assert constraint is None and reply.choices[0].message.content == "Sunny."
    with pytest.raises(grpc.RpcError) as raised:
        submitted(model, engine, TOO_MANY, tool_guided_generation=True)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in field_violations(raised.value)] == [
        "tools[17].function.parameters.properties.p0.properties.p0.properties"
    ]


def test_a_guide_the_grammar_engine_refuses_goes_unguided_unless_asked() -> None:
    model, engine = served()
    engine.grammar_refusal = "the compiler gave up"
    constraint, reply = submitted(model, engine, [WEATHER])
    assert constraint is None and reply.choices[0].message.content == "Sunny."
    with pytest.raises(grpc.RpcError) as raised:
        submitted(model, engine, [WEATHER], tool_guided_generation=True)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [(field, "the compiler gave up" in why) for field, why in field_violations(raised.value)] == [
        ("tool_choice", True)
    ]
