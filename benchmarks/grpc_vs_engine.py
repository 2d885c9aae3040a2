"""Streaming throughput through ovserve's gRPC service against the engine alone, side by side in one run.

    python benchmarks/grpc_vs_engine.py [--model DIR] [--concurrency 1 8] [--tokens 256] [--rounds 3]

Engine alone: ``ContinuousBatchingPipeline.generate`` on N prompts at once
(releases the GIL, no per-token Python). Service: ``ovserve serve`` started
as a subprocess on a free port, N concurrent StreamChatCompletion calls over
grpc.aio. Greedy, ignore_eos and a fixed token count, so both sides generate
exactly the same number of tokens; the rounds alternate and the median is
reported, because the machine is shared. A ratio is service tok/s divided by
engine tok/s at the same concurrency.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import grpc
import openvino_genai as ov_genai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.v1 import chat_pb2, chat_pb2_grpc  # noqa: E402

QUESTIONS = ["Tell me a short story.", "Hello!", "Who are you?", "What is 2 plus 3?"]


def engine_tokens_per_second(pipeline: ov_genai.ContinuousBatchingPipeline, prompts: list[str], tokens: int) -> float:
    """Output tokens per second of generate() on all prompts at once."""
    config = ov_genai.GenerationConfig(max_new_tokens=tokens, ignore_eos=True, apply_chat_template=False)
    started = time.perf_counter()
    results = pipeline.generate(prompts, [config] * len(prompts))
    elapsed = time.perf_counter() - started
    assert all(len(r.m_generation_ids) == 1 for r in results)
    return tokens * len(prompts) / elapsed


async def service_tokens_per_second(target: str, questions: list[str], tokens: int) -> tuple[float, float]:
    """Output tokens per second of concurrent streams, and the median time to first token in ms."""
    async with grpc.aio.insecure_channel(target) as channel:
        chat = chat_pb2_grpc.ChatServiceStub(channel)

        async def one(question: str) -> tuple[int, float]:
            request = chat_pb2.StreamChatCompletionRequest(
                model="bench", messages=[chat_pb2.ChatMessage(role="user", content=question)],
                max_tokens=tokens, ignore_eos=True, temperature=0,
            )  # fmt: skip
            request.stream_options.include_usage = True
            started, first, count = time.perf_counter(), 0.0, 0
            async for chunk in chat.StreamChatCompletion(request):
                if not first and chunk.choices and chunk.choices[0].delta.content:
                    first = time.perf_counter() - started
                if chunk.HasField("usage"):
                    count = chunk.usage.completion_tokens
            return count, first

        started = time.perf_counter()
        results = await asyncio.gather(*(one(q) for q in questions))
        elapsed = time.perf_counter() - started
    assert all(count == tokens for count, _ in results), results
    return tokens * len(questions) / elapsed, statistics.median(first for _, first in results) * 1000


def main() -> None:
    """Run the comparison and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "service" / "bundled_models" / "tiny-chat")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    process = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--no-rest", "--port", "0", "--model", f"bench={args.model}"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    port = None
    for line in process.stderr:
        if match := re.search(r"gRPC listening on [\d.]+:(\d+)", line):
            port = match.group(1)
        if "serving bench" in line:
            break
    target = f"127.0.0.1:{port}"
    try:
        scheduler = ov_genai.SchedulerConfig()
        scheduler.cache_size, scheduler.enable_prefix_caching, scheduler.dynamic_split_fuse = 1, True, True
        scheduler.max_num_batched_tokens = 2048
        pipeline = ov_genai.ContinuousBatchingPipeline(str(args.model), scheduler, "CPU")
        tokenizer = pipeline.get_tokenizer()
        rows = []
        for concurrency in args.concurrency:
            questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(concurrency)]
            prompts = [
                tokenizer.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True)
                for q in questions
            ]
            engine, service, ttft = [], [], []
            asyncio.run(service_tokens_per_second(target, questions, 16))  # warm-up
            engine_tokens_per_second(pipeline, prompts, 16)
            for _ in range(args.rounds):
                engine.append(engine_tokens_per_second(pipeline, prompts, args.tokens))
                rate, first = asyncio.run(service_tokens_per_second(target, questions, args.tokens))
                service.append(rate)
                ttft.append(first)
            rows.append((concurrency, statistics.median(engine), statistics.median(service), statistics.median(ttft)))
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(f"model {args.model.name}, {args.tokens} tokens per request, median of {args.rounds} rounds")
    print(f"{'streams':>7} {'engine tok/s':>13} {'gRPC tok/s':>11} {'ratio':>6} {'gRPC TTFT ms':>13}")
    for concurrency, engine_rate, service_rate, first in rows:
        ratio = service_rate / engine_rate
        print(f"{concurrency:>7} {engine_rate:>13.0f} {service_rate:>11.0f} {ratio:>6.2f} {first:>13.1f}")


if __name__ == "__main__":
    main()
