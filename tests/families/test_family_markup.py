"""A family's tool-call markup as its model writes it, token by token, reaches the parser: special tokens too.

For each family a call in its own format (special tokens such as Mistral's ``[TOOL_CALLS]``, Llama 3's
``<|python_tag|>`` or gpt-oss's ``<|channel|>`` included) is encoded with the family's real tokenizer, then
detokenised as the engine process does (TokenCodec keeping the parsers' markup, one token at a time as a
stream arrives) and parsed with the format the server picks for the family: the call comes back whole.
Without the markup kept, the families whose markup is a special token lose the call.
"""

# ruff: noqa: RUF001 (DeepSeek's markup is spelled with fullwidth bars: they are the real tokens)
from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from ovserve.service.engine.detokenizer import Pending, SequenceText, detokenize_step
from ovserve.service.parsing import OutputFormat
from ovserve.service.workers.codec import TokenCodec
from tests.families import matrix
from tests.families.table import FAMILIES

ARGUMENTS = {"city": "Paris", "days": 3}
JSON = json.dumps(ARGUMENTS)
# The call as each format's model writes it (its own spelling, special tokens and all).
WRITTEN = {
    "hermes": f'<tool_call>\n{{"name": "get_weather", "arguments": {JSON}}}\n</tool_call>',
    "qwen3_coder": "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    "glm45": "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
    "llama3_json": f'<|python_tag|>{{"name": "get_weather", "parameters": {JSON}}}',
    "pythonic": '[get_weather(city="Paris", days=3)]',
    "mistral": f'[TOOL_CALLS][{{"name": "get_weather", "arguments": {JSON}}}]',
    "deepseek_v3": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
    f"{JSON}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "deepseek_v31": f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{JSON}<｜tool▁call▁end｜>"
    "<｜tool▁calls▁end｜>",
    "kimi_k2": "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    f"{JSON}<|tool_call_end|><|tool_calls_section_end|>",
    "phi4_mini_json": f'functools[{{"name": "get_weather", "arguments": {JSON}}}]',
    "granite": f'<|tool_call|>[{{"name": "get_weather", "arguments": {JSON}}}]',
    "openai": f"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{JSON}<|call|>",
    "gemma4": '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>',
    "generic": f'{{"tool_calls": [{{"name": "get_weather", "arguments": {JSON}}}]}}',
    "seed_oss": "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
    "<parameter=days>3</parameter>\n</function>\n</seed:tool_call>",
    "functionary_v3_1": f"<function=get_weather>{JSON}</function>",
    "mistral_args": f"[TOOL_CALLS]get_weather[ARGS]{JSON}",  # Tekken's (Devstral, Ministral 3): no JSON list
    "lfm2": "<|tool_call_start|>[get_weather(city='Paris', days=3)]<|tool_call_end|>",
    "command_r7b": '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
    f'"parameters": {JSON}}}\n]<|END_ACTION|>',
    "command_r_plus": f'Action:\n```json\n[\n    {{\n        "tool_name": "get_weather",\n        "parameters": {JSON}'
    "\n    }\n]\n```",  # as its template writes a past call
    "functionary_v3_2": f"get_weather\n{JSON}",  # the prompt wrote ">>>"
    "nemotron_json": f'<TOOLCALL>[{{"name": "get_weather", "arguments": {JSON}}}]</TOOLCALL>',
    "minimax_m2": '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
    '<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>',
    "minimax": f'<tool_calls>\n{{"name": "get_weather", "arguments": {JSON}}}\n</tool_calls>',
    "internlm": f'<|action_start|><|plugin|>\n{{"name": "get_weather", "arguments": {JSON}}}<|action_end|>',
    "granite_20b_fc": f'<function_call> {{"name": "get_weather", "arguments": {JSON}}}',
    "deepseek_v32": '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
    "apertus": f'<|tools_prefix|>[{{"get_weather": {JSON}}}]<|tools_suffix|>',
    "hy_v3": "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n"
    "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n"
    "<arg_key:opensource>days</arg_key:opensource>\n<arg_value:opensource>3</arg_value:opensource>\n"
    "</tool_call:opensource>\n</tool_calls:opensource>",
    "minimax_m3": ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris'
    "]<]minimax[>[</city>]<]minimax[>[<days>3]<]minimax[>[</days>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
    "minicpm5xml": '<function name="get_weather"><param name="city">Paris</param><param name="days">3</param>'
    "</function>",
    "deepseek_v4": '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
    "apriel": f'<tool_calls>[{{"name": "get_weather", "arguments": {JSON}}}]</tool_calls>',
    "kimi_k3": '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
    '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
    '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>'
    "<|close|>call<|sep|><|close|>tools<|sep|>",
    "solar_open": "<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>"
    f"{JSON}<|tool_call:end|><|calls|>",
    # ATEM: a message to the tool in the envelope (the turn's first header's "<|start|>assistant" is the prompt's).
    "onyx": ' to=get_weather<|message|><atem:function_calls>\n<atem:invoke name="get_weather">\n'
    '<atem:parameter name="city">Paris</atem:parameter>\n<atem:parameter name="days">3</atem:parameter>\n'
    "</atem:invoke>\n</atem:function_calls><|eom|>",
}
SCHEMAS = {"get_weather": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}


def output_format(family: str) -> OutputFormat:
    """The family's parsers, as the server picks them for its template (matrix.PARSERS)."""
    tool, reasoning = (None if name == "none" else name for name in matrix.PARSERS[family])
    return OutputFormat(tool, reasoning)


def streamed_text(codec: TokenCodec, ids: list[int]) -> list[str]:
    """The text deltas of ``ids`` arriving one token per step, detokenised as the engine process does."""
    sequence, deltas = SequenceText(skip_special_tokens=True), []
    for position, token in enumerate(ids):
        item = Pending(sequence, [token], final=position == len(ids) - 1)
        detokenize_step(codec.decode_windows, [item])
        deltas.append(item.text)
    return deltas


def parsed(chosen: OutputFormat, deltas: list[str]) -> tuple[list[tuple[str, dict[str, object]]], str]:
    parser = chosen.parser(tools=True, schemas=SCHEMAS)
    for delta in deltas:
        parser.feed(delta)
    parser.finish()
    return [(call.name, json.loads(call.arguments)) for call in parser.result.calls], parser.result.content


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_call_as_the_model_writes_it_reaches_the_parser(family_models: dict[str, Path], family: str) -> None:
    chosen = output_format(family)
    assert chosen.tool_parser is not None
    text = WRITTEN[chosen.tool_parser]
    model_dir = family_models[family]
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    end_of_turn = tokenizer.token_to_id(FAMILIES[family].end_of_turn[0])
    ids = [*tokenizer.encode(text, add_special_tokens=False).ids, end_of_turn]
    special = {token.content for token in tokenizer.get_added_tokens_decoder().values() if token.special}
    written_special = [token for token in special if token in text]
    for token in written_special:  # each is one id, as the model emits it
        assert tokenizer.token_to_id(token) in ids, token

    keeping = TokenCodec(model_dir, chosen.markup_texts)
    deltas = streamed_text(keeping, ids)
    # The markup's special tokens kept, the end of turn dropped, unless it is markup too (ATEM's <|eot|> ends a
    # message of its envelope, which the parser takes out).
    ending = FAMILIES[family].end_of_turn[0]
    kept_end = ending if any(ending in markup for markup in chosen.markup_texts) else ""
    assert "".join(deltas) == text + kept_end
    assert parsed(chosen, deltas) == ([("get_weather", ARGUMENTS)], "")


def test_without_the_markup_kept_a_call_is_lost(family_models: dict[str, Path]) -> None:
    """Devstral's call is ``[TOOL_CALLS]NAME[ARGS]{...}``: skipped as special tokens, only text is left."""
    model_dir, chosen = family_models["devstral"], output_format("devstral")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    ids = tokenizer.encode(WRITTEN["mistral_args"], add_special_tokens=False).ids
    calls, content = parsed(chosen, streamed_text(TokenCodec(model_dir), ids))
    assert calls == [] and content == f"get_weather{JSON}"
