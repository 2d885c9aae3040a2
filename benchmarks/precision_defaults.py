"""Which engine settings end chat traffic soonest on this CPU: variants of one model side by side, engine alone.

Issue 51 asks for defaults chosen by measurement, per CPU family and weight format. This runs one openvino-genai
ContinuousBatchingPipeline per variant (device properties such as INFERENCE_PRECISION_HINT, KV_CACHE_PRECISION,
DYNAMIC_QUANTIZATION_GROUP_SIZE, and tokens per step), each with ovserve's scheduler settings otherwise
(``EngineSettings().scheduler``), and runs the same workloads on each in turn, round after round, so a noisy
machine slows every variant alike:

- ``chat-c1`` / ``chat-c8``: 1 or 8 requests at once of ``--prompt-tokens`` prompts and ``--output-tokens``
  answers (greedy, ignore_eos): what a chat UI or an agent's turn costs.
- ``long``: one ``--long-tokens`` prompt and 16 output tokens: a long document or a grown conversation, where
  reading the prompt dominates.

Per variant and workload (medians over rounds): time to first token, the decode rate after it, seconds from
submit to the last token (end to end), and output tokens per second over the batch. Then each variant's ratio to
the first (end to end and decode: above 1 is faster). Prompts are fresh random ids each round (a random-weight
model reads any id; prefix caching never hits).

Run (from the repo root; models from ``python -m tools.model_builder.real_size``):
    .venv/bin/python benchmarks/precision_defaults.py build/real-size/qwen2.5-0.5b \\
        [--variant bf16=INFERENCE_PRECISION_HINT:bf16 --variant f32=INFERENCE_PRECISION_HINT:f32] \\
        [--rounds 3] [--json out.json]
A variant's settings are PROPERTY:VALUE pairs joined by commas; ``step_tokens:N`` sets the scheduler's tokens
per step instead of a device property.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import openvino as ov
import openvino_genai as ovg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from ovserve.service.engine import EngineSettings  # noqa: E402  (needs the repo root on sys.path)
from ovserve.service.engine.cpu_features import cpu_flags  # noqa: E402

DEFAULT_VARIANTS = ["bf16=INFERENCE_PRECISION_HINT:bf16", "f32=INFERENCE_PRECISION_HINT:f32"]


@dataclass(frozen=True)
class Workload:
    """Requests sent at once, each of ``prompt`` tokens wanting ``output`` tokens."""

    name: str
    requests: int
    prompt: int
    output: int


@dataclass
class Sample:
    """One run of a workload on one variant."""

    ttft: float  # mean over its requests, seconds
    decode: float  # mean per-request tokens per second after the first token
    e2e: float  # mean seconds from submit to the last token
    throughput: float  # output tokens per second over the batch


@dataclass
class Variant:
    """A named set of settings and its pipeline."""

    name: str
    properties: dict[str, object]
    step_tokens: int | None
    pipeline: ovg.ContinuousBatchingPipeline | None = None
    samples: dict[str, list[Sample]] = field(default_factory=dict)


def parse_variant(text: str) -> Variant:
    """NAME=PROP:VALUE,PROP:VALUE -> Variant (``step_tokens`` is the scheduler's, the rest device properties)."""
    name, _, settings = text.partition("=")
    properties: dict[str, object] = {}
    step_tokens = None
    for pair in filter(None, settings.split(",")):
        key, _, value = pair.partition(":")
        if key == "step_tokens":
            step_tokens = int(value)
        else:
            properties[key] = int(value) if value.lstrip("-").isdigit() else value
    return Variant(name, properties, step_tokens)


def build(model: Path, variant: Variant) -> ovg.ContinuousBatchingPipeline:
    """The variant's pipeline, with ovserve's scheduler settings (prefix caching off: prompts never repeat)."""
    settings = EngineSettings()
    scheduler = ovg.SchedulerConfig()
    for name, value in settings.scheduler(model).items():
        setattr(scheduler, name, value)
    scheduler.enable_prefix_caching = False
    if variant.step_tokens is not None:
        scheduler.max_num_batched_tokens = variant.step_tokens
    # ovserve's device properties (the KV-cache precision it tells a CPU pipeline), then the variant's
    return ovg.ContinuousBatchingPipeline(
        str(model), scheduler, "CPU", {**settings.engine_properties(), **variant.properties}
    )


def run(pipeline: ovg.ContinuousBatchingPipeline, workload: Workload, vocab: int, rng: random.Random) -> Sample:
    """Send the workload's requests at once and step until they end; the times each request saw."""
    config = ovg.GenerationConfig()
    config.max_new_tokens = workload.output
    config.ignore_eos = True
    config.do_sample = False
    prompts = [[rng.randrange(100, vocab - 100) for _ in range(workload.prompt)] for _ in range(workload.requests)]
    started = time.perf_counter()
    handles = [
        pipeline.add_request(i, ov.Tensor(np.array([prompt], dtype=np.int64)), config)
        for i, prompt in enumerate(prompts)
    ]
    first: list[float | None] = [None] * len(handles)
    last: list[float | None] = [None] * len(handles)
    while any(end is None for end in last):
        pipeline.step()
        now = time.perf_counter()
        for i, handle in enumerate(handles):
            if last[i] is not None:
                continue
            if first[i] is None and handle.can_read() and any(o.generated_ids for o in handle.read().values()):
                first[i] = now
            if handle.get_status() != ovg.GenerationStatus.RUNNING:
                last[i] = now
                first[i] = first[i] or now
    firsts = [t - started for t in first if t is not None]
    ends = [t - started for t in last if t is not None]
    decodes = [(workload.output - 1) / max(end - begin, 1e-9) for begin, end in zip(firsts, ends, strict=True)]
    return Sample(
        ttft=statistics.mean(firsts),
        decode=statistics.mean(decodes),
        e2e=statistics.mean(ends),
        throughput=workload.requests * workload.output / max(ends),
    )


def vocabulary(model: Path) -> int:
    """The model's vocabulary size (config.json)."""
    return int(json.loads((model / "config.json").read_text())["vocab_size"])


def cpu_family() -> str:
    """AMX, AVX-512 BF16, AVX-512, AVX2 or other, from /proc/cpuinfo (what decides OpenVINO's default precision)."""
    flags = cpu_flags() or frozenset()
    for family, flag in (
        ("AMX", "amx_bf16"),
        ("AVX-512 BF16", "avx512_bf16"),
        ("AVX-512", "avx512f"),
        ("AVX2", "avx2"),
    ):
        if flag in flags:
            return family
    return "other"


def report(variants: list[Variant], workloads: list[Workload]) -> list[str]:
    """The table: medians per variant and workload, and ratios to the first variant."""
    lines = [f"{'workload':<10} {'variant':<12} {'TTFT ms':>9} {'decode t/s':>10} {'e2e s':>8} {'tok/s':>8}"
             f" {'e2e x':>6} {'dec x':>6}"]  # fmt: skip
    for workload in workloads:
        base = variants[0].samples[workload.name]
        base_e2e = statistics.median(s.e2e for s in base)
        base_decode = statistics.median(s.decode for s in base)
        for variant in variants:
            samples = variant.samples[workload.name]
            e2e = statistics.median(s.e2e for s in samples)
            decode = statistics.median(s.decode for s in samples)
            lines.append(
                f"{workload.name:<10} {variant.name:<12} {statistics.median(s.ttft for s in samples) * 1000:>9.0f}"
                f" {decode:>10.1f} {e2e:>8.2f} {statistics.median(s.throughput for s in samples):>8.1f}"
                f" {base_e2e / e2e:>6.2f} {decode / base_decode:>6.2f}"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    """Measure and print (and write --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--variant", action="append", help="NAME=PROP:VALUE,... (default: bf16 and f32)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--long-tokens", type=int, default=2048)
    parser.add_argument("--workloads", nargs="+", default=["chat-c1", "chat-c8", "long"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    known = {
        "chat-c1": Workload("chat-c1", 1, args.prompt_tokens, args.output_tokens),
        "chat-c8": Workload("chat-c8", 8, args.prompt_tokens, args.output_tokens),
        "long": Workload("long", 1, args.long_tokens, 16),
    }
    workloads = [known[name] for name in args.workloads]
    variants = [parse_variant(text) for text in (args.variant or DEFAULT_VARIANTS)]
    vocab = vocabulary(args.model)
    print(f"{args.model} on {cpu_family()} ({time.strftime('%Y-%m-%d %H:%M')}), rounds {args.rounds}", flush=True)
    for variant in variants:
        began = time.perf_counter()
        variant.pipeline = build(args.model, variant)
        print(f"  {variant.name}: {variant.properties} step_tokens={variant.step_tokens} compiled in "
              f"{time.perf_counter() - began:.1f} s", flush=True)  # fmt: skip
    rng = random.Random(args.seed)
    for variant in variants:  # warm-up: each variant's first run pays for its kernels
        assert variant.pipeline is not None
        run(variant.pipeline, Workload("warm", 1, 64, 8), vocab, rng)
    for round_index in range(args.rounds):
        for workload in workloads:
            order = variants if round_index % 2 == 0 else variants[::-1]  # who goes first alternates
            for variant in order:
                assert variant.pipeline is not None
                sample = run(variant.pipeline, workload, vocab, rng)
                variant.samples.setdefault(workload.name, []).append(sample)
        print(f"  round {round_index + 1} done", flush=True)
    lines = report(variants, workloads)
    print("\n".join(lines))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "model": str(args.model),
                    "cpu": cpu_family(),
                    "workloads": [vars(w) for w in workloads],
                    "variants": {
                        v.name: {
                            "properties": v.properties,
                            "step_tokens": v.step_tokens,
                            "samples": {k: [vars(s) for s in ss] for k, ss in v.samples.items()},
                        }
                        for v in variants
                    },
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
