"""Latency and throughput of a run, from the timings of its requests."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Latency metrics reported, each as mean/p50/p90/p99 in milliseconds.
LATENCIES = ("ttft", "tpot", "itl", "e2e")
STATS = ("mean", "p50", "p90", "p99")


@dataclass
class RequestResult:
    """Timings of one streamed request (time.perf_counter seconds) and the token counts the server reported."""

    start: float
    end: float = 0.0
    # Arrival time of every message that carried output (a message may carry several tokens).
    chunk_times: list[float] = field(default_factory=list)
    output_tokens: int = 0  # from the server's usage, not from counting messages
    prompt_tokens: int = 0
    error: str | None = None
    pieces: list[str] = field(default_factory=list)  # the reply's text as it came (a conversation resends it)

    @property
    def text(self) -> str:
        """The reply's text."""
        return "".join(self.pieces)

    @property
    def ok(self) -> bool:
        """Whether the request completed with output and usage."""
        return self.error is None and bool(self.chunk_times)

    @property
    def ttft(self) -> float:
        """Time to first token (seconds)."""
        return self.chunk_times[0] - self.start

    @property
    def e2e(self) -> float:
        """End-to-end latency (seconds)."""
        return self.end - self.start

    @property
    def tpot(self) -> float | None:
        """Time per output token after the first (seconds); None for a single-token reply."""
        if self.output_tokens < 2:
            return None
        return (self.end - self.chunk_times[0]) / (self.output_tokens - 1)

    @property
    def itls(self) -> list[float]:
        """Gaps between successive output messages (seconds)."""
        return [later - earlier for earlier, later in zip(self.chunk_times, self.chunk_times[1:], strict=False)]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation, as numpy's default."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def distribution(values: Sequence[float]) -> dict[str, float]:
    """mean/p50/p90/p99 of ``values`` given in seconds, in milliseconds (NaN when there are none)."""
    if not values:
        return dict.fromkeys(STATS, math.nan)
    millis = [value * 1000 for value in values]
    return {
        "mean": statistics.fmean(millis),
        "p50": percentile(millis, 50),
        "p90": percentile(millis, 90),
        "p99": percentile(millis, 99),
    }


def summarize(results: Sequence[RequestResult], duration: float) -> dict[str, Any]:
    """The figures of one run: counts, throughput and the latency distributions."""
    done = [result for result in results if result.ok]
    output_tokens = sum(result.output_tokens for result in done)
    errors = sorted({result.error for result in results if result.error})
    return {
        "requests": len(results),
        "completed": len(done),
        "failed": len(results) - len(done),
        "errors": errors[:5],  # a few distinct messages are enough to diagnose
        "duration_s": duration,
        "input_tokens": sum(result.prompt_tokens for result in done),
        "output_tokens": output_tokens,
        "request_throughput": len(done) / duration if duration > 0 else 0.0,
        "output_throughput": output_tokens / duration if duration > 0 else 0.0,
        "ttft_ms": distribution([result.ttft for result in done]),
        "tpot_ms": distribution([tpot for result in done if (tpot := result.tpot) is not None]),
        "itl_ms": distribution([gap for result in done for gap in result.itls]),
        "e2e_ms": distribution([result.e2e for result in done]),
    }


def median_summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One summary from several rounds of the same run: the median of every number over the rounds in which no
    request failed (a round cut short by failures says nothing of speed: its throughput counts only what was
    answered), the failures summed over every round, the union of errors."""
    clean = [run for run in runs if not run.get("failed")] or list(runs)
    merged: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, dict):
            # A figure some rounds lack (CPU per token of a round that generated nothing) is the median of the rest.
            names = dict.fromkeys(name for run in clean for name in run[key])
            merged[key] = {
                name: statistics.median(run[key][name] for run in clean if name in run[key]) for name in names
            }
        elif isinstance(value, list):
            merged[key] = sorted({item for run in runs for item in run[key]})
        else:
            merged[key] = statistics.median(run[key] for run in clean)
    if "failed" in runs[0]:
        merged["failed"] = sum(run["failed"] for run in runs)
    merged["rounds"] = len(runs)
    merged["rounds_left_out"] = len(runs) - len(clean)
    return merged
