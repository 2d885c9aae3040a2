"""Held-out scores of tiny-chat's agent behaviour (``agent_corpus.HELD_OUT``), measured on the model itself.

Three scores, each over prompts built from topics, places and people the corpus never holds:

* ``tool_chosen``: a question an offered tool answers -> one well-formed call of that tool with
  the question's value;
* ``tool_not_chosen``: tools are offered but none fits (small talk, or a topic no tool covers)
  -> text, no call; and after a tool's result -> text that holds the result, no call;
* ``json_valid``: facts in prose with the schema in the instructions (instructor's and
  pydantic-ai's prompts) -> a JSON object with exactly the schema's fields and the facts' values.

The build scores the exported model with OpenVINO GenAI (``replies_openvino``) twice: as it writes alone
(``scores`` in the model's ``held_out.json``, comparable with the numbers recorded before), and with the
service's tool-guided generation on (``guided_scores``), which ovserve applies by default whenever a request
sends tools under ``tool_choice: auto``: a call the model opens is one of the offered tools with arguments valid
for it (``tool_guide``: the service's own plan, ``ovserve.service.structured.output.output_plan``). Issue 47's
bar is the guided ``tool_chosen`` >= 0.8.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from . import agent_corpus as ac

CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)
SEED = 4321
SCORES = ("tool_chosen", "tool_not_chosen", "json_valid")


@dataclass
class Case:
    """One scored prompt: the conversation, its tools, and what the reply must be (``expect``, see ``check``)."""

    score: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    expect: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The case as written to the model's ``held_out.json``."""
        return {"score": self.score, "messages": self.messages, "tools": self.tools, "expect": self.expect}


def check(expect: dict[str, Any], text: str) -> bool:
    """Whether a greedy reply ``text`` is what ``expect`` asks:

    ``{"call": NAME, "arguments": {...}}``: a tool call first, of NAME with exactly those arguments;
    ``{"text": S}``: text holding S (and a word), no call; ``{"json": {...}}``: exactly that JSON object.
    """
    if "call" in expect:
        try:
            calls = [json.loads(body) for body in CALL.findall(text)]
        except json.JSONDecodeError:
            return False
        return (
            bool(calls) and calls[0].get("name") == expect["call"] and calls[0].get("arguments") == expect["arguments"]
        )
    if "text" in expect:
        return "<tool_call>" not in text and expect["text"] in text and bool(re.search(r"[A-Za-z]{3,}", text))
    try:
        return bool(json.loads(text.strip()) == expect["json"])
    except json.JSONDecodeError:
        return False


def cases(per_score: int = 40, seed: int = SEED) -> list[Case]:
    """The held-out prompts: ``per_score`` of each kind, deterministic from ``seed``."""
    rng = random.Random(seed)
    out: list[Case] = []
    for _ in range(per_score):
        topic = rng.choice(ac.topics(True))
        tool = ac.make_tool(rng, topic)
        value = ac.value_for(rng, ac.topic_kind(topic), True)
        others = [
            ac.make_tool(rng, t) for t in rng.sample([t for t in ac.topics(True) if t != topic], rng.randrange(2))
        ]
        tools = [tool, *others]
        rng.shuffle(tools)
        messages = [{"role": "user", "content": ac.question(rng, topic, value)}]
        expect = {"call": tool.name, "arguments": {tool.param: value}}
        out.append(Case("tool_chosen", messages, [t.definition for t in tools], expect))
    small_talk = ["Hello!", "Who are you?", "Thank you!", "Tell me a short story.", "What is 2 plus 3?"]
    for i in range(per_score):
        topic, asked = rng.sample(ac.topics(True), 2)
        tool = ac.make_tool(rng, topic)
        if i % 2:
            value = ac.value_for(rng, ac.topic_kind(asked), True)
            messages = [{"role": "user", "content": ac.question(rng, asked, value)}]
            out.append(Case("tool_not_chosen", messages, [tool.definition], {"text": ""}))
            continue
        if i % 4 == 0:
            messages = [{"role": "user", "content": rng.choice(small_talk)}]
            out.append(Case("tool_not_chosen", messages, [tool.definition], {"text": ""}))
            continue
        value = ac.value_for(rng, ac.topic_kind(topic), True)
        result = ac.result_value(rng)
        call = {"name": tool.name, "arguments": json.dumps({tool.param: value})}
        messages = [
            {"role": "user", "content": ac.question(rng, topic, value)},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "call_0", "type": "function", "function": call}],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": ac.tool_output(rng, tool, value, result)},
        ]
        out.append(Case("tool_not_chosen", messages, [tool.definition], {"text": str(result)}))
    for _ in range(per_score):
        fields = rng.sample(sorted(ac.FACT_FIELDS), rng.choice([1, 2, 3]))
        facts = {f: _held_out_fact(rng, f) for f in fields}
        text = " and ".join(f"the {f} is {v}" for f, v in facts.items())
        style = rng.choice(["instructor_json", "pydantic_prompted"])
        messages = [
            {"role": "system", "content": ac.instruction(style, ac.pydantic_schema(fields, "Record"))},
            {"role": "user", "content": text[0].upper() + text[1:] + "."},
        ]
        out.append(Case("json_valid", messages, None, {"json": facts}))
    return out


def _held_out_fact(rng: random.Random, field: str) -> Any:
    if field == "name":
        return rng.choice(ac.HELD_OUT_PEOPLE)
    if field in ("city", "country", "title"):
        return rng.choice(ac.HELD_OUT_PLACES)
    if field == "price":
        return round(rng.uniform(1, 500), 2)
    if field in ("color", "animal"):
        return rng.choice(ac.COLOR_WORDS if field == "color" else ac.ANIMAL_WORDS)
    return rng.randrange(2, 95)


def score(cases_: list[Case], replies: list[str]) -> dict[str, float]:
    """Each score's share of passed cases, given the model's greedy reply to each case."""
    totals: dict[str, list[bool]] = {name: [] for name in SCORES}
    for case, reply in zip(cases_, replies, strict=True):
        totals[case.score].append(check(case.expect, reply))
    return {name: round(sum(passed) / len(passed), 3) for name, passed in totals.items() if passed}


def tool_guide(tools: list[dict[str, Any]], chat_template: str, tokenizer: Any) -> Any | None:
    """The engine constraint the service puts on a reply when a request sends ``tools`` (chat-template form)
    under ``tool_choice: auto`` to a model served with its default tool-guided generation, or None when it puts
    none: the request's plan as ``ovserve.service.api.prepare.templated_constraint`` builds it, for the call markup
    the service reads off ``chat_template`` and the grammar spellings of ``tokenizer`` (an openvino_genai one), with
    no reasoning block open (the scorer's prompts leave thinking off)."""
    from google.protobuf import json_format

    from ovserve.clients.v1 import chat_pb2
    from ovserve.service.engine.generation_config import structured_output_config
    from ovserve.service.engine.vocabulary import grammar_spellings
    from ovserve.service.errors import FieldViolation
    from ovserve.service.parsing import OutputFormat
    from ovserve.service.structured.output import output_plan

    request = json_format.ParseDict({"model": "scored", "tools": tools}, chat_pb2.CreateChatCompletionRequest())
    output = OutputFormat.choose(None, None, chat_template)
    violations: list[FieldViolation] = []
    guide = output_plan(
        request, violations, tools=tools, markup=output.call_markup, think=output.think_markup,
        guided=True, by_default=True, spellings=grammar_spellings(tokenizer),
    )  # fmt: skip
    if violations:
        raise ValueError(f"the service refuses the scorer's tools: {violations}")
    return None if guide is None else structured_output_config(guide.constraint(opened=False))


def replies_openvino(model_dir: Any, cases_: list[Case], max_new_tokens: int = 96, guided: bool = False) -> list[str]:
    """Greedy replies of the exported model (OpenVINO GenAI, its own chat template), as the service serves it;
    ``guided``: with the service's default tool-guided generation on the cases that offer tools."""
    import openvino_genai as ov_genai

    pipe = ov_genai.LLMPipeline(str(model_dir), "CPU")
    tokenizer = pipe.get_tokenizer()
    out = []
    for case in cases_:
        config = ov_genai.GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False)
        history = ov_genai.ChatHistory(case.messages)
        if case.tools:
            history.set_tools(case.tools)
            if guided and (guide := tool_guide(case.tools, tokenizer.chat_template, tokenizer)) is not None:
                config.structured_output_config = guide
        out.append(pipe.generate(history, config).texts[0])
    return out
