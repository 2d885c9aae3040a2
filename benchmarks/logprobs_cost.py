"""What a logprobs request costs: chat completions with and without logprobs, side by side in one run.

Three variants of the same streamed chat request (a prompt of about 100 tokens, greedy, ``ignore_eos`` and a
fixed ``max_tokens``, so every request makes exactly the same number of tokens):

    plain    -- no logprobs
    sampler  -- logprobs true, top_logprobs 0: the sampler's own logprobs (should cost nothing extra)
    scored   -- logprobs true, top_logprobs K (default 5): alternatives from the model's scoring copy,
                compiled in the engine process at the first request that asks and run in its own thread

The bundled tiny-chat (or ``--model DIR``) is served in-process as the tests serve it (tests/conftest.py
``start_server``: a real gRPC server on a free port, the engine in its own process) and called over gRPC with
grpc.aio. First a warm-up: one request of each variant, the first scored one timed (it compiles the scoring
copy: "first use" against a second, warm scored request), the engine process's RSS read before and after;
then one unrecorded round. Then ``--rounds`` paired rounds: in each, for every concurrency, every variant runs
``--waves`` waves of N concurrent streams, the variants' order rotated every round so that none always goes
first. Each stream's prompt starts with a number of its own, so prefix caching does not hide the prompt's cost
(the scoring copy feeds every prompt anyway).

Reported per variant and concurrency (medians over rounds of each round's median over its streams): time to
first token (the first chunk with content), throughput per stream (completion tokens over the stream's whole
time, first token included) and in total (all the wave's tokens over its wall time), and the median of the
per-round ratios against plain. On a shared machine only the ratios, taken within a round, mean much.

Run (from the repo root):
    PYTHONPATH=. .venv/bin/python benchmarks/logprobs_cost.py [--rounds 5] [--concurrency 1 8]
        [--max-tokens 64] [--top-logprobs 5] [--waves 5] [--model DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2  # noqa: E402  (needs the repo root on sys.path)
from ovserve.service.engine import EngineSettings  # noqa: E402
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR, ModelSpec  # noqa: E402
from tests.conftest import ServerThread, start_server  # noqa: E402

# About 100 tokens with tiny-chat's chat template (the run prints the measured count).
PROMPT = (
    "Request {number}. Please write a short, friendly paragraph about how rainbows form after a summer storm, "
    "and why the colours always come in the same order."
)
_numbers = itertools.count()


@dataclass(frozen=True)
class Variant:
    """One way of asking: its name and the request's logprobs fields."""

    name: str
    logprobs: bool = False
    top_logprobs: int = 0


@dataclass(frozen=True)
class Stream:
    """One streamed request, measured: seconds to its first content and in all, its completion tokens."""

    ttft: float
    seconds: float
    tokens: int
    logprob_entries: int  # choices[].logprobs.content entries over the stream
    alternatives: int  # top_logprobs entries over the stream

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds


@dataclass(frozen=True)
class Wave:
    """Streams started together, and the wall time until the last one ended."""

    streams: list[Stream]
    seconds: float

    @property
    def total_tokens_per_second(self) -> float:
        return sum(stream.tokens for stream in self.streams) / self.seconds


def request(model: str, variant: Variant, max_tokens: int) -> chat_pb2.StreamChatCompletionRequest:
    """The variant's streamed chat request, with a prompt of its own and a usage chunk at the end."""
    fields = {"logprobs": True, "top_logprobs": variant.top_logprobs} if variant.logprobs else {}
    return chat_pb2.StreamChatCompletionRequest(
        model=model,
        messages=[chat_pb2.ChatMessage(role="user", content=PROMPT.format(number=next(_numbers)))],
        max_tokens=max_tokens,
        ignore_eos=True,
        temperature=0.0,
        stream_options=common_pb2.StreamOptions(include_usage=True),
        **fields,
    )


async def stream(stub: chat_pb2_grpc.ChatServiceStub, message: chat_pb2.StreamChatCompletionRequest) -> Stream:
    """Send one request and read its whole stream."""
    start = time.perf_counter()
    first = None
    tokens = entries = alternatives = 0
    async for chunk in stub.StreamChatCompletion(message):
        for choice in chunk.choices:
            if first is None and choice.delta.content:
                first = time.perf_counter()
            entries += len(choice.logprobs.content)
            alternatives += sum(len(entry.top_logprobs) for entry in choice.logprobs.content)
        if chunk.HasField("usage"):
            tokens = chunk.usage.completion_tokens
    end = time.perf_counter()
    return Stream((first or end) - start, end - start, tokens, entries, alternatives)


async def wave(
    stub: chat_pb2_grpc.ChatServiceStub, model: str, variant: Variant, streams: int, max_tokens: int
) -> Wave:
    """``streams`` concurrent requests of ``variant``."""
    messages = [request(model, variant, max_tokens) for _ in range(streams)]
    start = time.perf_counter()
    done = await asyncio.gather(*(stream(stub, message) for message in messages))
    return Wave(list(done), time.perf_counter() - start)


def check(variant: Variant, measured: Stream, max_tokens: int) -> None:
    """Each variant got what it asked for: every token, and logprobs and alternatives for each when asked."""
    entries = max_tokens if variant.logprobs else 0
    alternatives = max_tokens * variant.top_logprobs if variant.logprobs else 0
    got = (measured.tokens, measured.logprob_entries, measured.alternatives)
    if got != (max_tokens, entries, alternatives):
        raise SystemExit(
            f"{variant.name}: expected {max_tokens} tokens, {entries} logprobs and {alternatives} alternatives, "
            f"got {got[0]}, {got[1]} and {got[2]}"
        )


def engine_rss_mb(server: ServerThread, model: str) -> float | None:
    """The resident memory of ``model``'s engine process, MB; None without psutil."""
    try:
        import psutil
    except ImportError:
        return None
    for worker in server.server.registry.workers():
        if worker.name == model and worker.pid is not None:
            return psutil.Process(worker.pid).memory_info().rss / 2**20
    return None


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def run(args: argparse.Namespace, server: ServerThread) -> None:
    variants = [Variant("plain"), Variant("sampler", True, 0), Variant("scored", True, args.top_logprobs)]
    model = args.name
    async with grpc.aio.insecure_channel(server.target) as channel:
        stub = chat_pb2_grpc.ChatServiceStub(channel)

        # Warm-up: each variant once, the scoring copy's compilation timed and its memory read.
        for variant in variants[:2]:
            (first,) = (await wave(stub, model, variant, 1, args.max_tokens)).streams
            check(variant, first, args.max_tokens)
        rss_before = engine_rss_mb(server, model)
        (cold,) = (await wave(stub, model, variants[2], 1, args.max_tokens)).streams
        rss_after = engine_rss_mb(server, model)
        (warm,) = (await wave(stub, model, variants[2], 1, args.max_tokens)).streams
        check(variants[2], cold, args.max_tokens)
        check(variants[2], warm, args.max_tokens)
        for concurrency in args.concurrency:  # an unrecorded round, every variant at every concurrency
            for variant in variants:
                for measured in (await wave(stub, model, variant, concurrency, args.max_tokens)).streams:
                    check(variant, measured, args.max_tokens)

        prompt_tokens = await count_prompt_tokens(stub, model)
        print(
            f"model {model} ({args.model}), prompt {prompt_tokens} tokens, max_tokens {args.max_tokens} "
            f"(ignore_eos, greedy), scored: top_logprobs {args.top_logprobs}, {args.rounds} rounds x {args.waves} "
            f"waves per variant and concurrency"
        )
        print(
            f"scoring copy, first use: first scored request {cold.seconds * 1000:.0f} ms, a warm one "
            f"{warm.seconds * 1000:.0f} ms: compile ~{(cold.seconds - warm.seconds) * 1000:.0f} ms"
        )
        if rss_before is not None and rss_after is not None:
            print(
                f"engine process RSS: {rss_before:.0f} MB before the scoring copy, {rss_after:.0f} MB after "
                f"(+{rss_after - rss_before:.0f} MB)"
            )
        print()

        # (variant, concurrency) -> per-round medians: TTFT, tok/s per stream, total tok/s
        results: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
        for number in range(args.rounds):
            for concurrency in args.concurrency:
                shift = number % len(variants)
                for variant in variants[shift:] + variants[:shift]:
                    waves = [await wave(stub, model, variant, concurrency, args.max_tokens) for _ in range(args.waves)]
                    streams = [measured for done in waves for measured in done.streams]
                    for measured in streams:
                        check(variant, measured, args.max_tokens)
                    results.setdefault((variant.name, concurrency), []).append(
                        (
                            median([measured.ttft for measured in streams]),
                            median([measured.tokens_per_second for measured in streams]),
                            median([done.total_tokens_per_second for done in waves]),
                        )
                    )
            print(f"round {number + 1}/{args.rounds} done", file=sys.stderr)

    print_table(variants, args.concurrency, results)


async def count_prompt_tokens(stub: chat_pb2_grpc.ChatServiceStub, model: str) -> int:
    """The prompt's tokens, as the server counts them."""
    message = request(model, Variant("plain"), 1)
    async for chunk in stub.StreamChatCompletion(message):
        if chunk.HasField("usage"):
            return chunk.usage.prompt_tokens
    return 0


def print_table(
    variants: list[Variant], concurrencies: list[int], results: dict[tuple[str, int], list[tuple[float, float, float]]]
) -> None:
    header = (
        f"{'variant':<9} {'streams':>7} {'TTFT p50 ms':>11} {'tok/s/stream':>12} {'tok/s total':>11}   "
        f"{'TTFT x':>7} {'tok/s x':>7} {'total x':>7}"
    )
    print(header)
    print("-" * len(header))
    for concurrency in concurrencies:
        plain = results[("plain", concurrency)]
        for variant in variants:
            rounds = results[(variant.name, concurrency)]
            ttft, per_stream, total = (median([values[i] for values in rounds]) for i in range(3))
            ratios = [median([mine[i] / base[i] for mine, base in zip(rounds, plain, strict=True)]) for i in range(3)]
            print(
                f"{variant.name:<9} {concurrency:>7} {ttft * 1000:>11.1f} {per_stream:>12.1f} {total:>11.1f}   "
                + " ".join(f"{ratio:>7.2f}" for ratio in ratios)
            )
    print()
    print("x: median over rounds of the round's ratio to plain at the same concurrency")
    print("   (TTFT: > 1 is later; tok/s: < 1 is slower). sampler: logprobs true, top_logprobs 0;")
    print("   scored: logprobs true, top_logprobs > 0 (the scoring copy).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=BUNDLED_MODELS_DIR / BUNDLED_MODEL, help="OpenVINO model dir")
    parser.add_argument("--name", default=BUNDLED_MODEL, help="the name it is served as")
    parser.add_argument("--rounds", type=int, default=5, help="paired rounds (default 5)")
    parser.add_argument("--waves", type=int, default=5, help="waves per variant and concurrency in a round (5)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8], help="concurrent streams (1 8)")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per request (ignore_eos)")
    parser.add_argument("--top-logprobs", type=int, default=5, help="alternatives of the scored variant, 1-20")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    started = time.perf_counter()
    server = start_server([ModelSpec(args.name, args.model, settings=EngineSettings(max_num_seqs=64))])
    try:
        asyncio.run(run(args, server))
    finally:
        server.stop()
    print(f"\n({time.perf_counter() - started:.0f} s in all, server start included)")


if __name__ == "__main__":
    main()
