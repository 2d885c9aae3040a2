"""What tool-guided generation costs: the same streamed chat request with tools, guided and not, side by side.

A chat request with ``--tools`` function tools (the weather, time, currency and stock tools tiny-chat was trained
on, and more of the same shape) and tool_choice auto, asking for a story, so that the model opens no call and the
guide only watches for one: greedy, ``ignore_eos`` and a fixed ``max_tokens``, so every request makes the same
tokens. Two variants, told apart by the request's ``tool_guided_generation``:

    unguided -- false: no grammar
    guided   -- unset: the server's default, a triggered tag per tool on the model's call tag (hermes for tiny-chat)

The bundled tiny-chat (or ``--model DIR``) is served in-process as the tests serve it (a real gRPC server, the
engine in its own process) and called over gRPC. After one unrecorded round, ``--rounds`` paired rounds: in each,
for every concurrency, both variants run ``--waves`` waves of N concurrent streams, their order swapped every round.
Each stream's prompt starts with a number of its own, so the prefix cache does not hide the prompt.

Reported per variant and concurrency (medians over rounds of each round's median over its streams): time to first
token (what compiling the guide adds: XGrammar compiles it as the request starts), time per output token after the
first (what the grammar matcher adds to each step), and the median of the per-round ratios guided / unguided. The
answers of both variants are compared and must be the same text. tiny-chat decodes a token in well under a
millisecond, so the per-token ratio is the worst case; a real model's step dwarfs the matcher's work.

Run (from the repo root):
    PYTHONPATH=. .venv/bin/python benchmarks/tool_guided_cost.py [--rounds 5] [--concurrency 1 8] [--tools 4]
        [--max-tokens 128] [--waves 3] [--model DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import json_format

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2  # noqa: E402  (needs the repo root on sys.path)
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR, ModelSpec  # noqa: E402
from tests.conftest import TEST_SETTINGS, start_server  # noqa: E402

PROMPT = "Story {number}. Tell me a long story about a cat who sails around the world."
_numbers = itertools.count()
VARIANTS = {"unguided": False, "guided": None}  # the request's tool_guided_generation (None: unset, the default)


def tools(count: int) -> list[chat_pb2.ChatTool]:
    """``count`` tools shaped like the ones tiny-chat knows: a few typed, bounded parameters each."""
    shapes = [
        ("get_weather", {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}),
        ("get_time", {"city": {"type": "string"}}),
        ("convert_currency", {"amount": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}}),
        ("get_stock_price", {"symbol": {"type": "string", "pattern": "^[A-Z]{1,5}$"}}),
    ]
    made = []
    for index in range(count):
        name, properties = shapes[index % len(shapes)]
        parameters = {"type": "object", "properties": properties, "required": sorted(properties)}
        function = {"name": f"{name}_{index}" if index >= len(shapes) else name, "parameters": parameters}
        made.append(
            chat_pb2.ChatTool(
                type="function", function=json_format.ParseDict(function, common_pb2.FunctionDefinition())
            )
        )
    return made


@dataclass(frozen=True)
class Stream:
    """One streamed request: seconds to its first content, seconds per token after it, its text."""

    ttft: float
    per_token: float
    text: str


def request(model: str, guided: bool | None, tool_list: list, max_tokens: int, number: int):
    fields = {} if guided is None else {"tool_guided_generation": guided}
    return chat_pb2.StreamChatCompletionRequest(
        model=model,
        messages=[chat_pb2.ChatMessage(role="user", content=PROMPT.format(number=number))],
        tools=tool_list, tool_choice="auto", max_tokens=max_tokens, ignore_eos=True, temperature=0.0,
        stream_options=common_pb2.StreamOptions(include_usage=True), **fields,
    )  # fmt: skip


async def stream(stub: chat_pb2_grpc.ChatServiceStub, message) -> Stream:
    start = time.perf_counter()
    first = None
    parts: list[str] = []
    tokens = 0
    async for chunk in stub.StreamChatCompletion(message):
        for choice in chunk.choices:
            if choice.delta.content:
                first = first or time.perf_counter()
                parts.append(choice.delta.content)
        if chunk.HasField("usage"):
            tokens = chunk.usage.completion_tokens
    end = time.perf_counter()
    first = first or end
    return Stream(first - start, (end - first) / max(tokens - 1, 1), "".join(parts))


async def measure(target: str, model: str, args: argparse.Namespace) -> dict[tuple[str, int], list[Stream]]:
    tool_list = tools(args.tools)
    results: dict[tuple[str, int], list[list[Stream]]] = {}
    async with grpc.aio.insecure_channel(target) as channel:
        stub = chat_pb2_grpc.ChatServiceStub(channel)
        for round_number in range(args.rounds + 1):  # round 0 warms up and is not kept
            order = list(VARIANTS) if round_number % 2 else list(reversed(VARIANTS))
            for concurrency in args.concurrency:
                for name in order:
                    kept: list[Stream] = []
                    for _ in range(args.waves):
                        messages = [request(model, VARIANTS[name], tool_list, args.max_tokens, next(_numbers))
                                    for _ in range(concurrency)]  # fmt: skip
                        kept += await asyncio.gather(*(stream(stub, message) for message in messages))
                    if round_number:
                        results.setdefault((name, concurrency), []).append(kept)
        # The same requests both ways, once: an answer that opens no call must come out the same under the guide.
        numbers = [next(_numbers) for _ in range(4)]
        for name in VARIANTS:
            asked = [request(model, VARIANTS[name], tool_list, args.max_tokens, number) for number in numbers]
            results[(name, 0)] = [[await stream(stub, message) for message in asked]]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--tools", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--model", type=Path, default=BUNDLED_MODELS_DIR / BUNDLED_MODEL)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    server = start_server([ModelSpec("m", args.model, settings=TEST_SETTINGS)])
    try:
        results = asyncio.run(measure(server.target, "m", args))
    finally:
        server.stop()
    report = {}
    for concurrency in args.concurrency:
        rounds = list(zip(results[("unguided", concurrency)], results[("guided", concurrency)], strict=True))
        row = {}
        for label, metric in (("ttft", "ttft"), ("per_token", "per_token")):
            plain = [statistics.median(getattr(s, metric) for s in r[0]) for r in rounds]
            guided = [statistics.median(getattr(s, metric) for s in r[1]) for r in rounds]
            row[label] = {
                "unguided_ms": round(statistics.median(plain) * 1000, 3),
                "guided_ms": round(statistics.median(guided) * 1000, 3),
                "ratio": round(statistics.median(g / p for g, p in zip(guided, plain, strict=True)), 3),
            }
        report[f"concurrency {concurrency}"] = row
    same = [a.text == b.text for a, b in zip(results[("unguided", 0)][0], results[("guided", 0)][0], strict=True)]
    report["same answers guided and unguided"] = f"{sum(same)} of {len(same)}"
    print(json.dumps({"tools": args.tools, "max_tokens": args.max_tokens, "rounds": args.rounds, **report}, indent=2))


if __name__ == "__main__":
    main()
