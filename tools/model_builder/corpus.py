"""Synthetic chat corpus for the bundled tiny models.

The corpus is a list of :class:`Example` objects: a conversation (OpenAI-style
message dicts), optional tool definitions and the ``enable_thinking`` flag, plus
the assistant text the model must learn to produce for that prompt. Training
renders the prompt with the real chat template, so the model learns exactly the
layout the service will feed it.

What the corpus teaches, and why it is shaped this way:

* plain answers built from texts found on the machine (software licenses,
  Python docstrings) and templated small talk, so greedy decoding gives real
  words and every turn ends with ``<|im_end|>``;
* Hermes/Qwen ``<tool_call>`` blocks when the system prompt lists tools and the
  user asks for something a tool does, with argument values copied from the
  user's message (one, two or three calls per turn);
* plain-text answers that copy values out of ``<tool_response>`` blocks;
* a ``<think>`` block before the answer whenever ``enable_thinking`` is true.

Everything is driven by one ``random.Random(seed)``, and the text sources are
read in sorted order, so the same machine always yields the same corpus.
"""

from __future__ import annotations

import builtins
import hashlib
import inspect
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LICENSE_DIR = Path("/usr/share/common-licenses")

# Cities are the argument values the tool calls copy; a fixed list keeps the
# BPE vocabulary small enough that most of them are one or two tokens.
CITIES = [
    "Paris",
    "Rome",
    "London",
    "Berlin",
    "Madrid",
    "Lisbon",
    "Vienna",
    "Prague",
    "Warsaw",
    "Dublin",
    "Oslo",
    "Stockholm",
    "Helsinki",
    "Athens",
    "Cairo",
    "Tokyo",
    "Seoul",
    "Beijing",
    "Delhi",
    "Sydney",
    "Toronto",
    "Chicago",
    "Boston",
    "Denver",
    "Seattle",
    "Lima",
    "Bogota",
    "Nairobi",
    "Lagos",
    "Moscow",
    "Amsterdam",
    "Brussels",
    "Zurich",
    "Munich",
    "Milan",
    "Barcelona",
]
COUNTRIES = {
    "France": "Paris",
    "Italy": "Rome",
    "England": "London",
    "Germany": "Berlin",
    "Spain": "Madrid",
    "Portugal": "Lisbon",
    "Austria": "Vienna",
    "Poland": "Warsaw",
    "Ireland": "Dublin",
    "Norway": "Oslo",
    "Sweden": "Stockholm",
    "Finland": "Helsinki",
    "Greece": "Athens",
    "Egypt": "Cairo",
    "Japan": "Tokyo",
    "Korea": "Seoul",
    "China": "Beijing",
    "India": "Delhi",
    "Peru": "Lima",
    "Colombia": "Bogota",
    "Kenya": "Nairobi",
    "Russia": "Moscow",
    "Canada": "Ottawa",
    "Belgium": "Brussels",
}
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy", "clear"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD"]
SYMBOLS = ["AAPL", "MSFT", "INTC", "NVDA", "AMZN", "IBM", "ORCL", "SAP"]
ANIMALS = {
    "dog": "woof",
    "cat": "meow",
    "cow": "moo",
    "duck": "quack",
    "sheep": "baa",
    "lion": "roar",
    "owl": "hoot",
    "horse": "neigh",
}
COLORS = {
    "the sky": "blue",
    "grass": "green",
    "snow": "white",
    "a banana": "yellow",
    "a tomato": "red",
    "coal": "black",
    "an orange": "orange",
}
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]

SYSTEM_PROMPTS = [
    "You are a helpful assistant.",
    "You are a friendly assistant. Answer briefly.",
    "You are tiny-chat, a small test model served by ovserve.",
    "You are a concise assistant.",
    "You help users with questions about the weather, time and money.",
]

# Tool definitions in the OpenAI "function" shape, as clients send them.
TOOLS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    },
    "get_time": {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the local time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    },
    "convert_currency": {
        "type": "function",
        "function": {
            "name": "convert_currency",
            "description": "Convert an amount of money from one currency to another.",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "from_currency": {"type": "string"},
                    "to_currency": {"type": "string"},
                },
                "required": ["amount", "from_currency", "to_currency"],
            },
        },
    },
    "get_stock_price": {
        "type": "function",
        "function": {
            "name": "get_stock_price",
            "description": "Get the latest stock price for a ticker symbol.",
            "parameters": {
                "type": "object",
                "properties": {"symbol": {"type": "string"}},
                "required": ["symbol"],
            },
        },
    },
}


@dataclass
class Example:
    """One training example: a prompt (rendered by the chat template) and the
    assistant text that follows it. ``completion`` excludes the end-of-turn
    token; the trainer appends ``<|im_end|>``."""

    messages: list[dict[str, Any]]
    completion: str
    tools: list[dict[str, Any]] | None = None
    enable_thinking: bool = False
    kind: str = "chat"
    meta: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------
# Text sources found on the machine


def _clean_sentences(text: str) -> list[str]:
    """Split prose into plain ASCII sentences of a sensible length."""
    text = re.sub(r"\s+", " ", text)
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text):
        sentence = sentence.strip()
        words = sentence.split()
        if not 6 <= len(words) <= 40:
            continue
        if not sentence.isascii() or not sentence[0].isupper() or sentence[-1] not in ".!?":
            continue
        # Drop section numbers, URLs and shouting headers: they teach noise.
        if re.search(r"https?:|www\.|[<>{}\[\]|_*=#]|\d\.\d|\(\w\)|--", sentence):
            continue
        if sum(c.isupper() for c in sentence) > len(sentence) // 4:
            continue
        out.append(sentence)
    return out


def license_texts() -> dict[str, list[str]]:
    """Sentences of each license in /usr/share/common-licenses, keyed by a
    readable license name. Symlinked duplicates (GPL -> GPL-3) are read once."""
    names = {
        "Apache-2.0": "the Apache License",
        "Artistic": "the Artistic License",
        "BSD": "the BSD license",
        "CC0-1.0": "the CC0 dedication",
        "GFDL-1.2": "the GNU Free Documentation License 1.2",
        "GFDL-1.3": "the GNU Free Documentation License",
        "GPL-1": "the GNU General Public License version 1",
        "GPL-2": "the GNU General Public License version 2",
        "GPL-3": "the GNU General Public License",
        "LGPL-2": "the GNU Library General Public License",
        "LGPL-2.1": "the GNU Lesser General Public License version 2.1",
        "LGPL-3": "the GNU Lesser General Public License",
        "MPL-1.1": "the Mozilla Public License 1.1",
        "MPL-2.0": "the Mozilla Public License",
    }
    seen: set[Path] = set()
    result: dict[str, list[str]] = {}
    if not LICENSE_DIR.is_dir():
        return result
    for path in sorted(LICENSE_DIR.iterdir()):
        real = path.resolve()
        if real in seen or path.name not in names:
            continue
        seen.add(real)
        sentences = _clean_sentences(real.read_text(encoding="utf-8", errors="ignore"))
        if sentences:
            result[names[path.name]] = sentences
    return result


def python_docstrings() -> list[tuple[str, str]]:
    """(name, first docstring sentence) for Python builtins and a few stdlib
    modules: short, well-written English about familiar names."""
    import collections
    import itertools
    import json as json_mod
    import math
    import os.path
    import string
    import textwrap

    pairs: list[tuple[str, str]] = []
    sources: list[tuple[str, Any]] = [("", builtins)] + [
        (m.__name__ + ".", m) for m in (math, os.path, string, textwrap, itertools, collections, json_mod)
    ]
    for prefix, module in sources:
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name)
            if not callable(obj):
                continue
            doc = inspect.getdoc(obj) or ""
            first = doc.strip().split("\n\n")[0]
            first = re.sub(r"\s+", " ", first)
            # Skip signature lines such as "abs(x, /)" that some builtins start with.
            if "(" in first.split(" ")[0]:
                continue
            sentences = _clean_sentences(first) or (
                [first] if 4 <= len(first.split()) <= 30 and first.isascii() and first.endswith(".") else []
            )
            if sentences:
                pairs.append((prefix + name, sentences[0]))
    return pairs


# --------------------------------------------------------------------------
# Templated dialogue generators. Each returns (user message, answer, reasoning)


def _smalltalk(rng: random.Random) -> tuple[str, str, str]:
    choice = rng.randrange(8)
    if choice == 0:
        user = rng.choice(["Hello!", "Hi!", "Hello there.", "Hi, how are you?", "Good morning!", "Hey!"])
        answer = rng.choice(
            [
                "Hello! How can I help you today?",
                "Hi! What can I do for you?",
                "Hello! I am doing well. How can I help you?",
            ]
        )
        return user, answer, "The user greets me. I should greet them back and offer help."
    if choice == 1:
        user = rng.choice(["Who are you?", "What is your name?", "What are you?", "Tell me about yourself."])
        answer = rng.choice(
            [
                "I am tiny-chat, a small language model used to test ovserve.",
                "I am a small test assistant. I can chat, call tools and think step by step.",
            ]
        )
        return user, answer, "The user asks who I am. I am a small test model, so I will say that."
    if choice == 2:
        user = rng.choice(["Thank you!", "Thanks a lot.", "Thanks!", "Great, thank you."])
        answer = rng.choice(["You are welcome!", "Glad I could help.", "You are welcome. Have a nice day!"])
        return user, answer, "The user thanks me. I will reply politely."
    if choice == 3:
        user = rng.choice(["Goodbye!", "Bye.", "See you later!"])
        answer = rng.choice(["Goodbye! Have a great day.", "Bye! Come back any time."])
        return user, answer, "The user says goodbye. I will say goodbye too."
    if choice == 4:
        animal, sound = rng.choice(sorted(ANIMALS.items()))
        user = rng.choice([f"What sound does a {animal} make?", f"What does a {animal} say?"])
        return user, f"A {animal} says {sound}.", f"The user asks about a {animal}. A {animal} says {sound}."
    if choice == 5:
        thing, color = rng.choice(sorted(COLORS.items()))
        user = rng.choice([f"What color is {thing}?", f"Which color does {thing} have?"])
        answer = f"{thing[0].upper() + thing[1:]} is {color}."
        return user, answer, f"The user asks about the color of {thing}. It is {color}."
    if choice == 6:
        a, b = rng.randrange(6), rng.randrange(5)
        user = rng.choice([f"What is {a} plus {b}?", f"How much is {a} plus {b}?", f"Add {a} and {b}."])
        return (
            user,
            f"{a} plus {b} is {a + b}.",
            f"I need to add {a} and {b}. {NUMBER_WORDS[a]} plus {NUMBER_WORDS[b]} is "
            f"{NUMBER_WORDS[a + b]}, so the answer is {a + b}.",
        )
    user = rng.choice(["Tell me a story.", "Tell me a short story.", "Write a short story."])
    animal = rng.choice(sorted(ANIMALS))
    city = rng.choice(CITIES)
    answer = (
        f"Once upon a time, a small {animal} lived in {city}. Every morning it walked to the river "
        f"and said {ANIMALS[animal]}. One day it found a friend, and they were happy together."
    )
    return user, answer, f"The user wants a story. I will tell a short story about a {animal} in {city}."


def _capital(rng: random.Random) -> tuple[str, str, str]:
    country, capital = rng.choice(sorted(COUNTRIES.items()))
    user = rng.choice(
        [
            f"What is the capital of {country}?",
            f"Which city is the capital of {country}?",
            f"Tell me the capital of {country}.",
            f"capital of {country}?",
        ]
    )
    return (
        user,
        f"The capital of {country} is {capital}.",
        f"The user asks for the capital of {country}. The capital of {country} is {capital}.",
    )


def _docstring(rng: random.Random, docs: list[tuple[str, str]]) -> tuple[str, str, str]:
    name, sentence = rng.choice(docs)
    user = rng.choice(
        [
            f"What does {name} do in Python?",
            f"Explain the Python function {name}.",
            f"What is {name} in Python?",
        ]
    )
    return (user, sentence, f"The user asks about {name} in Python. I remember its documentation and will quote it.")


def _license(rng: random.Random, licenses: dict[str, list[str]]) -> tuple[str, str, str]:
    name = rng.choice(sorted(licenses))
    sentences = licenses[name]
    start = rng.randrange(len(sentences))
    count = rng.choice([1, 2, 2, 3])
    answer = " ".join(sentences[start : start + count])
    user = rng.choice(
        [
            f"Tell me about {name}.",
            f"What does {name} say?",
            f"Quote {name}.",
            f"Tell me something about {name}.",
            "Tell me something about software licenses.",
        ]
    )
    return (user, answer, f"The user asks about {name}. I will quote a part of the license text.")


def _repeat(rng: random.Random, licenses: dict[str, list[str]], made_up: bool = False) -> tuple[str, str, str]:
    # Echo tasks are the quickest way to make a small transformer learn to
    # attend to (and copy from) the user's message, which tool-call arguments
    # and "capital of X" answers depend on.
    # made_up (the agent recipe): mostly made-up words, which only copying, not recall, can repeat.
    from .agent_corpus import made_up_name

    if licenses and rng.random() < (0.3 if made_up else 0.6):
        text = rng.choice(licenses[rng.choice(sorted(licenses))])
    elif made_up and rng.random() < 0.7:
        text = " ".join(made_up_name(rng, rng.choice([1, 2, 3])) for _ in range(rng.randrange(1, 5)))
    else:
        text = " ".join(
            rng.choice(CITIES + sorted(COUNTRIES) + SYMBOLS + sorted(ANIMALS)) for _ in range(rng.randrange(1, 6))
        )
    user = rng.choice([f"Repeat after me: {text}", f"Say this back to me: {text}", f"Repeat: {text}"])
    return user, text, "The user wants me to repeat the text. I will repeat it exactly."


def _continue_text(rng: random.Random, licenses: dict[str, list[str]]) -> tuple[str, str, str]:
    sentences = licenses[rng.choice(sorted(licenses))]
    i = rng.randrange(len(sentences) - 1)
    return (
        f"Continue this text: {sentences[i]}",
        sentences[i + 1],
        "The user wants me to continue the text. I will write the next sentence.",
    )


# --------------------------------------------------------------------------
# Tool-calling generators


def _tool_request(rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    """A user request that needs one or more tool calls, and those calls."""
    kind = rng.randrange(10)
    if kind <= 2:
        city = rng.choice(CITIES)
        user = rng.choice(
            [
                f"What is the weather in {city}?",
                f"What's the weather like in {city}?",
                f"How is the weather in {city} today?",
                f"Is it raining in {city}?",
                f"Tell me the weather in {city}.",
                f"weather in {city}?",
            ]
        )
        return user, [{"name": "get_weather", "arguments": {"city": city}}]
    if kind == 3:
        city = rng.choice(CITIES)
        user = rng.choice(
            [
                f"What time is it in {city}?",
                f"What is the local time in {city}?",
                f"Tell me the time in {city}.",
            ]
        )
        return user, [{"name": "get_time", "arguments": {"city": city}}]
    if kind == 4:
        amount = rng.choice([5, 10, 20, 50, 100, 250, 1000, 42, 7, 300])
        src, dst = rng.sample(CURRENCIES, 2)
        user = rng.choice([f"Convert {amount} {src} to {dst}.", f"How much is {amount} {src} in {dst}?"])
        return user, [
            {"name": "convert_currency", "arguments": {"amount": amount, "from_currency": src, "to_currency": dst}}
        ]
    if kind == 5:
        symbol = rng.choice(SYMBOLS)
        user = rng.choice([f"What is the stock price of {symbol}?", f"How much is {symbol} stock worth?"])
        return user, [{"name": "get_stock_price", "arguments": {"symbol": symbol}}]
    # Several calls in one turn.
    if kind in (6, 7):
        c1, c2 = rng.sample(CITIES, 2)
        user = rng.choice(
            [
                f"What is the weather in {c1} and in {c2}?",
                f"What's the weather in {c1} and {c2}?",
                f"Tell me the weather in {c1} and in {c2}.",
                f"How is the weather in {c1} and in {c2}?",
            ]
        )
        return user, [{"name": "get_weather", "arguments": {"city": c}} for c in (c1, c2)]
    if kind == 8:
        c1, c2, c3 = rng.sample(CITIES, 3)
        if rng.random() < 0.5:
            user = f"What is the weather in {c1}, {c2} and {c3}?"
            return user, [{"name": "get_weather", "arguments": {"city": c}} for c in (c1, c2, c3)]
        user = rng.choice([f"What time is it in {c1} and in {c2}?", f"What is the local time in {c1} and {c2}?"])
        return user, [{"name": "get_time", "arguments": {"city": c}} for c in (c1, c2)]
    c1, c2 = rng.sample(CITIES, 2)
    if rng.random() < 0.5:
        user = f"What is the weather and the time in {c1}?"
        return user, [
            {"name": "get_weather", "arguments": {"city": c1}},
            {"name": "get_time", "arguments": {"city": c1}},
        ]
    user = f"What is the weather in {c1} and the time in {c2}?"
    return user, [{"name": "get_weather", "arguments": {"city": c1}}, {"name": "get_time", "arguments": {"city": c2}}]


def format_tool_calls(calls: list[dict[str, Any]]) -> str:
    """The assistant text for tool calls, exactly as the template renders them
    back in history (json.dumps default separators, like tojson)."""
    return "\n".join(
        "<tool_call>\n" + json.dumps({"name": c["name"], "arguments": c["arguments"]}) + "\n</tool_call>" for c in calls
    )


def _tool_result(rng: random.Random, call: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A plausible tool result and the sentence that reports it."""
    args = call["arguments"]
    if call["name"] == "get_weather":
        temp = rng.randrange(-5, 36)
        cond = rng.choice(CONDITIONS)
        return (
            {"city": args["city"], "temperature": temp, "condition": cond},
            f"In {args['city']} it is {cond} and {temp} degrees.",
        )
    if call["name"] == "get_time":
        time = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}"
        return {"city": args["city"], "time": time}, f"The local time in {args['city']} is {time}."
    if call["name"] == "convert_currency":
        result = round(args["amount"] * rng.uniform(0.5, 1.5), 2)
        return (
            {
                "amount": args["amount"],
                "from_currency": args["from_currency"],
                "to_currency": args["to_currency"],
                "result": result,
            },
            f"{args['amount']} {args['from_currency']} is {result} {args['to_currency']}.",
        )
    price = round(rng.uniform(20, 500), 2)
    return {"symbol": args["symbol"], "price": price}, f"{args['symbol']} is trading at {price} dollars."


def _tools_for(rng: random.Random, needed: set[str]) -> list[dict[str, Any]]:
    """A random subset and order of the tool pool that contains ``needed``."""
    names = set(needed) | {n for n in TOOLS if rng.random() < 0.5}
    ordered = sorted(names)
    rng.shuffle(ordered)
    return [TOOLS[n] for n in ordered]


def _openai_tool_calls(rng: random.Random, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Assistant tool_calls as OpenAI clients send them back; arguments are a
    JSON string or a dict, both of which the template must render the same."""
    as_string = rng.random() < 0.5
    return [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"]) if as_string else c["arguments"]},
        }
        for i, c in enumerate(calls)
    ]


# --------------------------------------------------------------------------
# Corpus assembly


def _system(rng: random.Random, force: bool = False) -> list[dict[str, Any]]:
    if force or rng.random() < 0.5:
        role = rng.choice(["system", "system", "system", "developer"])
        return [{"role": role, "content": rng.choice(SYSTEM_PROMPTS)}]
    return []


def _with_thinking(answer: str, reasoning: str, thinking: bool) -> str:
    return f"<think>\n{reasoning}\n</think>\n\n{answer}" if thinking else answer


def build_corpus(n_examples: int, seed: int, agent_share: float = 0.0) -> list[Example]:
    """Generate ``n_examples`` examples deterministically from ``seed``; ``agent_share`` of them from
    agent_corpus (the experimental agent recipe; 0 for the bundled models)."""
    rng = random.Random(seed)
    licenses = license_texts()
    docs = python_docstrings()
    examples: list[Example] = []

    def plain_turn() -> tuple[str, str, str]:
        r = rng.random()
        if r < 0.24:
            return _smalltalk(rng)
        if r < 0.44:
            return _capital(rng)
        if r < 0.60:
            return _repeat(rng, licenses, made_up=agent_share > 0)
        if r < 0.70 and docs:
            return _docstring(rng, docs)
        if r < 0.92 and licenses:
            return _license(rng, licenses)
        if licenses:
            return _continue_text(rng, licenses)
        return _smalltalk(rng)

    if agent_share:
        # Agent behaviour (generated tools, results, JSON answers) is its own share, drawn from the same rng.
        from .agent_corpus import agent_examples

        examples += agent_examples(rng, int(n_examples * agent_share), plain_turn)
    while len(examples) < n_examples:
        thinking = rng.random() < 0.3
        r = rng.random()
        if r < 0.38:
            # Plain chat, sometimes after an earlier exchange so the model learns
            # to answer the last user message.
            messages = _system(rng)
            if rng.random() < 0.2:
                u0, a0, _ = plain_turn()
                messages += [{"role": "user", "content": u0}, {"role": "assistant", "content": a0}]
            user, answer, reasoning = plain_turn()
            messages.append({"role": "user", "content": user})
            examples.append(
                Example(messages, _with_thinking(answer, reasoning, thinking), enable_thinking=thinking, kind="chat")
            )
        elif r < 0.46:
            # Tools are offered but not needed: answer in plain text.
            user, answer, reasoning = plain_turn()
            tools = _tools_for(rng, set())
            messages = [*_system(rng, force=rng.random() < 0.5), {"role": "user", "content": user}]
            examples.append(
                Example(
                    messages,
                    _with_thinking(answer, reasoning + " No tool is needed.", thinking),
                    tools=tools,
                    enable_thinking=thinking,
                    kind="chat_with_tools",
                )
            )
        elif r < 0.78:
            # Tool calls (one or several).
            user, calls = _tool_request(rng)
            tools = _tools_for(rng, {c["name"] for c in calls})
            messages = [*_system(rng), {"role": "user", "content": user}]
            what = " and ".join(
                f"{c['name']} with " + ", ".join(f"{k} {v}" for k, v in c["arguments"].items()) for c in calls
            )
            reasoning = f"The user asks: {user} I can use the tools. I will call {what}."
            examples.append(
                Example(
                    messages,
                    _with_thinking(format_tool_calls(calls), reasoning, thinking),
                    tools=tools,
                    enable_thinking=thinking,
                    kind="tool_call" if len(calls) == 1 else "multi_tool_call",
                )
            )
        else:
            # Tool results in the history: answer from them in plain text.
            user, calls = _tool_request(rng)
            tools = _tools_for(rng, {c["name"] for c in calls})
            results = [_tool_result(rng, c) for c in calls]
            messages = (
                _system(rng)
                + [
                    {"role": "user", "content": user},
                    {"role": "assistant", "content": None, "tool_calls": _openai_tool_calls(rng, calls)},
                ]
                + [
                    {"role": "tool", "tool_call_id": f"call_{i}", "content": json.dumps(res)}
                    for i, (res, _) in enumerate(results)
                ]
            )
            answer = " ".join(sentence for _, sentence in results)
            reasoning = "The tools returned their results. I will report them to the user."
            examples.append(
                Example(
                    messages,
                    _with_thinking(answer, reasoning, thinking),
                    tools=tools,
                    enable_thinking=thinking,
                    kind="tool_result",
                )
            )
    if agent_share:
        rng.shuffle(examples)  # the tokenizer learns from the first third: every kind must be there
    return examples


def corpus_fingerprint(examples: list[Example]) -> str:
    """SHA-256 of the corpus, recorded in the model card so a rebuild on
    another machine (other license files, other Python) can be told apart."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps([ex.messages, ex.completion, ex.tools, ex.enable_thinking], sort_keys=True).encode())
    return h.hexdigest()
