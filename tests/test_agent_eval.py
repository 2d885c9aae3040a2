"""The held-out scorer's tool-guided replies (tools/model_builder/agent_eval.py), on the bundled tiny-chat.

Issue 47's bar is scored with the service's default tool-guided generation on: the scorer must guide as the service
does, with the service's own plan. tiny-chat was trained on a weather tool whose argument is ``city``; offered one
whose argument is ``town``, it writes ``city`` alone and ``town`` under the guide.
"""

from __future__ import annotations

import json
from typing import Any

import openvino_genai as ov_genai

from tests.conftest import TINY_CHAT
from tools.model_builder import agent_eval


def _weather(param: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {param: {"type": "string"}}, "required": [param]}
    return {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {**schema, "additionalProperties": False}},
    }


def _arguments(reply: str) -> dict[str, Any]:
    calls = agent_eval.CALL.findall(reply)
    assert calls, reply
    return dict(json.loads(calls[0])["arguments"])


def test_guided_replies_call_with_the_offered_parameter_and_unguided_ones_do_not() -> None:
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    case = agent_eval.Case("tool_chosen", ask, [_weather("town")], {"call": "get_weather", "arguments": {}})
    unguided = agent_eval.replies_openvino(TINY_CHAT, [case])[0]
    guided = agent_eval.replies_openvino(TINY_CHAT, [case], guided=True)[0]
    assert list(_arguments(unguided)) == ["city"], unguided
    assert list(_arguments(guided)) == ["town"], guided


def test_the_guide_is_the_services_triggered_tag_per_offered_tool() -> None:
    tokenizer = ov_genai.LLMPipeline(str(TINY_CHAT), "CPU").get_tokenizer()
    config = agent_eval.tool_guide([_weather("town")], tokenizer.chat_template, tokenizer)
    assert config is not None and config.structural_tags_config is not None
    document = json.loads(config.structural_tags_config)["format"]
    assert document["type"] == "triggered_tags" and document["triggers"] == ["<tool_call>"]
    assert [tag["begin"] for tag in document["tags"]] == ['<tool_call>\n{"name": "get_weather", "arguments": ']
