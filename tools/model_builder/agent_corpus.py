"""Agent behaviour for tiny-chat: generated tools, tool results and JSON answers, with a held-out split.

What agent frameworks expect of a model, taught on generated material so that it generalises
rather than recalls:

* call an offered tool when the question asks for what the tool does: the question names a
  *topic* ("the air quality in Oslo") and the matching tool's name and description name it too
  (``get_air_quality``, "Look up the air quality in a city."), with the argument value copied
  from the question; answer in text when no offered tool fits;
* after a tool result, answer in text with the result's values (or, when the client offers a
  ``final_result`` tool as pydantic-ai does, call that with them);
* JSON answers with short string values that close, with the fields copied from a schema when
  the instructions hold one (instructor, pydantic-ai's prompted output), and values copied from
  the user's text or a tool's result.

Topics, places, people and whole schemas are split into a training part and a held-out part
(:data:`HELD_OUT`); the held-out part never appears in the corpus and is what the build's scorer
(``agent_eval``) and the end-to-end client tests use.

The training tools come from a wide pool (``training_topic``, ``make_tool(..., wide=True)``): about two
thirds of their topics are made up ("the velmor index in Paris" -> ``get_velmor_index``), so the only way
to write the right name is to copy it from the offered tools, and 30 % of their parameters are renamed
(``where``, ``kron_id``), so the argument's name must be copied from the schema too. Trained on the listed
topics alone, a 2 M-parameter model wrote the names it was trained on and chose no held-out tool; on this
pool it chose 0.375 of them after 7,000 steps of 32k tokens (issue 47). The scorer's held-out tools keep
the listed shapes (``make_tool`` without ``wide``), so its scores stay comparable across recipes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .corpus import Example, _openai_tool_calls, format_tool_calls

# ---- vocabulary ----

# (topic, what its argument is). The topic is the noun phrase a question and a tool's name share.
PLACE_TOPICS = [
    "weather", "local time", "temperature", "forecast", "humidity", "wind speed", "sunrise time",
    "sunset time", "rainfall", "traffic", "timezone", "elevation", "currency", "language", "mayor",
    "news", "hotel prices", "rent", "pollen count", "uv index", "snow depth", "museum hours",
    "parking fees", "bus schedule", "crime rate", "tide times", "zip code", "events", "restaurants",
    "public holidays", "water temperature", "noise level", "gas prices", "train schedule",
    "air quality", "population", "area", "weekend events", "cinema times", "bike rentals",
]  # fmt: skip
COMPANY_TOPICS = [
    "stock price", "market cap", "revenue", "headquarters", "ceo", "employee count", "dividend",
    "earnings", "founding year", "trading volume", "credit rating", "profit",
]  # fmt: skip
PERSON_TOPICS = [
    "age", "email address", "phone number", "birthday", "job title", "home city", "manager",
    "salary", "office number", "favorite color", "team", "start date",
]  # fmt: skip

# Never in the corpus: the scorer's and the client tests' tools, places and people.
HELD_OUT_TOPICS = {"air quality", "population", "humidity", "market cap", "phone number", "sunset time",
                   "museum hours", "dividend", "team", "cinema times"}  # fmt: skip
HELD_OUT_PLACES = [
    "San Francisco", "New York", "Buenos Aires", "Cape Town", "Kyoto", "Hanoi", "Manila", "Reykjavik",
    "Marseille", "Krakow", "Osaka", "Santiago", "Havana", "Nairobi West", "Tallinn", "Porto",
]  # fmt: skip
HELD_OUT_PEOPLE = ["Maria Lopez", "Kenji Sato", "Olga Petrova", "Samuel Okafor", "Lucia Rossi", "Tom Baker"]
HELD_OUT_COMPANIES = ["ACME", "Globex", "Initech", "Umbrella"]

TRAIN_PLACES = [
    "Paris", "Rome", "London", "Berlin", "Madrid", "Lisbon", "Vienna", "Prague", "Warsaw", "Dublin",
    "Oslo", "Stockholm", "Helsinki", "Athens", "Cairo", "Tokyo", "Seoul", "Beijing", "Delhi", "Sydney",
    "Toronto", "Chicago", "Boston", "Denver", "Seattle", "Lima", "Bogota", "Lagos", "Moscow",
    "Amsterdam", "Brussels", "Zurich", "Munich", "Milan", "Barcelona", "Los Angeles", "Hong Kong",
    "Mexico City", "Tel Aviv", "Sao Paulo", "Las Vegas", "New Delhi", "Abu Dhabi", "Kuala Lumpur",
]  # fmt: skip
TRAIN_PEOPLE = [
    "Alice Smith", "Bob Jones", "Carol White", "David Brown", "Emma Green", "Frank Miller", "Grace Hall",
    "Henry Ford", "Irene Adler", "Jack Stone", "Karen Young", "Leo King", "Mia Wong", "Noah Clark",
]  # fmt: skip
TRAIN_COMPANIES = ["AAPL", "MSFT", "INTC", "NVDA", "AMZN", "IBM", "ORCL", "SAP", "Contoso", "Fabrikam"]

# Syllables of made-up names: most places and people in the corpus are new strings, so the model
# learns to copy whatever the question holds, not a list.
_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr", "st", "tr"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]
_CODAS = ["", "", "n", "r", "l", "s", "m", "x"]

PLACE_PARAMS = ["city", "location", "place", "town", "city_name"]
COMPANY_PARAMS = ["symbol", "ticker", "company"]
PERSON_PARAMS = ["name", "person", "employee", "full_name"]
PARAM_DESCRIPTIONS = {
    "city": ["The city name.", "Name of the city.", ""],
    "location": ["The city and state, e.g. Paris, France", "A city name.", ""],
    "place": ["The place to look up.", ""],
    "town": ["The town name.", ""],
    "city_name": ["The name of the city.", ""],
    "symbol": ["The stock ticker symbol.", ""],
    "ticker": ["Ticker symbol, e.g. AAPL.", ""],
    "company": ["The company name.", ""],
    "name": ["The person's full name.", ""],
    "person": ["Who to look up.", ""],
    "employee": ["The employee's name.", ""],
    "full_name": ["First and last name.", ""],
}
NAME_PATTERNS = ["get_{}", "get_{}", "lookup_{}", "fetch_{}", "check_{}", "find_{}", "{}_lookup", "get_current_{}"]
DESCRIPTION_PATTERNS = {
    "place": ["Get the {} in a city.", "Look up the current {} for a location.", "Returns the {} of a place.",
              "Get the {} for a given city.", "Fetch today's {} in a town."],
    "company": ["Get the {} of a company.", "Look up the latest {} for a ticker symbol.", "Returns a company's {}."],
    "person": ["Get the {} of a person.", "Look up an employee's {}.", "Returns the {} of someone by name."],
}  # fmt: skip
QUESTION_PATTERNS = {
    "place": ["What is the {t} in {v}?", "What's the {t} like in {v}?", "Tell me the {t} in {v}.",
              "Can you check the {t} for {v}?", "{T} in {v}?", "How is the {t} in {v} today?",
              "Look up the {t} in {v}, please.", "I need the {t} for {v}."],
    "company": ["What is the {t} of {v}?", "Tell me the {t} of {v}.", "Look up the {t} for {v}.",
                "What's {v}'s {t}?", "{T} of {v}?"],
    "person": ["What is the {t} of {v}?", "Tell me the {t} of {v}.", "Can you find the {t} of {v}?",
               "What's {v}'s {t}?", "Look up {v}'s {t}, please."],
}  # fmt: skip
RESULT_WORDS = ["good", "poor", "high", "low", "moderate", "sunny", "cloudy", "rainy", "open", "closed",
                "blue", "green", "busy", "quiet", "normal", "unknown"]  # fmt: skip
AGENT_SYSTEMS = [
    "You are a helpful assistant.",
    "You are a helpful agent. Use the tools when they help.",
    "You are an assistant that answers questions using the available tools.",
    "Answer the user's question.",
    "You are a weather and facts assistant.",
    "Be concise.",
]

HELD_OUT = {
    "topics": sorted(HELD_OUT_TOPICS),
    "places": HELD_OUT_PLACES,
    "people": HELD_OUT_PEOPLE,
    "companies": HELD_OUT_COMPANIES,
}
# Every word of them, lower-cased: a made-up word or a generated name never is one ("Porto", "Rossi" and
# "Tom Baker" are spellable from the syllables below), so no held-out word reaches the corpus that way.
HELD_OUT_WORDS = frozenset(word.lower() for group in HELD_OUT.values() for phrase in group for word in phrase.split())

# ---- the wide pool (training tools only) ----

GENERATED_TOPIC_SHARE = 2 / 3  # training tools whose topic is a made-up word (the rest: the listed topics)
RENAMED_PARAM_SHARE = 0.3  # training tools whose parameter is renamed from WIDE_PARAMS or made up
# Real nouns a made-up topic word may take ("velmor index"); none of them is a held-out word.
TOPIC_NOUNS = ["level", "index", "rate", "score", "status", "count", "price", "report", "code", "schedule",
               "balance", "rating", "size", "limit", "total", "record", "plan", "budget", "ranking",
               "stock"]  # fmt: skip
WIDE_PARAMS = ["query", "target", "subject", "key", "item", "entity", "where", "who", "input", "value", "id",
               "label", "location_name", "area", "person_name", "ref", "region", "site", "owner", "member"]  # fmt: skip
PARAM_SUFFIXES = ["id", "name", "key", "ref", "code"]
# Training tools also take verbs the scorer's never do, so the verb is copied, not guessed ("check_x" for "get_x").
WIDE_NAME_PATTERNS = [*NAME_PATTERNS, "query_{}", "read_{}", "{}_info", "search_{}", "show_{}", "{}", "load_{}",
                      "{}_status", "retrieve_{}"]  # fmt: skip
KINDS = ["place", "place", "company", "person"]  # the kinds a made-up topic is about


def made_up_name(rng: random.Random, words: int = 1) -> str:
    """A capitalised made-up name of one or more words ("Velmor", "Port Tazi")."""
    parts: list[str] = []
    while len(parts) < words:
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(rng.choice([2, 2, 3]))
        )
        if word not in HELD_OUT_WORDS:
            parts.append(word.capitalize())
    return " ".join(parts)


def training_topic(rng: random.Random, kind: str | None = None) -> tuple[str, str]:
    """A training topic and its kind (place | company | person): a listed one, or (``GENERATED_TOPIC_SHARE``)
    a made-up word, alone or with a noun ("velmor", "kradi index"); ``kind``: only topics of that kind."""
    if rng.random() >= GENERATED_TOPIC_SHARE:
        listed = [t for t in topics(False) if kind is None or topic_kind(t) == kind]
        topic = rng.choice(listed)
        return topic, topic_kind(topic)
    word = made_up_name(rng).lower()
    r = rng.random()
    if r >= 0.35:  # alone, with a noun, or two made-up words
        word += " " + (rng.choice(TOPIC_NOUNS) if r < 0.85 else made_up_name(rng).lower())
    return word, kind or rng.choice(KINDS)


def training_topics(rng: random.Random, n: int, kind: str | None = None) -> list[tuple[str, str]]:
    """``n`` distinct training topics (``training_topic``)."""
    chosen: dict[str, str] = {}
    while len(chosen) < n:
        topic, of = training_topic(rng, kind)
        chosen.setdefault(topic, of)
    return list(chosen.items())


def renamed_param(rng: random.Random) -> str:
    """A parameter name from the wide pool: a listed word, or a made-up one (``kron``, ``velmor_id``)."""
    if rng.random() < 0.5:
        return rng.choice(WIDE_PARAMS)
    word = made_up_name(rng).lower()
    return word if rng.random() < 0.5 else f"{word}_{rng.choice(PARAM_SUFFIXES)}"


def topic_kind(topic: str) -> str:
    """place | company | person."""
    return "place" if topic in PLACE_TOPICS else "company" if topic in COMPANY_TOPICS else "person"


def topics(held_out: bool) -> list[str]:
    """The training topics, or the held-out ones."""
    every = PLACE_TOPICS + COMPANY_TOPICS + PERSON_TOPICS
    return [t for t in every if (t in HELD_OUT_TOPICS) == held_out]


def value_for(rng: random.Random, kind: str, held_out: bool) -> str:
    """An argument value of ``kind``: held-out ones for the scorer, else listed or made up."""
    if held_out:
        return rng.choice({"place": HELD_OUT_PLACES, "company": HELD_OUT_COMPANIES, "person": HELD_OUT_PEOPLE}[kind])
    if kind == "company":
        return rng.choice(TRAIN_COMPANIES) if rng.random() < 0.5 else made_up_name(rng)
    if kind == "person":
        return rng.choice(TRAIN_PEOPLE) if rng.random() < 0.3 else made_up_name(rng, 2)
    return rng.choice(TRAIN_PLACES) if rng.random() < 0.4 else made_up_name(rng, rng.choice([1, 1, 1, 2]))


@dataclass
class Tool:
    """A generated function tool: its topic, its OpenAI definition and its argument's name."""

    topic: str
    definition: dict[str, Any]
    param: str
    kind: str = "place"  # what the topic is about: place | company | person

    @property
    def name(self) -> str:
        return str(self.definition["function"]["name"])


def make_tool(rng: random.Random, topic: str, kind: str | None = None, *, wide: bool = False) -> Tool:
    """A tool for ``topic`` (about a ``kind``, else the listed topic's) in one of the shapes clients send;
    ``wide``: a training tool, its verb from ``WIDE_NAME_PATTERNS`` and its parameter renamed
    ``RENAMED_PARAM_SHARE`` of the time (without it, the draws are the scorer's, unchanged)."""
    kind = kind or topic_kind(topic)
    slug = topic.replace(" ", "_")
    name = rng.choice(WIDE_NAME_PATTERNS if wide else NAME_PATTERNS).format(slug)
    param = rng.choice({"place": PLACE_PARAMS, "company": COMPANY_PARAMS, "person": PERSON_PARAMS}[kind])
    prop: dict[str, Any] = {"type": "string"}
    if description := rng.choice(PARAM_DESCRIPTIONS[param]):
        prop["description"] = description  # it still says what the value is when the name is renamed
    if wide and rng.random() < RENAMED_PARAM_SHARE:
        param = renamed_param(rng)
    parameters: dict[str, Any] = {"type": "object", "properties": {param: prop}, "required": [param]}
    if rng.random() < 0.3:
        parameters["additionalProperties"] = False
    function: dict[str, Any] = {"name": name}
    if rng.random() < 0.92:
        function["description"] = rng.choice(DESCRIPTION_PATTERNS[kind]).format(topic)
    function["parameters"] = parameters
    return Tool(topic, {"type": "function", "function": function}, param, kind)


def question(rng: random.Random, topic: str, value: str, kind: str | None = None) -> str:
    """A user question about ``topic`` (about a ``kind``, else the listed topic's) for ``value``."""
    pattern = rng.choice(QUESTION_PATTERNS[kind or topic_kind(topic)])
    return pattern.format(t=topic, T=topic[0].upper() + topic[1:], v=value)


def result_value(rng: random.Random) -> str | int:
    """What a generated tool returns: a word, a number or a time."""
    r = rng.random()
    if r < 0.4:
        return rng.choice(RESULT_WORDS)
    if r < 0.8:
        return rng.randrange(1, 2000)
    return f"{rng.randrange(24):02d}:{rng.randrange(60):02d}"


def tool_output(rng: random.Random, tool: Tool, value: str, result: str | int) -> str:
    """A tool message's content: a JSON object (most tools) or a sentence (the Agents SDK's str tools)."""
    key = tool.topic.replace(" ", "_")
    if rng.random() < 0.3:
        return (
            f"The {tool.topic} in {value} is {result}."
            if tool.kind == "place"
            else (f"The {tool.topic} of {value} is {result}.")
        )
    data: dict[str, Any] = {tool.param: value, key: result} if rng.random() < 0.7 else {key: result}
    return json.dumps(data)


def answer_sentence(tool: Tool, value: str, result: str | int) -> str:
    """The text answer that reports a tool's result."""
    preposition = "in" if tool.kind == "place" else "of"
    return f"The {tool.topic} {preposition} {value} is {result}."


def _as_calls(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"name": name, "arguments": arguments} for name, arguments in calls]


def call_text(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """Hermes tool-call blocks, as the template renders them back."""
    return format_tool_calls(_as_calls(calls))


def _openai_calls(rng: random.Random, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The calls as a client sends them back (arguments a JSON string or an object)."""
    return _openai_tool_calls(rng, _as_calls(calls))


def _system(rng: random.Random) -> list[dict[str, Any]]:
    return [{"role": "system", "content": rng.choice(AGENT_SYSTEMS)}] if rng.random() < 0.7 else []


# ---- the agent generators ----


def _topic(rng: random.Random, held_out: bool) -> tuple[str, str]:
    """A topic and its kind: a held-out one, or one of the wide training pool."""
    if held_out:
        topic = rng.choice(topics(True))
        return topic, topic_kind(topic)
    return training_topic(rng)


def _tool(rng: random.Random, topic: tuple[str, str], held_out: bool) -> Tool:
    """The tool for ``topic``: the scorer's shapes when held out, else the wide pool's."""
    return make_tool(rng, topic[0], topic[1], wide=not held_out)


def _offered(rng: random.Random, needed: list[Tool], held_out: bool) -> list[Tool]:
    """``needed`` plus up to three other tools, shuffled."""
    names = {t.topic for t in needed}
    count = rng.choice([0, 0, 1, 1, 2, 3])
    if held_out:
        others = [(t, topic_kind(t)) for t in rng.sample([t for t in topics(True) if t not in names], count)]
    else:
        others = [t for t in training_topics(rng, count + len(names)) if t[0] not in names][:count]
    tools = needed + [_tool(rng, t, held_out) for t in others]
    rng.shuffle(tools)
    return tools


def call_example(rng: random.Random, held_out: bool = False) -> Example:
    """A question one offered tool answers: call it with the value from the question."""
    topic = _topic(rng, held_out)
    tool = _tool(rng, topic, held_out)
    value = value_for(rng, tool.kind, held_out)
    tools = _offered(rng, [tool], held_out)
    definitions = [t.definition for t in tools]
    if rng.random() < 0.15:  # pydantic-ai's first turn: its output tool is offered beside the others
        definitions.append(final_result_tool(rng, {tool.param: value, tool.topic.replace(" ", "_"): result_value(rng)}))
    messages = [*_system(rng), {"role": "user", "content": question(rng, tool.topic, value, tool.kind)}]
    completion = call_text([(tool.name, {tool.param: value})])
    return Example(messages, completion, tools=definitions, kind="agent_call", meta={"tool": tool.name, "value": value})


def parallel_example(rng: random.Random) -> Example:
    """Two values or two topics in one question: two calls in one turn."""
    if rng.random() < 0.5:
        tool = _tool(rng, training_topic(rng, "place"), False)
        v1, v2 = value_for(rng, "place", False), value_for(rng, "place", False)
        user = rng.choice(["What is the {t} in {a} and in {b}?", "Tell me the {t} in {a} and {b}."]).format(
            t=tool.topic, a=v1, b=v2
        )
        calls = [(tool.name, {tool.param: v1}), (tool.name, {tool.param: v2})]
        needed = [tool]
    else:
        a, b = (_tool(rng, t, False) for t in training_topics(rng, 2, "place"))
        value = value_for(rng, "place", False)
        user = rng.choice(["What is the {a} and the {b} in {v}?", "Tell me the {a} and the {b} in {v}."]).format(
            a=a.topic, b=b.topic, v=value
        )
        calls = [(a.name, {a.param: value}), (b.name, {b.param: value})]
        needed = [a, b]
    tools = _offered(rng, needed, False)
    messages = [*_system(rng), {"role": "user", "content": user}]
    return Example(messages, call_text(calls), tools=[t.definition for t in tools], kind="agent_parallel")


def no_fit_example(rng: random.Random, plain: tuple[str, str, str] | None) -> Example:
    """Tools are offered but none fits: small talk answered as such, or a topic no tool covers."""
    if plain is not None:
        user, answer, _ = plain
        tools = [_tool(rng, t, False) for t in training_topics(rng, rng.choice([1, 1, 2, 3]))]
    else:
        (asked, kind), *offered = training_topics(rng, 1 + rng.choice([1, 1, 2]))
        value = value_for(rng, kind, False)
        user = question(rng, asked, value, kind)
        tools = [_tool(rng, t, False) for t in offered]
        answer = rng.choice(
            [f"Sorry, none of my tools covers the {asked}.", f"Sorry, no tool I have looks up the {asked}."]
        )
    messages = [*_system(rng), {"role": "user", "content": user}]
    return Example(messages, answer, tools=[t.definition for t in tools], kind="agent_no_fit")


def result_example(rng: random.Random, held_out: bool = False) -> Example:
    """After the tool's result: answer in text with its value (pydantic-ai: call final_result with it)."""
    tool = _tool(rng, _topic(rng, held_out), held_out)
    value = value_for(rng, tool.kind, held_out)
    result = result_value(rng)
    tools = _offered(rng, [tool], held_out)
    user = question(rng, tool.topic, value, tool.kind)
    calls = [(tool.name, {tool.param: value})]
    messages = [
        *_system(rng),
        {"role": "user", "content": user},
        {"role": "assistant", "content": None if rng.random() < 0.5 else "", "tool_calls": _openai_calls(rng, calls)},
        {"role": "tool", "tool_call_id": "call_0", "content": tool_output(rng, tool, value, result)},
    ]
    key = tool.topic.replace(" ", "_")
    if rng.random() < 0.1:
        # pydantic-ai's default output: a final_result tool whose arguments are the answer.
        final = final_result_tool(rng, {tool.param: value, key: result})
        definitions = [t.definition for t in tools] + [final]
        completion = call_text([("final_result", {tool.param: value, key: result})])
        return Example(messages, completion, tools=definitions, kind="agent_final_result",
                       meta={"value": value, "result": result})  # fmt: skip
    return Example(messages, answer_sentence(tool, value, result), tools=[t.definition for t in tools],
                   kind="agent_result", meta={"value": value, "result": result})  # fmt: skip


def two_results_example(rng: random.Random) -> Example:
    """Two calls answered in one turn: the answer reports both results."""
    a, b = (_tool(rng, t, False) for t in training_topics(rng, 2, "place"))
    value = value_for(rng, "place", False)
    r1, r2 = result_value(rng), result_value(rng)
    user = rng.choice(["What is the {a} and the {b} in {v}?", "Tell me the {a} and the {b} in {v}."]).format(
        a=a.topic, b=b.topic, v=value
    )
    calls = [(a.name, {a.param: value}), (b.name, {b.param: value})]
    messages = [
        *_system(rng),
        {"role": "user", "content": user},
        {"role": "assistant", "content": None, "tool_calls": _openai_calls(rng, calls)},
        {"role": "tool", "tool_call_id": "call_0", "content": tool_output(rng, a, value, r1)},
        {"role": "tool", "tool_call_id": "call_1", "content": tool_output(rng, b, value, r2)},
    ]
    answer = answer_sentence(a, value, r1) + " " + answer_sentence(b, value, r2)
    return Example(messages, answer, tools=[a.definition, b.definition], kind="agent_two_results")


def handoff_tool(agent: str, topic: str) -> dict[str, Any]:
    """The OpenAI Agents SDK's handoff tool to ``agent`` (whose handoff description names ``topic``)."""
    return {
        "type": "function",
        "function": {
            "name": f"transfer_to_{agent}",
            "description": f"Handoff to the {agent} agent to handle the request. Answers questions about the {topic}.",
            "parameters": {"additionalProperties": False, "type": "object", "properties": {}, "required": []},
        },
    }


def handoff_example(rng: random.Random) -> Example:
    """A triage agent hands off to the agent whose description names the question's topic ..."""
    chosen = training_topics(rng, rng.choice([1, 2, 2, 3]))
    topic, kind = chosen[0]
    agents = {t: t.replace(" ", "_") + rng.choice(["_agent", "_expert", "_assistant"]) for t, _ in chosen}
    value = value_for(rng, kind, False)
    tools = [handoff_tool(agents[t], t) for t, _ in chosen]
    rng.shuffle(tools)
    system = {
        "role": "system",
        "content": rng.choice(
            [
                "You are a triage agent. Hand off to the right agent.",
                "Route the user to the right agent.",
                *AGENT_SYSTEMS,
            ]
        ),
    }
    user = {"role": "user", "content": question(rng, topic, value, kind)}
    completion = call_text([(f"transfer_to_{agents[topic]}", {})])
    if rng.random() < 0.5:
        return Example([system, user], completion, tools=tools, kind="agent_handoff")
    # ... and the agent it handed off to calls its own tool (the history still holds the transfer).
    tool = _tool(rng, chosen[0], False)
    transfer = [(f"transfer_to_{agents[topic]}", {})]
    messages = [
        {"role": "system", "content": rng.choice(AGENT_SYSTEMS)},
        user,
        {"role": "assistant", "content": None, "tool_calls": _openai_calls(rng, transfer)},
        {"role": "tool", "tool_call_id": "call_0", "content": json.dumps({"assistant": agents[topic]})},
    ]
    completion = call_text([(tool.name, {tool.param: value})])
    return Example(messages, completion, tools=[tool.definition], kind="agent_after_handoff")


def final_result_tool(rng: random.Random, fields: dict[str, Any]) -> dict[str, Any]:
    """pydantic-ai's output tool for a model of ``fields`` (name -> an example value, which gives the type)."""
    properties = {
        f: {"title": f.replace("_", " ").title(), "type": "integer" if isinstance(v, int) else "string"}
        for f, v in fields.items()
    }
    return {
        "type": "function",
        "function": {
            "name": "final_result",
            "description": "The final response which ends this conversation",
            "parameters": {"properties": properties, "required": list(fields), "type": "object"},
        },
    }


# ---- JSON answers ----

# (field, json type, how a value is written into the user's text)
FACT_FIELDS = {
    "name": "string", "city": "string", "country": "string", "age": "integer", "year": "integer",
    "title": "string", "count": "integer", "price": "number", "color": "string", "animal": "string",
}  # fmt: skip
COLOR_WORDS = ["red", "green", "blue", "yellow", "black", "white", "purple", "orange"]
ANIMAL_WORDS = ["dog", "cat", "horse", "owl", "lion", "duck", "cow", "sheep"]
# How clients ask for JSON in words, as they write it: instructor's JSON and MD_JSON system prompt (its dedent
# leaves the indentation, the schema is indented by 2) and pydantic-ai's prompted output (a compact schema).
INSTRUCTIONS = {
    "instructor_json": (
        "\n            As a genius expert, your task is to understand the content and provide\n            the parsed "
        "objects in json that match the following json_schema:\n\n\n            {schema_indented}\n\n            "
        "Make sure to return an instance of the JSON, not the schema itself\n"
    ),
    "pydantic_prompted": (
        "\nAlways respond with a JSON object that's compatible with this schema:\n\n{schema}\n\n"
        "Don't include any text or Markdown fencing before or after.\n"
    ),
    "plain": "Answer in JSON with the fields {fields}.",
    "schema": "Reply with a JSON object matching this schema: {schema}",
}
MD_JSON_ASK = "Return the correct JSON response within a ```json codeblock. not the JSON_SCHEMA"


def instruction(style: str, schema: dict[str, Any]) -> str:
    """The system prompt of ``style`` for ``schema``."""
    return INSTRUCTIONS[style].format(
        schema=json.dumps(schema), schema_indented=json.dumps(schema, indent=2), fields=", ".join(schema["properties"])
    )


def _fact(rng: random.Random, field: str) -> tuple[Any, str]:
    """A value of ``field`` and the clause that states it in prose."""
    if field == "name":
        v = made_up_name(rng, 2) if rng.random() < 0.7 else rng.choice(TRAIN_PEOPLE)
        return v, f"the name is {v}"
    if field in ("city", "country"):
        v = value_for(rng, "place", False)
        return v, f"the {field} is {v}"
    if field == "age":
        v = rng.randrange(2, 95)
        return v, f"the age is {v}"
    if field == "year":
        v = rng.randrange(1900, 2030)
        return v, f"the year is {v}"
    if field == "count":
        v = rng.randrange(0, 500)
        return v, f"the count is {v}"
    if field == "price":
        v = round(rng.uniform(1, 500), 2)
        return v, f"the price is {v}"
    if field == "title":
        v = made_up_name(rng, rng.choice([1, 2, 3]))
        return v, f"the title is {v}"
    v = rng.choice(COLOR_WORDS if field == "color" else ANIMAL_WORDS)
    return v, f"the {field} is {v}"


def pydantic_schema(fields: list[str], title: str) -> dict[str, Any]:
    """A schema as pydantic's ``model_json_schema`` writes it."""
    properties = {f: {"title": f.replace("_", " ").title(), "type": FACT_FIELDS[f]} for f in fields}
    return {"properties": properties, "required": fields, "title": title, "type": "object"}


def json_example(rng: random.Random) -> Example:
    """Facts in the user's text -> a JSON object of them, with or without a schema in the prompt.

    Without one, the client's response_format grammar writes the keys at inference; with one
    (instructor's JSON modes, pydantic-ai's prompted output) the model copies them in order.
    """
    fields = rng.sample(sorted(FACT_FIELDS), rng.choice([1, 2, 2, 3, 3, 4]))
    facts = [_fact(rng, f) for f in fields]
    clauses = [clause for _, clause in facts]
    rng.shuffle(clauses)
    text = ", ".join(clauses[:-1]) + (" and " if len(clauses) > 1 else "") + clauses[-1]
    text = text[0].upper() + text[1:] + "."
    if rng.random() < 0.3:
        text = rng.choice(["Extract the details: ", "Parse this: ", "", "Here is some text. "]) + text
    answer = json.dumps(dict(zip(fields, (v for v, _ in facts), strict=True)))
    style = rng.choice(["none", "none", "instructor_json", "pydantic_prompted", "plain", "schema", "md_json", "tools"])
    schema = pydantic_schema(fields, rng.choice(["Details", "Record", "Item", "Answer", "Person"]))
    messages: list[dict[str, Any]] = []
    if style == "md_json":
        # instructor's MD_JSON: its ask is merged into the user's message.
        messages.append({"role": "system", "content": instruction("instructor_json", schema)})
        messages.append({"role": "user", "content": f"{text}\n\n{MD_JSON_ASK}"})
        answer = f"```json\n{answer}\n```"
    elif style == "none":
        messages += _system(rng)
        messages.append({"role": "user", "content": text})
    elif style == "tools":
        # instructor's TOOLS modes: the schema is a tool the client forces; the facts are its arguments.
        title = str(schema["title"])
        extractor = {"type": "function", "function": {
            "name": title, "parameters": schema,
            "description": f"Correctly extracted `{title}` with all the required parameters with correct types",
        }}  # fmt: skip
        messages.append({"role": "user", "content": text})
        return Example(messages, call_text([(title, json.loads(answer))]), tools=[extractor], kind="json_tools")
    else:
        messages.append({"role": "system", "content": instruction(style, schema)})
        messages.append({"role": "user", "content": text})
    # Unasked (no instruction), only a client's grammar opens the object: see train.encode_examples.
    return Example(messages, answer, kind=f"json_{style}", meta={"untrained_start": style == "none"})


def result_json_example(rng: random.Random) -> Example:
    """After a tool result, a JSON answer whose fields repeat the result's (the Agents SDK's output_type)."""
    tool = _tool(rng, training_topic(rng, "place"), False)
    topic, value = tool.topic, value_for(rng, "place", False)
    result = result_value(rng)
    key = topic.replace(" ", "_")
    calls = [(tool.name, {tool.param: value})]
    messages = [
        *_system(rng),
        {"role": "user", "content": question(rng, topic, value, "place")},
        {"role": "assistant", "content": None, "tool_calls": _openai_calls(rng, calls)},
        {"role": "tool", "tool_call_id": "call_0", "content": json.dumps({tool.param: value, key: result})},
    ]
    answer = json.dumps({tool.param: value, key: result} if rng.random() < 0.6 else {key: result, tool.param: value})
    # Trained from its first token: after a result, a grammar offering a call or this answer must find the
    # opening brace likelier than another call.
    return Example(messages, answer, tools=[tool.definition], kind="agent_result_json")


def short_json_example(rng: random.Random, plain: tuple[str, str, str]) -> Example:
    """A question with nothing to extract, answered as a small JSON object with short strings."""
    user, answer, _ = plain
    words = answer.split()
    short = " ".join(words[: rng.choice([2, 3, 4, 5])]).rstrip(".,")
    key = rng.choice(["answer", "reply", "text", "summary", "message"])
    data: dict[str, Any] = {key: short}
    if rng.random() < 0.5:
        data[rng.choice(["confidence", "score", "rating"])] = rng.randrange(1, 10)
    messages = [*_system(rng), {"role": "user", "content": user}]
    return Example(messages, json.dumps(data), kind="json_short", meta={"untrained_start": True})


# The agent share of the corpus: (share, generator of one example from the rng and the plain-turn source).
MIX: list[tuple[float, Callable[[random.Random, Callable[[], tuple[str, str, str]]], Example]]] = [
    (0.26, lambda rng, plain: call_example(rng)),
    (0.06, lambda rng, plain: parallel_example(rng)),
    (0.05, lambda rng, plain: handoff_example(rng)),
    (0.12, lambda rng, plain: no_fit_example(rng, plain() if rng.random() < 0.6 else None)),
    (0.17, lambda rng, plain: result_example(rng)),
    (0.04, lambda rng, plain: two_results_example(rng)),
    (0.08, lambda rng, plain: result_json_example(rng)),
    (0.16, lambda rng, plain: json_example(rng)),
    (0.06, lambda rng, plain: short_json_example(rng, plain())),
]


def agent_examples(rng: random.Random, n: int, plain_turn: Callable[[], tuple[str, str, str]]) -> list[Example]:
    """``n`` agent and JSON examples, each kind drawn with its ``MIX`` share."""
    out: list[Example] = []
    while len(out) < n:
        r = rng.random()
        for share, make in MIX:
            if r < share:
                out.append(make(rng, plain_turn))
                break
            r -= share
        else:  # rounding: the last kind
            out.append(MIX[-1][1](rng, plain_turn))
    return out
