"""What the biased lane costs: a greedy answer through the lane against the pipeline, side by side in one run.

A request with ``logit_bias`` (or ``bad_words``) decodes on the biased lane (service/engine/biased_lane.py): the
model's scoring copy, stepped one token at a time outside the pipeline's batch, its tokens chosen in numpy. This
runs EngineCore itself, in this process, on the bundled tiny-chat (or ``--model DIR``), with the engine's own
settings, and measures in each round, the variants' order alternating:

    pipeline  -- a greedy answer of --max-tokens tokens (ignore_eos) on the pipeline
    lane      -- the same request with a bias of 0 on one token: the lane writes the same tokens
    beside    -- the pipeline request again while a longer lane request decodes beside it (the lane's effect on
                 others)
    batched   -- the pipeline request beside a longer pipeline request instead (what a second stream costs
                 without the lane: the two share the pipeline's batch)

Reported: tokens per second of the measured request (first token included, from ``add`` to its last token), the
per-round ratios against pipeline (medians over rounds), ms per token, and for pipeline and lane the process's CPU
time per token (all threads: what a token costs the machine). On a shared machine only the ratios, taken within a
round, mean much.

Run (from the repo root):
    PYTHONPATH=. .venv/bin/python benchmarks/biased_lane.py [--rounds 5] [--max-tokens 128] [--model DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import openvino_genai as ov_genai  # noqa: E402

from ovserve.service.engine import EngineSettings, Update  # noqa: E402
from ovserve.service.engine.core import EngineCore, Submission  # noqa: E402
from ovserve.service.engine.generation_config import model_defaults  # noqa: E402
from ovserve.service.engine.scoring import ScoringModel  # noqa: E402
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR  # noqa: E402
from ovserve.service.workers.codec import TokenCodec  # noqa: E402

PROMPT = "Please write a short, friendly paragraph about how rainbows form after a summer storm."
NO_EFFECT = ((0, 0.0),)


def engine(model: Path) -> EngineCore:
    """EngineCore as the engine process builds it (the scheduler's settings, the lane on the scoring copy)."""
    scheduler = ov_genai.SchedulerConfig()
    for name, value in EngineSettings().scheduler(model).items():
        setattr(scheduler, name, value)
    settings = EngineSettings()
    return EngineCore(
        lambda: ov_genai.ContinuousBatchingPipeline(str(model), scheduler, "CPU"),
        TokenCodec(model).decode_windows,
        flush_interval=settings.stream_interval_ms / 1000,
        lane=ScoringModel(model, "CPU", {}).sequence,
    )


def cpu_seconds() -> float:
    """CPU time of this process so far, every thread's (OpenVINO's included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(core: EngineCore, submissions: list[Submission], measured: int) -> tuple[float, int]:
    """Run the submissions to their end; (seconds until ``measured``'s last token, its token count)."""
    start = time.perf_counter()
    for submission in submissions:
        assert core.add(submission) == []
    tokens, ended = 0, 0.0
    while core.busy:
        for request_id, outcome in core.step():
            assert isinstance(outcome, Update), outcome
            if request_id == measured:
                tokens += sum(len(delta.token_ids) for delta in outcome.sequences)
                if outcome.finished:
                    ended = time.perf_counter()
    return ended - start, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--model", type=Path, default=BUNDLED_MODELS_DIR / BUNDLED_MODEL)
    args = parser.parse_args()
    core = engine(args.model)
    codec = TokenCodec(args.model)
    prompt = codec.encode(PROMPT, add_special_tokens=True)
    eos = ov_genai.Tokenizer(str(args.model)).get_eos_token_id()
    greedy = dataclasses.replace(
        model_defaults(args.model, eos), max_new_tokens=args.max_tokens, do_sample=False, ignore_eos=True
    )
    biased = dataclasses.replace(greedy, logit_bias=NO_EFFECT)
    longer = dataclasses.replace(biased, max_new_tokens=args.max_tokens * 4)  # still decoding when the other ends
    longer_plain = dataclasses.replace(longer, logit_bias=())
    ids = iter(range(1, 1_000_000))

    def variant(name: str) -> tuple[float, int]:
        first = next(ids)
        if name == "pipeline":
            return timed(core, [Submission(first, prompt, greedy)], first)
        if name == "lane":
            return timed(core, [Submission(first, prompt, biased)], first)
        other = Submission(next(ids), prompt, longer if name == "beside" else longer_plain)
        return timed(core, [other, Submission(first, prompt, greedy)], first)

    compile_start = time.perf_counter()
    variant("lane")  # the first lane request compiles the scoring copy
    print(f"first lane request (compiles the scoring copy): {time.perf_counter() - compile_start:.2f} s")
    names = ["pipeline", "lane", "beside", "batched"]
    for name in names:  # warm-up, not recorded
        variant(name)
    rates: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}  # CPU ms per measured token (beside: both requests')
    ratios: dict[str, list[float]] = {"lane": [], "beside": [], "batched": []}
    for round_number in range(args.rounds):
        order = names if round_number % 2 == 0 else names[::-1]
        this: dict[str, float] = {}
        for name in order:
            used = cpu_seconds()
            seconds, tokens = variant(name)
            cpu[name].append((cpu_seconds() - used) * 1000 / tokens)
            assert tokens == args.max_tokens, (name, tokens)
            this[name] = tokens / seconds
            rates[name].append(this[name])
        for name in ratios:
            ratios[name].append(this[name] / this["pipeline"])
    print(f"prompt {len(prompt)} tokens, {args.max_tokens} greedy tokens, {args.rounds} rounds, {args.model.name}")
    for name in names:
        rate = statistics.median(rates[name])
        spent = f"{statistics.median(cpu[name]):6.2f} CPU ms/token" if name in ("pipeline", "lane") else ""
        print(f"  {name:9s} {rate:8.1f} tokens/s  {1000 / rate:6.2f} ms/token  {spent}")
    print(f"  lane / pipeline (median of per-round ratios): {statistics.median(ratios['lane']):.2f}")
    print(f"  a pipeline stream beside a lane request / alone: {statistics.median(ratios['beside']):.2f}")
    print(f"  a pipeline stream beside a pipeline request / alone: {statistics.median(ratios['batched']):.2f}")


if __name__ == "__main__":
    main()
