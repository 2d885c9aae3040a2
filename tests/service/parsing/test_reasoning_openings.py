"""Where a reasoning block and a reply start when the prompt has done part of the writing.

- A block the prompt opened: the model may write the opening again (Nemotron Nano v2's and DeepSeek-R1's
  templates end the prompt with ``<think>``; vLLM's think parsers drop a repeated one): it is not reasoning text.
- Apriel's block has no opening the model must write (``ThinkMarkup.implicit``): 1.6's prompt writes the words,
  1.5's model writes them itself, 1.6's template writes a past turn's reasoning bare before [BEGIN FINAL
  RESPONSE]; all three read alike (vLLM's apriel parser: everything before the marker). A call without the marker
  ends the block where it opens.
- A reply the prompt opened (Kimi K3 with thinking off ends it with ``<|open|>response<|sep|>``): its closing tag
  is markup, not content.

Each is read whole and in every way ``feeding.deltas`` cuts it (``streamed_like_whole``); the published templates'
own writing is read back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ovserve.service.engine.chat_template import jinja_render
from ovserve.service.parsing import OutputFormat
from tests.service.parsing.feeding import calls, fed, streamed_like_whole

TEMPLATES = Path(__file__).parents[2] / "data" / "chat_templates"
WEATHER = ("get_weather", {"city": "Kyoto"})
W = json.dumps({"name": WEATHER[0], "arguments": WEATHER[1]})
NEMOTRON_TAIL = "<SPECIAL_11>Assistant\n<think>\n"  # Nemotron Nano v2's generation prompt, thinking on
APRIEL_16_TAIL = "<|begin_assistant|>\nHere are my reasoning steps:\n"  # 1.6's generation prompt opens the block
APRIEL_15_TAIL = "<|assistant|>\n"  # 1.5's opens nothing
K3_REPLY_TAIL = '<|open|>message role="assistant"<|sep|><|open|>response<|sep|>'  # Kimi K3, thinking off
K3_THINK_TAIL = '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>'  # Kimi K3, thinking on
K3_REPLY, K3_MESSAGE_END = "<|close|>think<|sep|><|open|>response<|sep|>", "<|close|>message<|sep|>"
K3_CALL = (
    '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"'
    "<|sep|>Kyoto<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>"
)

CASES = [
    # (tool format, reasoning format, prompt tail, output, reasoning, content, calls)
    # The opening written again after the prompt's: dropped, whitespace around it too.
    ("hermes", "think", "<|im_start|>assistant\n<think>\n", "<think>\nPlan.\n</think>\n\nAnswer.", "Plan.",
     "Answer.", []),
    ("nemotron_json", "think", NEMOTRON_TAIL, "<think>Pondering.</think>Rain.", "Pondering.", "Rain.", []),
    ("nemotron_json", "think", NEMOTRON_TAIL, f"<think>Need it.</think><TOOLCALL>[{W}]</TOOLCALL>", "Need it.", "",
     [WEATHER]),
    # Not written again: as before.
    ("nemotron_json", "think", NEMOTRON_TAIL, "Pondering.</think>Rain.", "Pondering.", "Rain.", []),
    # A lookalike of the opening is reasoning text, and so is a lone "<" the output ends on.
    ("hermes", "think", "<think>\n", "<thinking> is a tag.</think>Answer.", "<thinking> is a tag.", "Answer.", []),
    ("hermes", "think", "<think>\n", "<", "<", "", []),
    # Only a block the prompt opened: a reply that quotes the opening later keeps it.
    ("hermes", "think", "<|im_start|>assistant\n", "Use <think> tags.", "", "Use <think> tags.", []),
    # Apriel: the block starts with the output, its opening words written or not.
    ("apriel", "apriel", APRIEL_16_TAIL, "Hmm.\n[BEGIN FINAL RESPONSE]\nIt rains.\n[END FINAL RESPONSE]", "Hmm.",
     "It rains.", []),
    ("apriel", "apriel", APRIEL_16_TAIL, "Here are my reasoning steps:\nHmm.\n[BEGIN FINAL RESPONSE]\nIt rains.",
     "Hmm.", "It rains.", []),
    ("apriel", "apriel", APRIEL_15_TAIL, "Here are my reasoning steps:\nHmm.\n[BEGIN FINAL RESPONSE]\nIt rains.",
     "Hmm.", "It rains.", []),
    ("apriel", "apriel", APRIEL_15_TAIL, "Hmm.\n[BEGIN FINAL RESPONSE]\nIt rains.\n[END FINAL RESPONSE]", "Hmm.",
     "It rains.", []),
    # ... a call without the marker ends it where the call opens (and a call at once leaves no reasoning) ...
    ("apriel", "apriel", APRIEL_15_TAIL, f"Need the weather.\n<tool_calls>[{W}]</tool_calls>", "Need the weather.",
     "", [WEATHER]),
    ("apriel", "apriel", APRIEL_15_TAIL, f"\n<tool_calls>[{W}]</tool_calls>", "", "", [WEATHER]),
    # ... and 1.5's thought before a call, as its template asks for it with add_thoughts set (llama.cpp's reading).
    ("apriel", "apriel", APRIEL_15_TAIL, f"<thinking>Need the weather.</thinking>\n<tool_calls>[{W}]</tool_calls>",
     "Need the weather.", "", [WEATHER]),
    ("apriel", "apriel", APRIEL_16_TAIL, f"Hmm.\n[BEGIN FINAL RESPONSE]\n<tool_calls>[{W}]</tool_calls>", "Hmm.", "",
     [WEATHER]),
    # ... no marker and no call: all reasoning, as vLLM reads it (the model was still thinking) ...
    ("apriel", "apriel", APRIEL_15_TAIL, "Still weighing it", "Still weighing it", "", []),
    # ... and a prompt that closed the block leaves the reply content.
    ("apriel", "apriel", "<|begin_assistant|>\n[BEGIN FINAL RESPONSE]\n", "It rains.", "", "It rains.", []),
    # Kimi K3 with thinking off: the prompt opened the reply, the output closes it.
    ("kimi_k3", "kimi_k3", K3_REPLY_TAIL, "Hi.<|close|>response<|sep|>", "", "Hi.", []),
    ("kimi_k3", "kimi_k3", K3_REPLY_TAIL, "Checking.<|close|>response<|sep|>" + K3_CALL, "", "Checking.", [WEATHER]),
    ("kimi_k3", "kimi_k3", K3_REPLY_TAIL, "<|close|>response<|sep|>" + K3_CALL, "", "", [WEATHER]),
    # ... and ends its message (vLLM's kimi_k3 parsers drop the close too), after the reply or its calls.
    ("kimi_k3", "kimi_k3", K3_REPLY_TAIL, f"Hi.<|close|>response<|sep|>{K3_MESSAGE_END}", "", "Hi.", []),
    ("kimi_k3", "kimi_k3", K3_REPLY_TAIL, f"<|close|>response<|sep|>{K3_CALL}{K3_MESSAGE_END}", "", "", [WEATHER]),
    # Thinking on: the prompt opened the think channel; the reply channel follows it.
    ("kimi_k3", "kimi_k3", K3_THINK_TAIL, f"Hmm.{K3_REPLY}Hi.<|close|>response<|sep|>{K3_MESSAGE_END}", "Hmm.",
     "Hi.", []),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "think", "tail", "text", "reasoning", "content", "made"), CASES)
def test_the_reasoning_and_the_reply_read_whole_and_in_pieces(
    tool: str, think: str, tail: str, text: str, reasoning: str, content: str, made: list[tuple[str, Any]]
) -> None:
    fmt = OutputFormat(tool_parser=tool, reasoning_parser=think)
    turn = streamed_like_whole(fmt, text, ("<tool_calls>", "<TOOLCALL>", "<|open|>tools"), prompt_tail=tail)
    assert (turn.reasoning, turn.content, calls(turn)) == (reasoning, content, made)


def test_a_block_cut_while_it_may_still_be_a_repeated_opening_is_reasoning() -> None:
    """The output ends on the start of the opening (held back while it could be one): reasoning, still open."""
    turn, _ = fed(OutputFormat(reasoning_parser="think"), ["<thi"], prompt_tail="<think>\n")
    assert (turn.reasoning, turn.content, turn.in_reasoning) == ("<thi", "", True)


@pytest.mark.parametrize("end", ["", K3_MESSAGE_END])
def test_kimi_k3_reply_tags_without_tools_offered(end: str) -> None:
    """No tools offered: the reply the prompt opened still loses its closing tag, and the message its close."""
    fmt = OutputFormat(tool_parser="kimi_k3", reasoning_parser="kimi_k3")
    turn = streamed_like_whole(fmt, f"Hi.<|close|>response<|sep|>{end}", prompt_tail=K3_REPLY_TAIL, tools=False)
    assert (turn.reasoning, turn.content) == ("", "Hi.")


@pytest.mark.parametrize("start", ["<|start|>", ""])
def test_an_atem_answer_without_tools_offered(start: str) -> None:
    """Onyx served with its tool format keeps <|start|> in the text (the envelope's), also when a request offers
    no tools (no call parser then): the answer's header goes either way."""
    fmt = OutputFormat(tool_parser="onyx", reasoning_parser="onyx")
    text = f" to=self<|message|>Easy.<|eom|>{start}assistant to=user<|message|>It is 3.<|eot|>"
    turn = streamed_like_whole(fmt, text, prompt_tail="<|start|>assistant", tools=False)
    assert (turn.reasoning, turn.content) == ("Easy.", "It is 3.")


def test_the_opened_and_implicit_blocks_are_known_from_the_prompt() -> None:
    apriel = OutputFormat(tool_parser="apriel", reasoning_parser="apriel")
    assert apriel.reasoning_opened(APRIEL_15_TAIL) and apriel.reasoning_opened(APRIEL_16_TAIL)
    assert not apriel.reasoning_opened("<|begin_assistant|>\n[BEGIN FINAL RESPONSE]\n")  # closed by the prompt
    think = OutputFormat(reasoning_parser="think")
    assert think.reasoning_opened("<think>\n") and not think.reasoning_opened("<|im_start|>assistant\n")
    k3 = OutputFormat(tool_parser="kimi_k3", reasoning_parser="kimi_k3")
    assert k3.reply_opened(K3_REPLY_TAIL) and not k3.reply_opened("<|open|>think<|sep|>")
    assert not apriel.reply_opened(APRIEL_16_TAIL)  # Apriel's reply has a closing only: nothing to open


def _assistant_turn(template: str, assistant: dict[str, Any], context: dict[str, Any]) -> tuple[str, str]:
    """The published template's writing of ``assistant`` after a question, as (prompt before it, its turn): the
    two split where the rendering with a marker turn differs from it."""
    source = (TEMPLATES / template).read_text()
    question = [{"role": "user", "content": "Weather in Kyoto?"}]

    def render(turn: dict[str, Any]) -> str:
        return jinja_render({"bos_token": "", "eos_token": ""}, source, [*question, turn], None, context, False)

    whole, marked = render(assistant), render({"role": "assistant", "content": "MARK"})
    start = next(i for i, (a, b) in enumerate(zip(whole, marked, strict=False)) if a != b)
    opened = whole.rfind("<", 0, start)  # not inside a tag both turns open alike (Cohere's <|START_...)
    if opened >= 0 and ">" not in whole[opened:start]:
        start = opened
    return whole[:start], whole[start:]


def test_apriel_16_template_past_reasoning_reads_back() -> None:
    """Apriel 1.6's template writes a past turn's reasoning_content bare (its generation prompt wrote the opening
    words): read back as reasoning and reply (the family probe's reasoning cell failed here: all content)."""
    assistant = {"role": "assistant", "content": "Rain is likely.", "reasoning_content": "Pondering the clouds"}
    tail, text = _assistant_turn("Apriel-1.6-15b-Thinker-fixed.jinja", assistant, {})
    assert "Here are my reasoning steps" not in text and "[BEGIN FINAL RESPONSE]" in text
    fmt = OutputFormat(tool_parser="apriel", reasoning_parser="apriel")
    turn = streamed_like_whole(fmt, text, prompt_tail=tail[-200:])
    assert (turn.reasoning, turn.content.strip()) == ("Pondering the clouds", "Rain is likely.")


def test_nemotron_nano_v2_generation_prompt_and_a_repeated_opening() -> None:
    """Nemotron Nano v2's template ends the generation prompt with <think> (thinking on): a model that writes it
    again gets its reasoning without the tag (before: '<think>Pondering' as reasoning)."""
    source = (TEMPLATES / "NVIDIA-Nemotron-Nano-v2.jinja").read_text()
    history = [{"role": "user", "content": "Weather in Kyoto?"}]
    prompt = jinja_render({"bos_token": "", "eos_token": ""}, source, history, None, {}, True)
    assert prompt.endswith("<think>\n")
    fmt = OutputFormat(tool_parser="nemotron_json", reasoning_parser="think")
    turn = streamed_like_whole(fmt, "<think>Pondering the clouds</think>Rain is likely.", prompt_tail=prompt[-200:])
    assert (turn.reasoning, turn.content) == ("Pondering the clouds", "Rain is likely.")


def test_kimi_k3_thinking_off_generation_prompt_opens_the_reply() -> None:
    """Kimi K3's template, thinking off, ends the prompt inside the response channel: the reply's own closing
    tag and a call section after it are markup (before: '<|close|>response<|sep|>' in the content)."""
    source = (TEMPLATES / "Kimi-K3.jinja").read_text()
    history = [{"role": "user", "content": "Weather in Kyoto?"}]
    prompt = jinja_render({"bos_token": "", "eos_token": ""}, source, history, None, {"thinking": False}, True)
    assert prompt.endswith("<|open|>response<|sep|>")
    fmt = OutputFormat(tool_parser="kimi_k3", reasoning_parser="kimi_k3")
    turn = streamed_like_whole(fmt, "Checking.<|close|>response<|sep|>" + K3_CALL, prompt_tail=prompt[-200:])
    assert (turn.reasoning, turn.content, calls(turn)) == ("", "Checking.", [WEATHER])


def test_command_r7b_writes_past_reasoning_only_in_a_call_turn_and_it_reads_back() -> None:
    """Command R7B's template renders reasoning_content only before a past call (a text reply's is dropped, so the
    family probe's reasoning cell cannot see it): that writing reads back as the reasoning and the call."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Kyoto"}}}
    assistant = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "Pondering the clouds",
        "tool_calls": [call],
    }
    tail, text = _assistant_turn("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", assistant, {})
    text = text.partition("<|END_OF_TURN_TOKEN|>")[0]
    assert text.startswith("<|START_THINKING|>Pondering the clouds<|END_THINKING|><|START_ACTION|>"), text
    fmt = OutputFormat(tool_parser="command_r7b", reasoning_parser="command_r7b")
    turn = streamed_like_whole(fmt, text, ("<|START_ACTION|>",), prompt_tail=tail[-200:])
    assert (turn.reasoning, turn.content, calls(turn)) == ("Pondering the clouds", "", [WEATHER])
