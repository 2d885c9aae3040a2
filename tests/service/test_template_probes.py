# ruff: noqa: RUF001 (DeepSeek's markup is written with fullwidth bars)
"""The load-time probes of a chat template: which engine renders it and the message form it wants.

Published templates (tests/data/chat_templates, SOURCES.md) rendered with tiny-chat's tokenizer: one that writes
a call only for ``content: null`` (DeepSeek-R1-Distill), ones that fail on null content (QwQ, Devstral), ones minja
cannot render with tools (``tojson(ensure_ascii=False)``: MiniCPM5, MiniMax-M2), one whose calls minja rewrites
in its own JSON (DeepSeek V3.2); a template that loops; and two of them served end to end by a real server.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, model_pb2, model_pb2_grpc, tokenizer_pb2, tokenizer_pb2_grpc
from ovserve.service.api.prompting import template_messages
from ovserve.service.engine import chat_template
from ovserve.service.engine.chat_template import ChatTemplate, TemplateError, TemplateRenderer, minja_render
from ovserve.service.engine.template_probe import JINJA2, MINJA, TOOLS, MessageForm
from ovserve.service.models import ModelSpec
from ovserve.service.parsing import OutputFormat
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
R1_DISTILL = "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"
ENSURE_ASCII = ["openbmb-MiniCPM5-1B.jinja", "MiniMax-M2.jinja"]
ARGUMENTS = {"city": "Lyon", "days": 2}
# A conversation as chat completions reads a client's: the call turn's content null, its arguments an object.
CALLED = [
    {"role": "user", "content": "Weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "abc123XYZ", "type": "function", "function": {"name": "get_weather", "arguments": ARGUMENTS}}
        ],
    },
    {"role": "tool", "tool_call_id": "abc123XYZ", "content": "Rain."},
]
FUNCTIONGEMMA = "vllm-functiongemma.jinja"  # describes the tools only inside a system message
KIMI_AUDIO = "vllm-kimi-audio.jinja"  # reads `conversations`, not `messages`: renders nothing for a chat
# Writes turns with additional_special_tokens: its .tokenizer_config.json beside it has stand-ins for them.
GIGACHAT_20B = "llama-cpp-tests-GigaChat-20B-A3B-instruct.jinja"
R1_CALL = '<｜tool▁sep｜>get_weather\n```json\n{"city": "Lyon", "days": 2}\n```<｜tool▁call▁end｜>'


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(TINY_CHAT))


def renderer_of(tokenizer: ov_genai.Tokenizer, name: str, model_dir: Path | None = None) -> TemplateRenderer:
    return TemplateRenderer(tokenizer, ChatTemplate((TEMPLATES / name).read_text(encoding="utf-8"), name), model_dir)


def prompt(renderer: TemplateRenderer, history: list[dict[str, Any]], form: MessageForm | None = None) -> str:
    """``history`` as the server renders it, its messages in ``form`` (default: the one the probes chose)."""
    model: Any = SimpleNamespace(engine=SimpleNamespace(message_form=form or renderer.message_form))
    model.output_format = OutputFormat()  # no tool parser: ids and calls as the client sends them
    return renderer.render(template_messages(model, history), TOOLS, {})


def test_a_template_that_writes_calls_only_for_null_content_keeps_them(tokenizer: ov_genai.Tokenizer) -> None:
    """DeepSeek-R1-Distill writes a call only ``if message['content'] is none`` and concatenates its arguments."""
    renderer = renderer_of(tokenizer, R1_DISTILL)
    assert renderer.message_form == MessageForm(null_call_content=True, text_arguments=True)
    assert R1_CALL in prompt(renderer, CALLED)
    # A client that sends "" beside its calls gets the same prompt.
    empty = [CALLED[0], {**CALLED[1], "content": ""}, CALLED[2]]
    assert prompt(renderer, empty) == prompt(renderer, CALLED)
    # What the server gave this template before the probes ("" for null): the call silently gone.
    assert "Lyon" not in prompt(renderer, CALLED, MessageForm())
    # Arguments left an object: minja writes a Python dict's text, which the model never writes.
    assert "{'city': 'Lyon', 'days': 2}" in prompt(renderer, CALLED, MessageForm(null_call_content=True))


@pytest.mark.parametrize("name", ["Qwen-QwQ-32B.jinja", "unsloth-mistral-Devstral-Small-2507.jinja"])
def test_a_template_that_fails_on_null_content_gets_an_empty_string(tokenizer: ov_genai.Tokenizer, name: str) -> None:
    renderer = renderer_of(tokenizer, name)
    form = renderer.message_form
    assert (form.null_call_content, form.text_arguments) == (False, False)
    assert '"city": "Lyon"' in prompt(renderer, CALLED)
    with pytest.raises(TemplateError, match="null"):  # QwQ splits the content, Devstral indexes it
        prompt(renderer, CALLED, MessageForm(null_call_content=True))


@pytest.mark.parametrize("name", ENSURE_ASCII)
@pytest.mark.parametrize("in_helper", [False, True], ids=["in-server", "in-helper"])
def test_templates_minja_cannot_render_with_tools_are_rendered_with_jinja2(
    tokenizer: ov_genai.Tokenizer, name: str, in_helper: bool
) -> None:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    minja_render(tokenizer, text, [{"role": "user", "content": "x"}], None, {}, True)  # minja renders a plain turn
    with pytest.raises(RuntimeError, match="Unknown argument ensure_ascii for function tojson"):
        minja_render(tokenizer, text, [{"role": "user", "content": "x"}], TOOLS, {}, True)
    renderer = renderer_of(tokenizer, name, TINY_CHAT if in_helper else None)
    try:
        assert renderer.engine == JINJA2
        assert "ensure_ascii" in renderer.engine_reason and "tools probe" in renderer.engine_reason
        rendered = prompt(renderer, CALLED)
        assert "Forecast for a city." in rendered and "Lyon" in rendered and "Rain." in rendered
    finally:
        renderer.close()


def test_a_family_call_minja_would_rewrite_is_rendered_with_jinja2(tokenizer: ov_genai.Tokenizer) -> None:
    """minja takes DeepSeek V3.2's template for one that cannot write calls and writes its own JSON of them
    (dropping the reasoning too); Jinja2 writes the family's DSML markup."""
    name = "deepseek-ai-DeepSeek-V3.2.jinja"
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    as_minja = minja_render(tokenizer, text, [dict(m) for m in CALLED], TOOLS, {}, True)
    assert '"tool_calls"' in as_minja and "DSML｜invoke" not in as_minja.split("<｜User｜>")[-1]
    renderer = renderer_of(tokenizer, name)
    assert renderer.engine == JINJA2 and "rewrites" in renderer.engine_reason
    assert '<｜DSML｜invoke name="get_weather">' in prompt(renderer, CALLED).split("<｜User｜>")[-1]


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja"])
def test_templates_minja_renders_as_jinja2_stay_with_minja(tokenizer: ov_genai.Tokenizer, name: str) -> None:
    renderer = renderer_of(tokenizer, name)
    assert (renderer.engine, renderer.engine_reason) == (
        MINJA,
        "minja renders the probes as Jinja2 does, whitespace aside",
    )
    assert renderer.message_form == MessageForm()


def test_a_template_that_drops_calls_keeps_minjas_json_of_them(tokenizer: ov_genai.Tokenizer) -> None:
    """Phi-4-mini's template writes no call: minja's JSON of it (llama.cpp's generic form) loses less."""
    renderer = renderer_of(tokenizer, "microsoft-Phi-4-mini-instruct.jinja")
    assert renderer.engine == MINJA
    assert '{"city":"Lyon","days":2}' in "".join(prompt(renderer, CALLED).split())


def test_the_message_form_leaves_other_messages_as_they_are() -> None:
    form = MessageForm(null_call_content=True, text_arguments=True)
    assert form.apply({"role": "assistant", "content": None}) == {"role": "assistant", "content": ""}
    call = {"role": "assistant", "content": "Sure.", "tool_calls": CALLED[1]["tool_calls"]}
    applied = form.apply(call)
    assert applied["content"] == "Sure." and applied["tool_calls"][0]["function"]["arguments"] == json.dumps(ARGUMENTS)
    assert call["tool_calls"][0]["function"]["arguments"] == ARGUMENTS  # the client's message is not changed


# A past turn's reasoning as clients send it back (reasoning_content), in a call turn and in a reply.
THOUGHT = "The sky looks grey over Lyon"
REASONED_CALL = [CALLED[0], {**CALLED[1], "reasoning_content": THOUGHT}, CALLED[2]]
REASONED_REPLY = [CALLED[0], {"role": "assistant", "content": "Take a coat.", "reasoning_content": THOUGHT}]
GPT_OSS = "openai-gpt-oss-120b.jinja"


def rendered(renderer: TemplateRenderer, history: list[dict[str, Any]], context: dict[str, Any]) -> str:
    model: Any = SimpleNamespace(engine=SimpleNamespace(message_form=renderer.message_form))
    model.output_format = OutputFormat()
    return renderer.render(template_messages(model, history), TOOLS, context, add_generation_prompt=False)


CHUNK = "thinking chunk"  # where Mistral's templates read it: content [{"type": "thinking", ...}, {"type": "text"...}]


@pytest.mark.parametrize(
    ("name", "where", "history", "context"),
    [
        (GPT_OSS, "thinking", REASONED_CALL, {}),  # gpt-oss writes a call's analysis, drops a reply's
        ("genai-openbmb-MiniCPM3-4B.jinja", "thought", REASONED_REPLY, {}),
        ("genai-openbmb-MiniCPM3-4B.jinja", "thought", REASONED_CALL, {}),
        ("unsloth-Apriel-1.5.jinja", "thought", REASONED_REPLY, {"add_thoughts": True}),  # its switch for them
        ("LFM2.5-8B-A1B.jinja", "thinking", REASONED_CALL, {}),
        ("upstage-Solar-Open-100B.jinja", "reasoning", REASONED_CALL, {}),
        ("mistralai-Ministral-3-14B-Reasoning-2512.jinja", CHUNK, REASONED_REPLY, {}),
        ("mistralai-Ministral-3-14B-Reasoning-2512.jinja", CHUNK, REASONED_CALL, {}),
        ("Qwen-Qwen3-0.6B.jinja", "reasoning_content", REASONED_CALL, {}),
        ("poolside-Laguna-S-2.1.jinja", "reasoning_content", REASONED_REPLY, {}),  # reads either name
    ],
)
def test_past_reasoning_reaches_the_template_where_it_reads_it(
    tokenizer: ov_genai.Tokenizer, name: str, where: str, history: list[dict[str, Any]], context: dict[str, Any]
) -> None:
    """Clients send reasoning_content; gpt-oss's and LFM2.5's templates read ``thinking``, MiniCPM3's and Apriel
    1.5's ``thought``, Solar Open's ``reasoning``, Ministral 3's a thinking chunk of the content: the probes find
    where by rendering, and the reasoning is passed there too."""
    renderer = renderer_of(tokenizer, name)
    form = renderer.message_form
    assert (CHUNK if form.reasoning_chunk else form.reasoning_key) == where
    assert THOUGHT in rendered(renderer, history, context)
    if where != "reasoning_content":  # under the API's name alone (before), the template never saw it
        model: Any = SimpleNamespace(engine=SimpleNamespace(message_form=MessageForm()))
        model.output_format = OutputFormat()
        before = renderer.render(template_messages(model, history), TOOLS, context, add_generation_prompt=False)
        assert THOUGHT not in before


def test_a_template_that_writes_messages_as_json_reads_no_reasoning(tokenizer: ov_genai.Tokenizer) -> None:
    """A template that writes a content list as JSON shows a thinking chunk's text quoted: not evidence that it
    reads one (LFM2.5-Instruct writes a non-string content so)."""
    dump = "{% for m in messages %}{{ m.content | tojson }}{% endfor %}"
    renderer = TemplateRenderer(tokenizer, ChatTemplate(dump, "dump"))
    assert (renderer.message_form.reasoning_key, renderer.message_form.reasoning_chunk) == ("reasoning_content", False)


def test_gpt_oss_gets_a_call_turns_content_and_reasoning_as_one_analysis(tokenizer: ov_genai.Tokenizer) -> None:
    """gpt-oss's template raises on a call turn with both content and thinking; the probes find that it does
    (and renders either alone), and the two reach it joined, reasoning first, as the call's analysis."""
    renderer = renderer_of(tokenizer, GPT_OSS)
    assert renderer.message_form.reasoning_beside_content is False
    both = [CALLED[0], {**REASONED_CALL[1], "content": "Let me check."}, CALLED[2]]
    text = rendered(renderer, both, {})
    assert f"<|channel|>analysis<|message|>{THOUGHT}\n\nLet me check.<|end|>" in text
    assert '"city": "Lyon"' in text or '"city":"Lyon"' in text
    beside = replace(renderer.message_form, reasoning_beside_content=True)
    with pytest.raises(TemplateError, match="Cannot pass both content and thinking"):
        prompt(renderer, both, beside)
    # Templates that take both keep them apart (Qwen3 writes the reasoning block and the content).
    assert renderer_of(tokenizer, "Qwen-Qwen3-0.6B.jinja").message_form.reasoning_beside_content is True


def test_the_message_form_passes_reasoning_under_its_key_too() -> None:
    form = MessageForm(reasoning_key="thought", reasoning_beside_content=False)
    reply = {"role": "assistant", "content": "Take a coat.", "reasoning_content": THOUGHT}
    assert form.apply(reply) == {**reply, "thought": THOUGHT}  # a reply keeps both: only call turns are joined
    call = {**REASONED_CALL[1], "content": "Let me check."}
    joined = f"{THOUGHT}\n\nLet me check."
    assert form.apply(call) == {**call, "content": "", "reasoning_content": joined, "thought": joined}
    assert call["content"] == "Let me check."  # the client's message is not changed
    assert MessageForm().apply({"role": "assistant", "content": "Hi"}) == {"role": "assistant", "content": "Hi"}
    chunked = MessageForm(reasoning_chunk=True).apply(reply)
    assert chunked["content"] == [{"type": "thinking", "thinking": THOUGHT}, {"type": "text", "text": "Take a coat."}]
    call_only = MessageForm(reasoning_chunk=True).apply(REASONED_CALL[1])
    assert call_only["content"] == [{"type": "thinking", "thinking": THOUGHT}]  # no empty text chunk


LOOPING = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ messages[0]['content'] }}"


def test_a_template_that_loops_is_bounded(tokenizer: ov_genai.Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes run in the helper process and are given up past PROBE_TIMEOUT_S; the template is then rendered
    only there, each render refused past RENDER_TIMEOUT_S (the server's threads never run it)."""
    monkeypatch.setattr(chat_template, "PROBE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(chat_template, "RENDER_TIMEOUT_S", 1.0)
    renderer = TemplateRenderer(tokenizer, ChatTemplate(LOOPING, "looping"), TINY_CHAT)
    try:
        assert renderer.engine == MINJA and renderer.engine_reason.startswith("the probes did not finish")
        with pytest.raises(TemplateError, match="longer than 1 s"):
            renderer.render([{"role": "user", "content": "Hi"}], None, {})
    finally:
        renderer.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """tiny-chat copies whose chat_template.jinja is DeepSeek-R1-Distill's, MiniCPM5's, gpt-oss's, MiniCPM3's,
    vLLM's FunctionGemma's and Kimi-Audio's, GigaChat-20B's (with its tokenizer_config.json's special tokens) and
    Cogito's, on a real server."""
    specs = []
    copies = (("r1-distill", R1_DISTILL), ("minicpm5", ENSURE_ASCII[0]), ("gpt-oss", GPT_OSS),
              ("minicpm3", "genai-openbmb-MiniCPM3-4B.jinja"), ("functiongemma", FUNCTIONGEMMA),
              ("kimi-audio", KIMI_AUDIO), ("gigachat-20b", GIGACHAT_20B),
              ("cogito", "ollama-cogito-14b.jinja"))  # fmt: skip
    for name, template in copies:
        copy = tmp_path_factory.mktemp(name) / "model"
        shutil.copytree(TINY_CHAT, copy)
        shutil.copy(TEMPLATES / template, copy / "chat_template.jinja")
        if (extra := (TEMPLATES / template).with_suffix(".tokenizer_config.json")).is_file():  # GigaChat-20B's tokens
            config = json.loads((copy / "tokenizer_config.json").read_text())
            (copy / "tokenizer_config.json").write_text(json.dumps({**config, **json.loads(extra.read_text())}))
        specs.append(ModelSpec(name, copy, settings=TEST_SETTINGS))
    running = start_server(specs)
    yield running
    running.stop()


def client_history() -> list[dict[str, Any]]:
    """CALLED as a client sends it (arguments a JSON string, content null)."""
    call = {**CALLED[1]["tool_calls"][0], "function": {"name": "get_weather", "arguments": json.dumps(ARGUMENTS)}}
    return [CALLED[0], {"role": "assistant", "tool_calls": [call]}, CALLED[2]]


def test_served_deepseek_r1_distill_shows_the_model_its_call(served: ServerThread) -> None:
    with grpc.insecure_channel(served.target) as channel:
        tokenizer = tokenizer_pb2_grpc.TokenizerServiceStub(channel)
        request = {"model": "r1-distill", "messages": client_history()}
        ids = tokenizer.Tokenize(parse(tokenizer_pb2.TokenizeRequest, request)).tokens
        text = tokenizer.Detokenize(tokenizer_pb2.DetokenizeRequest(model="r1-distill", tokens=ids)).prompt
    assert R1_CALL in text and text.endswith("<｜tool▁outputs▁end｜>")


def test_served_minicpm5_answers_a_request_with_tools(served: ServerThread) -> None:
    body = {
        "model": "minicpm5",
        "messages": client_history(),
        "tools": [{"type": "function", "function": TOOLS[0]["function"]}],
        "max_tokens": 4,
    }
    with grpc.insecure_channel(served.target) as channel:
        reply = chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
            parse(chat_pb2.CreateChatCompletionRequest, body)
        )
    assert reply.choices[0].finish_reason and reply.usage.prompt_tokens > 0


@pytest.mark.parametrize("model", ["gpt-oss", "minicpm3"])
def test_served_templates_see_past_reasoning_sent_as_reasoning_content(served: ServerThread, model: str) -> None:
    """A client's call turn with reasoning_content and content (gpt-oss: joined, its template refuses both apart)
    reaches the template under the name it reads: the prompt the server tokenises holds both."""
    history = client_history()
    history[1] = {**history[1], "content": "Let me check.", "reasoning_content": THOUGHT}
    with grpc.insecure_channel(served.target) as channel:
        tokenizer = tokenizer_pb2_grpc.TokenizerServiceStub(channel)
        request = {"model": model, "messages": history}
        ids = tokenizer.Tokenize(parse(tokenizer_pb2.TokenizeRequest, request)).tokens
        text = tokenizer.Detokenize(tokenizer_pb2.DetokenizeRequest(model=model, tokens=ids)).prompt
    assert THOUGHT in text and "Let me check." in text and "Lyon" in text


def test_ministral_keeps_a_past_think_block_sent_inline(tokenizer: ov_genai.Tokenizer) -> None:
    """Ministral 3 writes every past reply's [THINK] block: one a client sends back in the content is moved to
    reasoning_content (prompting.reasoning_apart) and reaches the template as its thinking chunk, so the prompt is
    the one the content as sent gives (before, the block was cut off)."""
    renderer = renderer_of(tokenizer, "mistralai-Ministral-3-14B-Reasoning-2512.jinja")
    model: Any = SimpleNamespace(engine=SimpleNamespace(message_form=renderer.message_form))
    model.output_format = OutputFormat("mistral_args", "mistral")
    inline = [CALLED[0], {"role": "assistant", "content": f"[THINK]{THOUGHT}[/THINK]Take a coat."}]
    as_sent = renderer.render(inline, None, {}, add_generation_prompt=False)
    assert f"[THINK]{THOUGHT}[/THINK]Take a coat." in as_sent
    assert renderer.render(template_messages(model, inline), None, {}, add_generation_prompt=False) == as_sent


def test_lfm2_5_instruct_gets_past_reasoning_inline(tokenizer: ov_genai.Tokenizer) -> None:
    """LFM2.5-Instruct's template reads reasoning from no field; it keeps the last reply's <think> block in the
    content and cuts earlier ones. The probes find that (reasoning_inline): a block sent inline stays there (it was
    moved apart, where the template never looks), and reasoning_content is written into the content as the model
    writes it."""
    renderer = renderer_of(tokenizer, "LFM2.5-Instruct.jinja")
    assert renderer.message_form.reasoning_inline and renderer.message_form.reasoning_key == "reasoning_content"
    model: Any = SimpleNamespace(engine=SimpleNamespace(message_form=renderer.message_form))
    model.output_format = OutputFormat("lfm2", "think")
    later = {"role": "user", "content": "And tomorrow?"}

    def prompt_of(reply: dict[str, Any], *after: dict[str, Any]) -> str:
        history = [CALLED[0], reply, later, *after]
        return renderer.render(template_messages(model, history), None, {}, add_generation_prompt=False)

    inline = {"role": "assistant", "content": f"<think>{THOUGHT}</think>Take a coat."}
    apart = {"role": "assistant", "content": "Take a coat.", "reasoning_content": THOUGHT}
    assert f"<think>{THOUGHT}</think>Take a coat." in prompt_of(inline)
    assert prompt_of(apart) == prompt_of(inline)
    # Before a later reply the template cuts the block itself, however it was sent.
    earlier = prompt_of(apart, {"role": "assistant", "content": "Rain."})
    assert THOUGHT not in earlier and "Take a coat." in earlier
    # Under the form before (the block apart), the last reply's reasoning was lost.
    model.engine.message_form = MessageForm()
    assert THOUGHT not in prompt_of(inline)


def test_a_template_that_describes_tools_only_beside_a_system_message_is_found(tokenizer: ov_genai.Tokenizer) -> None:
    """vLLM's FunctionGemma template lists the tools inside the system turn only; Qwen3's lists them either way."""
    assert renderer_of(tokenizer, FUNCTIONGEMMA).message_form.system_for_tools is True
    assert renderer_of(tokenizer, "Qwen-Qwen3-0.6B.jinja").message_form.system_for_tools is False


def chat(target: str, body: dict[str, Any]) -> Any:
    with grpc.insecure_channel(target) as channel:
        stub = chat_pb2_grpc.ChatServiceStub(channel)
        return stub.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, body))


def test_served_functiongemma_shows_the_tools_without_a_system_message(served: ServerThread) -> None:
    """A request with tools and no system message gets an empty one, where the template writes the tools: its
    prompt is the one an explicit empty system message gives (before, the tools were not in the prompt at all)."""
    question = [{"role": "user", "content": "Weather in Lyon?"}]
    body = {"model": "functiongemma", "tools": [TOOLS[0]], "max_tokens": 1}
    without_tools = chat(served.target, {**body, "messages": question, "tools": []}).usage.prompt_tokens
    with_tools = chat(served.target, {**body, "messages": question}).usage.prompt_tokens
    system = [{"role": "system", "content": ""}, *question]
    assert with_tools == chat(served.target, {**body, "messages": system}).usage.prompt_tokens
    assert with_tools > without_tools + 20  # the description and the parameters' schema


def test_served_template_that_renders_an_empty_prompt_is_a_bad_request(served: ServerThread) -> None:
    """vLLM's Kimi-Audio template renders nothing for a chat's messages: INVALID_ARGUMENT naming messages, not the
    engine's refusal of an empty prompt (an INTERNAL error before)."""
    with pytest.raises(grpc.RpcError) as raised:
        chat(served.target, {"model": "kimi-audio", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "messages" in str(raised.value.details()) and "empty prompt" in str(raised.value.details())


def test_served_gigachat_20b_renders_with_its_special_tokens(served: ServerThread) -> None:
    """GigaChat-20B's template reads tokenizer_config.json's additional_special_tokens (as transformers passes them):
    every request was a 400 ("'additional_special_tokens' is not defined"); the prompt now holds its separators."""
    question = [{"role": "user", "content": "Weather in Lyon?"}]
    reply = chat(served.target, {"model": "gigachat-20b", "messages": question, "max_tokens": 1})
    assert reply.choices[0].finish_reason and reply.usage.prompt_tokens > 0
    with grpc.insecure_channel(served.target) as channel:
        tokenizer = tokenizer_pb2_grpc.TokenizerServiceStub(channel)
        ids = tokenizer.Tokenize(parse(tokenizer_pb2.TokenizeRequest, {"model": "gigachat-20b", "messages": question}))
        text = tokenizer.Detokenize(tokenizer_pb2.DetokenizeRequest(model="gigachat-20b", tokens=ids.tokens)).prompt
    assert text.endswith("user<|role_sep|>\nWeather in Lyon?<|message_sep|>\n\navailable functions<|role_sep|>\n[]"
                         "<|message_sep|>\n\nassistant<|role_sep|>\n")  # fmt: skip


def test_served_cogito_is_listed_with_the_think_format(served: ServerThread) -> None:
    """Cogito's template switches thinking on with a system line and shows no markup: the model is served with the
    think parser (it had none: a thinking reply's <think> block stayed in the content), and the listing says why."""
    with grpc.insecure_channel(served.target) as channel:
        model = model_pb2_grpc.ModelServiceStub(channel).GetModel(model_pb2.GetModelRequest(model="cogito")).model
    assert (model.tool_parser, model.reasoning_parser) == ("hermes", "think")
    assert "switches thinking on" in model.reasoning_parser_evidence
