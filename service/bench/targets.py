"""Target ratios (service against engine, REST against gRPC, service against a peer server; the table of
docs/benchmarks/index.md), from one bench run's summaries.

Each ratio is printed beside its target with met / not met; nothing here
asserts: a shared machine's figures are for people to read.
"""

from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

# Summaries keyed by (backend, concurrency): "engine", "grpc", "http", "peer".
Summaries = Mapping[tuple[str, int], Mapping[str, Any]]

_COMPARE: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le}

# Service / engine throughput targets by (real-size model, backend, concurrency); any other point: 0.95 on a
# real-size model, 0.80 on tiny-chat, whose steps cost almost nothing, so that it measures pure overhead.
_THROUGHPUT_TARGETS: dict[tuple[bool, str, int], float] = {
    (False, "grpc", 8): 0.90,
    (False, "grpc", 32): 0.80,
    (False, "http", 8): 0.80,
    (True, "grpc", 1): 0.97,
    (True, "grpc", 8): 0.97,
    (True, "http", 1): 0.97,
    (True, "http", 8): 0.97,
}
# Against another OpenAI-compatible server on the same weights (--peer, e.g. llama.cpp's llama-server): more
# throughput, first token no later.
PEER_THROUGHPUT = 1.05
PEER_TTFT = 1.0
# The time to first token a service backend may add to the engine's, in ms, by backend.
ADDED_TTFT_MS = {"grpc": 1.0, "http": 2.0}


@dataclass(frozen=True)
class Ratio:
    """One measured figure against its target."""

    metric: str
    value: float
    op: str  # ">=" or "<="
    target: float
    unit: str = ""

    @property
    def met(self) -> bool | None:
        """Whether the figure meets the target (None if it could not be measured)."""
        return None if math.isnan(self.value) else _COMPARE[self.op](self.value, self.target)

    def as_dict(self) -> dict[str, Any]:
        """JSON form, with ``met``."""
        return {**asdict(self), "met": self.met}


def _get(summaries: Summaries, backend: str, concurrency: int, *path: str) -> float:
    value: Any = summaries.get((backend, concurrency))
    for key in path:
        if value is None:
            return math.nan
        value = value.get(key)
    return math.nan if value is None else float(value)


def _div(numerator: float, denominator: float) -> float:
    """numerator / denominator, NaN when the denominator is zero or missing."""
    return numerator / denominator if denominator and not math.isnan(denominator) else math.nan


def ratios(
    summaries: Summaries,
    concurrencies: Sequence[int],
    prefix_ttft: Mapping[str, Mapping[str, float]],
    real_size: bool,
) -> list[Ratio]:
    """Every target ratio (docs/benchmarks/index.md's results table) that this run's data allows.

    ``high`` is 8 when it was run (the concurrency the targets are set at), else the largest
    concurrency; ``prefix_ttft`` maps a backend to its cold and warm TTFT (ms).
    """
    services = [backend for backend in ("grpc", "http") if any(key[0] == backend for key in summaries)]
    high = 8 if 8 in concurrencies else max(concurrencies)
    found = _peer_ratios(summaries, services, concurrencies)
    if not any(key[0] == "engine" for key in summaries):
        return found
    for backend in services:
        for concurrency in concurrencies:
            service = _get(summaries, backend, concurrency, "output_throughput")
            engine = _get(summaries, "engine", concurrency, "output_throughput")
            target = _THROUGHPUT_TARGETS.get((real_size, backend, concurrency), 0.95 if real_size else 0.80)
            found.append(Ratio(f"{backend} tok/s / engine tok/s, c={concurrency}", _div(service, engine), ">=", target))
    if {"grpc", "http"} <= set(services):
        rest = _div(
            _get(summaries, "http", high, "output_throughput"), _get(summaries, "grpc", high, "output_throughput")
        )
        found.append(Ratio(f"REST tok/s / gRPC tok/s, c={high}", rest, ">=", 0.95))
    for backend, allowed in ADDED_TTFT_MS.items():
        if backend in services and 1 in concurrencies:
            added = _get(summaries, backend, 1, "ttft_ms", "p50") - _get(summaries, "engine", 1, "ttft_ms", "p50")
            found.append(Ratio(f"{backend} added TTFT p50 over engine, c=1", added, "<=", allowed, "ms"))
    if 1 in concurrencies and high != 1:
        engine_scale = _div(
            _get(summaries, "engine", high, "output_throughput"), _get(summaries, "engine", 1, "output_throughput")
        )
        for backend in services:
            scale = _div(
                _get(summaries, backend, high, "output_throughput"), _get(summaries, backend, 1, "output_throughput")
            )
            found.append(Ratio(f"{backend} batching kept ({high}/1 vs engine)", _div(scale, engine_scale), ">=", 0.90))
    for backend in services:
        tail = _div(_get(summaries, backend, high, "itl_ms", "p99"), _get(summaries, backend, high, "itl_ms", "p50"))
        found.append(Ratio(f"{backend} ITL p99 / p50, c={high}", tail, "<=", 3.0))
    for backend in services:
        probe = prefix_ttft.get(backend)
        if probe:
            found.append(
                Ratio(f"{backend} TTFT cached prefix / cold", _div(probe["warm_ms"], probe["cold_ms"]), "<=", 0.3)
            )
    return found


def _peer_ratios(summaries: Summaries, services: Sequence[str], concurrencies: Sequence[int]) -> list[Ratio]:
    """Each service backend against the peer server (when one ran): throughput and TTFT p50, per concurrency."""
    if not any(key[0] == "peer" for key in summaries):
        return []
    found = []
    for backend in services:
        for concurrency in concurrencies:
            ours = _get(summaries, backend, concurrency, "output_throughput")
            theirs = _get(summaries, "peer", concurrency, "output_throughput")
            found.append(
                Ratio(f"{backend} tok/s / peer tok/s, c={concurrency}", _div(ours, theirs), ">=", PEER_THROUGHPUT)
            )
            ours = _get(summaries, backend, concurrency, "ttft_ms", "p50")
            theirs = _get(summaries, "peer", concurrency, "ttft_ms", "p50")
            found.append(
                Ratio(f"{backend} TTFT p50 / peer TTFT p50, c={concurrency}", _div(ours, theirs), "<=", PEER_TTFT)
            )
    return found


def median_ratios(rounds: Sequence[list[Ratio]]) -> list[Ratio]:
    """Each ratio's median over rounds, every round's ratio taken from its own runs.

    Engine and service runs of a round run back to back, so pairing them
    within the round cancels the slow drift of a shared machine that a ratio
    of medians over all rounds would keep.
    """
    # By name: a round in which a backend failed lacks that backend's ratios.
    by_metric: dict[str, list[Ratio]] = {}
    for ratio in (ratio for round_ratios in rounds for ratio in round_ratios):
        by_metric.setdefault(ratio.metric, []).append(ratio)
    found: list[Ratio] = []
    for metric, measured in by_metric.items():
        values = [ratio.value for ratio in measured if not math.isnan(ratio.value)]
        value = statistics.median(values) if values else math.nan
        first = measured[0]
        found.append(Ratio(metric, value, first.op, first.target, first.unit))
    return found
