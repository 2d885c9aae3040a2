"""Assistant prefill: vLLM's ``continue_final_message`` and ``add_generation_prompt``, one rule for chat and tokenize.

With ``continue_final_message`` the conversation must end with an assistant message; the chat template renders it
as history (no generation prompt) and the prompt is cut right after that message's text, so the model continues
it instead of opening a new turn (as transformers' ``continue_final_message`` cuts it). The answer then begins with
that text, as llama.cpp's ``--prefill-assistant`` answers (vLLM returns the continuation alone): the reply's
reasoning and tool calls are parsed from the prefilled text and the continuation together, so a prefilled
``<think>`` opens the reasoning and a prefilled ``<tool_call>`` opens a call. ``add_generation_prompt`` false alone
renders the conversation without the assistant turn's opening (vLLM's base-model style continuation); both true is
refused, as vLLM refuses it. An output constraint (response_format, a forced tool call) would apply from the start
of the answer, which the prefill already began: it is refused beside a prefill, and tool-guided generation under
``auto`` is left off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ovserve.service.errors import FieldViolation, InvalidArgument

FIELD = "continue_final_message"


@dataclass(frozen=True)
class Prefill:
    """How a conversation's rendering ends: with the assistant turn's opening, or inside its final message."""

    generation_prompt: bool = True  # end with the assistant turn's opening (the template's add_generation_prompt)
    text: str = ""  # the final assistant message's text the model continues (trailing whitespace dropped); "": none
    drop_final: bool = False  # an empty final assistant message to continue: left out, a new turn opens instead

    @property
    def continues(self) -> bool:
        """Whether the prompt ends inside the final assistant message."""
        return bool(self.text)


NO_PREFILL = Prefill()


def prefill_of(request: Any, history: list[dict[str, Any]], violations: list[FieldViolation]) -> Prefill:
    """The request's prefill (chat's and tokenize's fields of the same names), over its checked ``history``;
    appends what is wrong to ``violations``."""
    asked = request.HasField(FIELD) and getattr(request, FIELD)
    generation = request.add_generation_prompt if request.HasField("add_generation_prompt") else not asked
    if not asked:
        return Prefill(generation_prompt=generation)
    if generation:
        violations.append(
            FieldViolation("add_generation_prompt", "cannot be true with continue_final_message (as in vLLM)")
        )
    last = history[-1] if history else {}
    if last.get("role") != "assistant":
        role = last.get("role") or "none"
        violations.append(FieldViolation(FIELD, f"the last message must be the assistant's to continue; it is {role}"))
        return NO_PREFILL
    content = last.get("content")
    if last.get("tool_calls") or not isinstance(content, str):
        violations.append(
            FieldViolation(FIELD, "the final assistant message must be text alone (no tool calls or parts) to continue")
        )
        return NO_PREFILL
    text = content.rstrip()
    if not text:  # an empty final message continues as a new turn begins: left out, and the turn's opening
        return Prefill(generation_prompt=True, drop_final=True)
    return Prefill(generation_prompt=False, text=text)


def cut_after_final_message(rendered: str, prefill: Prefill, field: str) -> str:
    """``rendered`` (the conversation as history, no generation prompt) cut right after the final assistant
    message's text, where the model goes on; INVALID_ARGUMENT naming ``field`` when the template does not write
    that text (a template that rewrites or drops the final message)."""
    for text in (prefill.text, prefill.text.strip()):  # Llama 3's templates trim a message's content
        at = rendered.rfind(text)
        if at >= 0:
            return rendered[: at + len(text)]
    raise InvalidArgument.of(
        field, "the chat template does not write the final assistant message's text, so it cannot be continued"
    )
