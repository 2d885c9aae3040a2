"""Agent and structured-output clients run their loops against a running ovserve: which finish right.

A harness, not a test (issue 29): each flow is the client's own loop against ``--url``: the OpenAI Agents
SDK (tools with an ``output_type``, two tools, a handoff), pydantic-ai (a tool and a structured output),
LangChain (``bind_tools`` round trip, ``with_structured_output``), instructor (TOOLS, JSON, MD_JSON,
RESPONSES_TOOLS) and the openai client's ``parse`` helpers, over the tools, places and people tiny-chat's
agent recipe holds out (tools/model_builder/agent_corpus.py). It prints each flow's outcome and exits
non-zero unless all finish with the right answer; the bundled tiny-chat does not (see its model card), so
these become tests when a model passes them.

    pip install openai-agents "instructor>=1.17,<2" "pydantic-ai-slim[openai]>=2.38,<2.39" "langchain-openai>=1.7,<2"
    python tools/agent_flows.py --url http://127.0.0.1:8000/v3 --model tiny-chat

(instructor caps jiter below 0.15, which holds openai at 3.3 and pydantic-ai-slim at 2.38; later
pydantic-ai-slim releases need openai >= 3.31, whose jiter is newer.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from collections.abc import Callable
from typing import Any

import instructor
import openai
from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool as langchain_tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

MODEL = "tiny-chat"
# What the tools answer: the final answers must carry these values back.
AIR_QUALITY = {"Kyoto": "good", "Cape Town": "moderate", "Osaka": "poor"}
POPULATION = {"Kyoto": 1460, "Cape Town": 4770, "Osaka": 2750}


class AirQuality(BaseModel):
    """The Agents SDK's output_type."""

    city: str
    air_quality: str


class Population(BaseModel):
    """pydantic-ai's output type."""

    city: str
    population: int


class Person(BaseModel):
    """What the structured-output clients extract from prose."""

    name: str
    age: int


URL = "http://127.0.0.1:8000/v3"


def async_openai() -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=URL, api_key="any-key", max_retries=0, timeout=120)


def sync_openai() -> openai.OpenAI:
    return openai.OpenAI(base_url=URL, api_key="any-key", max_retries=0, timeout=120)


# The tools every client gets: topic -> (description, what it answers per city).
FACTS: dict[str, tuple[str, dict[str, Any]]] = {
    "air_quality": ("Look up the air quality in a city.", AIR_QUALITY),
    "population": ("Get the population of a city.", POPULATION),
}


def lookup(topic: str, asked: list[tuple[str, str]]) -> Callable[[str], str]:
    """``get_<topic>(city)`` as the clients' tool decorators take it (name, docstring, typed argument),
    recording each call in ``asked``."""
    description, table = FACTS[topic]

    def tool(city: str) -> str:
        asked.append((topic, city))
        return json.dumps({"city": city, topic: table[city]})

    tool.__name__ = tool.__qualname__ = f"get_{topic}"
    tool.__doc__ = description
    return tool


# ---- the OpenAI Agents SDK (Responses API) ----


def sdk_agent(**fields: Any) -> Agent[Any]:
    model = OpenAIResponsesModel(model=MODEL, openai_client=async_openai())
    return Agent(model=model, model_settings=ModelSettings(temperature=0), **fields)


def agents_sdk_tool_then_output_type() -> None:
    asked: list[tuple[str, str]] = []
    agent = sdk_agent(name="air", instructions="You are a helpful agent.",
                      tools=[function_tool(lookup("air_quality", asked))], output_type=AirQuality)  # fmt: skip
    result = asyncio.run(Runner.run(agent, "What is the air quality in Kyoto?", max_turns=4))
    assert asked == [("air_quality", "Kyoto")], asked
    assert result.final_output == AirQuality(city="Kyoto", air_quality="good"), result.final_output


def agents_sdk_two_tools() -> None:
    asked: list[tuple[str, str]] = []
    tools = [function_tool(lookup(topic, asked)) for topic in ("air_quality", "population")]
    agent = sdk_agent(name="facts", instructions="You are a helpful agent.", tools=tools)
    result = asyncio.run(Runner.run(agent, "What is the air quality and the population in Osaka?", max_turns=4))
    assert sorted(asked) == [("air_quality", "Osaka"), ("population", "Osaka")], asked
    assert "poor" in result.final_output and "2750" in result.final_output, result.final_output


def agents_sdk_handoff() -> None:
    asked: list[tuple[str, str]] = []
    expert = sdk_agent(
        name="population_agent",
        instructions="You are a helpful agent.",
        tools=[function_tool(lookup("population", asked))],
        handoff_description="Answers questions about the population.",
    )
    triage = sdk_agent(
        name="triage",
        handoffs=[expert],
        instructions="You are a triage agent. Hand off to the right agent.",
    )
    result = asyncio.run(Runner.run(triage, "What is the population in Cape Town?", max_turns=5))
    assert result.last_agent.name == "population_agent", result.last_agent.name
    assert asked == [("population", "Cape Town")], asked
    assert "4770" in result.final_output, result.final_output


# ---- pydantic-ai (Chat Completions; the output through its final_result tool) ----


def pydantic_ai_tool_and_structured_output() -> None:
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=URL, api_key="any-key"))
    agent = PydanticAgent(model, output_type=Population, model_settings={"temperature": 0})
    asked: list[tuple[str, str]] = []
    agent.tool_plain(lookup("population", asked))
    result = agent.run_sync("What is the population in Kyoto?")
    assert asked == [("population", "Kyoto")], asked
    assert result.output == Population(city="Kyoto", population=1460), result.output


# ---- LangChain ----


def langchain_model() -> ChatOpenAI:
    return ChatOpenAI(model=MODEL, base_url=URL, api_key="any-key", temperature=0, max_retries=0)


def langchain_bind_tools_round_trip() -> None:
    get_air_quality = langchain_tool(lookup("air_quality", []))

    chat = langchain_model().bind_tools([get_air_quality])
    messages: list[Any] = [HumanMessage("What is the air quality in Cape Town?")]
    first = chat.invoke(messages)
    assert [(call["name"], call["args"]) for call in first.tool_calls] == [("get_air_quality", {"city": "Cape Town"})]
    messages += [
        first,
        ToolMessage(get_air_quality.invoke(first.tool_calls[0]["args"]), tool_call_id=first.tool_calls[0]["id"]),
    ]
    final = chat.invoke(messages)
    assert not final.tool_calls and "moderate" in final.content, final


def langchain_with_structured_output() -> None:
    extract = langchain_model().with_structured_output(Person)
    assert extract.invoke("The name is Maria Lopez and the age is 41.") == Person(name="Maria Lopez", age=41)


# ---- the openai client's parse helpers ----


def openai_chat_parse() -> None:
    reply = sync_openai().chat.completions.parse(
        model=MODEL, temperature=0, response_format=Person,
        messages=[{"role": "user", "content": "The name is Kenji Sato and the age is 33."}],
    )  # fmt: skip
    assert reply.choices[0].message.parsed == Person(name="Kenji Sato", age=33)


def openai_responses_parse() -> None:
    reply = sync_openai().responses.parse(
        model=MODEL, temperature=0, text_format=Person, input="The name is Olga Petrova and the age is 58."
    )
    assert reply.output_parsed == Person(name="Olga Petrova", age=58)


# ---- instructor ----


def instructor_chat(mode: instructor.Mode) -> Callable[[], None]:
    def flow() -> None:
        patched = instructor.from_openai(sync_openai(), mode=mode)
        person = patched.chat.completions.create(
            model=MODEL, temperature=0, response_model=Person, max_retries=0,
            messages=[{"role": "user", "content": "The name is Samuel Okafor and the age is 27."}],
        )  # fmt: skip
        assert person == Person(name="Samuel Okafor", age=27), person

    return flow


def instructor_responses_tools() -> None:
    patched = instructor.from_openai(sync_openai(), mode=instructor.Mode.RESPONSES_TOOLS)
    person = patched.responses.create(
        model=MODEL, temperature=0, response_model=Person, max_retries=0,
        input=[{"role": "user", "content": "The name is Lucia Rossi and the age is 64."}],
    )  # fmt: skip
    assert person == Person(name="Lucia Rossi", age=64), person


FLOWS: dict[str, Callable[[], None]] = {
    "agents-sdk: tool, then output_type": agents_sdk_tool_then_output_type,
    "agents-sdk: two tools": agents_sdk_two_tools,
    "agents-sdk: handoff": agents_sdk_handoff,
    "pydantic-ai: tool and structured output": pydantic_ai_tool_and_structured_output,
    "langchain: bind_tools round trip": langchain_bind_tools_round_trip,
    "langchain: with_structured_output": langchain_with_structured_output,
    "openai: chat.completions.parse": openai_chat_parse,
    "openai: responses.parse": openai_responses_parse,
    "instructor: TOOLS": instructor_chat(instructor.Mode.TOOLS),
    "instructor: JSON": instructor_chat(instructor.Mode.JSON),
    "instructor: MD_JSON": instructor_chat(instructor.Mode.MD_JSON),
    "instructor: RESPONSES_TOOLS": instructor_responses_tools,
}


def main(argv: list[str] | None = None) -> int:
    """Run every flow against --url; print each outcome; 0 when all finish with the right answer."""
    global URL, MODEL
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=URL, help="the server's OpenAI base URL (default: %(default)s)")
    parser.add_argument("--model", default=MODEL, help="the model to run the flows on (default: %(default)s)")
    args = parser.parse_args(argv)
    URL, MODEL = args.url, args.model
    set_tracing_disabled(True)  # the Agents SDK would otherwise export traces to OpenAI's servers
    passed = 0
    for name, flow in FLOWS.items():
        try:
            flow()
        except Exception as error:  # a flow's failure is its outcome, reported
            last = traceback.format_exception_only(error)[-1].strip()
            print(f"FAIL  {name}: {last[:300]}")
        else:
            passed += 1
            print(f"ok    {name}")
    print(f"{passed} of {len(FLOWS)} flows finished with the right answer")
    return 0 if passed == len(FLOWS) else 1


if __name__ == "__main__":
    sys.exit(main())
