"""Prometheus metrics (``prometheus-client``): what a router, a dashboard or an alert needs to see of a server.

Three sources, all in one registry of this process:

- every RPC, as the call policy interceptor ends it (``observe_call``): requests by RPC, model and gRPC
  status code (``cancelled`` is a client that went away), and their latency;
- every generation, as the engine hands out its output (``GenerationMeter``): time to first token,
  inter-token latency, end-to-end time, prompt and generated tokens, and how it ended (finished, cancelled
  by its caller, failed), with the generations running now;
- each served model's process (an LLM's engine, an embedding, rerank or speech pipeline), asked when
  ``/metrics`` is scraped (``refresh``): whether it is up, its restarts and CPU, the requests it runs and those
  waiting, KV-cache use where the model has a KV cache; and the stored responses.

The engine does not import this module: the server hands ``GenerationMeter`` to each engine it loads.

A model label only ever holds a served model's name (``other`` for anything a client made up), so a client
cannot grow the label set. Names follow Prometheus conventions (``_total``, ``_seconds``, base units).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import datetime
import functools
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ovserve.service.model_states import ModelState
from ovserve.service.observability import tracing
from ovserve.service.store import tenancy

if TYPE_CHECKING:
    from ovserve.service.models import ModelRegistry
    from ovserve.service.store.responses import ResponseStore
    from ovserve.service.workers import Load, Served

CONTENT_TYPE = CONTENT_TYPE_LATEST
REGISTRY = CollectorRegistry(auto_describe=True)  # this process's; not prometheus_client's global one
OTHER = "other"  # the model label of a request naming no served model
STATS_TIMEOUT_S = 2.0  # a scrape does not wait longer than this for an engine's figures

# Buckets: a token takes milliseconds on small models and a request up to minutes on large ones.
_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_TOKEN_GAP = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56)

REQUESTS = Counter(
    "ovserve_requests", "RPCs handled, by RPC, model and gRPC status code (cancelled: the client went away)",
    ["rpc", "model", "code"], registry=REGISTRY,
)  # fmt: skip
REQUEST_SECONDS = Histogram(
    "ovserve_request_duration_seconds", "RPC latency, from the call's start to its end (a stream's last message)",
    ["rpc", "model"], buckets=_LATENCY, registry=REGISTRY,
)  # fmt: skip
GENERATIONS = Counter(
    "ovserve_generations",
    "Generations the engines ran, by how they ended: finished, cancelled, failed, reasoning_budget (ended by the "
    "server at a request's reasoning budget, continued by a second generation)",
    ["model", "outcome"], registry=REGISTRY,
)  # fmt: skip
RUNNING = Gauge(
    "ovserve_generations_running", "Generations submitted to an engine and not yet ended", ["model"],
    registry=REGISTRY,
)  # fmt: skip
FIRST_TOKEN_SECONDS = Histogram(
    "ovserve_time_to_first_token_seconds", "From submitting a generation to its first token reaching the server",
    ["model"], buckets=_LATENCY, registry=REGISTRY,
)  # fmt: skip
TOKEN_GAP_SECONDS = Histogram(
    "ovserve_inter_token_latency_seconds", "Time between a generation's tokens after the first (per token)",
    ["model"], buckets=_TOKEN_GAP, registry=REGISTRY,
)  # fmt: skip
GENERATION_SECONDS = Histogram(
    "ovserve_generation_duration_seconds", "From submitting a generation to its end", ["model"],
    buckets=_LATENCY, registry=REGISTRY,
)  # fmt: skip
PROMPT_TOKENS = Counter("ovserve_prompt_tokens", "Prompt tokens submitted", ["model"], registry=REGISTRY)
GENERATED_TOKENS = Counter("ovserve_generation_tokens", "Tokens generated", ["model"], registry=REGISTRY)
ENGINE_RUNNING = Gauge(
    "ovserve_engine_requests_running", "Requests the model's process runs (generates, embeds, scores...)", ["model"],
    registry=REGISTRY,
)  # fmt: skip
ENGINE_WAITING = Gauge(
    "ovserve_engine_requests_waiting", "Requests waiting for the model's pipeline to take them", ["model"],
    registry=REGISTRY,
)  # fmt: skip
KV_CACHE_USAGE = Gauge(
    "ovserve_kv_cache_usage_ratio", "Share of the KV cache in use, 0-1", ["model"], registry=REGISTRY
)
KV_CACHE_BYTES = Gauge(
    "ovserve_kv_cache_bytes", "KV cache allocated so far (it grows with use up to its size)", ["model"],
    registry=REGISTRY,
)  # fmt: skip
ENGINE_UP = Gauge("ovserve_engine_up", "1 while the model's engine process runs", ["model"], registry=REGISTRY)
MODEL_STATE = Gauge(
    "ovserve_model_state", "1 for each known model's state (available, loading, loaded, unloading, failed), else 0",
    ["model", "state"], registry=REGISTRY,
)  # fmt: skip
MODEL_LOAD_SECONDS = Histogram(
    "ovserve_model_load_duration_seconds",
    "Model loads that succeeded, from the load's start (after room was made for it) to the model serving",
    ["model"], buckets=(0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0), registry=REGISTRY,
)  # fmt: skip
MODEL_UNLOADS = Counter(
    "ovserve_model_unloads",
    "Models unloaded, by why: admin (UnloadModel, a configuration reload), idle (its idle time or a request's "
    "keep_alive passed), room (the least recently used idle model, for a load under --max-loaded-models or "
    "--models-memory-gb)",
    ["model", "reason"], registry=REGISTRY,
)  # fmt: skip
ENGINE_RESTARTS = Gauge(
    "ovserve_engine_restarts", "Engine processes replaced after dying or stalling (since start)", ["model"],
    registry=REGISTRY,
)  # fmt: skip
STORED_RESPONSES = Gauge("ovserve_stored_responses", "Responses in the response store", registry=REGISTRY)
QUEUE_WAIT_SECONDS = Histogram(
    "ovserve_queue_wait_seconds",
    "How long generating calls waited for a place of --max-concurrent-requests (0 when one was free), by the "
    "priority they asked for (clamped to +-60)",
    ["priority"], buckets=_LATENCY, registry=REGISTRY,
)  # fmt: skip
PROCESS_CPU = Gauge(
    "ovserve_process_cpu_seconds",
    "CPU seconds (user and system) used so far by this server's process (with its bridge) and each model's "
    "engine process; the engine's count starts again when it is replaced",
    ["process", "model"], registry=REGISTRY,
)  # fmt: skip
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def model_label(name: str, served: Iterable[str]) -> str:
    """The model label of a request: its model if served here, ``other`` for another name, "" for none."""
    return name if not name or name in served else OTHER


def observe_call(rpc: str, model: str, code: str, seconds: float) -> None:
    """One RPC ended (``code``: the gRPC status code's name in lower case)."""
    REQUESTS.labels(rpc, model, code).inc()
    REQUEST_SECONDS.labels(rpc, model).observe(seconds)


def observe_queue_wait(priority: int, seconds: float) -> None:
    """A generating call got its place after ``seconds`` (``priority``: as the queue counted it)."""
    QUEUE_WAIT_SECONDS.labels(str(priority)).observe(seconds)


@dataclass(frozen=True)
class _ModelSeries:
    """One model's labelled series of the per-generation metrics: ``labels()`` looks a child up in a locked
    dict, a cost paid per hand-over if done there (py-spy: ~5 % of the server's CPU at one stream)."""

    prompt_tokens: Any
    running: Any
    generated_tokens: Any
    first_token: Any
    token_gap: Any
    duration: Any

    @staticmethod
    @functools.cache  # model labels are a closed set (served names and "other")
    def of(model: str) -> _ModelSeries:
        """The series of ``model``."""
        return _ModelSeries(
            PROMPT_TOKENS.labels(model), RUNNING.labels(model), GENERATED_TOKENS.labels(model),
            FIRST_TOKEN_SECONDS.labels(model), TOKEN_GAP_SECONDS.labels(model), GENERATION_SECONDS.labels(model),
        )  # fmt: skip


def observe_times(histogram: Any, value: float, times: int) -> None:
    """``histogram.observe(value)`` ``times`` times, in one update of its sum and one bucket.

    A hand-over carries many tokens when the engine merges steps, each an observation of the same gap;
    observing them one by one cost a lock round per token. Falls back to that loop if prometheus_client
    ever changes the child's layout (``_sum``, ``_buckets``, ``_upper_bounds``).
    """
    try:
        bucket = bisect.bisect_left(histogram._upper_bounds, value)
        histogram._sum.inc(value * times)
        histogram._buckets[bucket].inc(times)
    except AttributeError:
        for _ in range(times):
            histogram.observe(value)


class GenerationMeter:
    """One generation's figures and its trace span, fed by its Generation as updates arrive and when it is
    let go (the span is a child of the call's, with the engine's milestones as events)."""

    def __init__(self, model: str, prompt_tokens: int) -> None:
        self._model = model
        self._started = self._last = time.monotonic()
        self._first = True
        self._ended = False
        self._generated = 0
        self._series = _ModelSeries.of(model)
        self._series.prompt_tokens.inc(prompt_tokens)
        self._tally = tenancy.tokens_used.get()  # the call's key's tokens per minute, settled at its end
        if self._tally is not None:
            self._tally.count += prompt_tokens
        self._series.running.inc()
        attributes: dict[str, str | int] = {"gen_ai.request.model": model, "gen_ai.usage.input_tokens": prompt_tokens}
        self._span = tracing.tracer.start_span("generate", attributes=attributes)
        self._span.add_event("submitted")

    def tokens(self, count: int) -> None:
        """``count`` new tokens arrived (an engine hand-over may carry several steps: the gap is shared)."""
        if count <= 0:
            return
        now = time.monotonic()
        series = self._series
        series.generated_tokens.inc(count)
        self._generated += count
        if self._tally is not None:
            self._tally.count += count
        if self._first:
            series.first_token.observe(now - self._started)
            self._span.add_event("first_token")
            self._first, count = False, count - 1
        if count:
            observe_times(series.token_gap, (now - self._last) / count, count)
        self._last = now

    def end(self, outcome: str) -> None:
        """The generation ended (finished, cancelled, failed or reasoning_budget); later calls do nothing."""
        if self._ended:
            return
        self._ended = True
        self._series.running.dec()
        GENERATIONS.labels(self._model, outcome).inc()
        self._series.duration.observe(time.monotonic() - self._started)
        self._span.set_attribute("gen_ai.usage.output_tokens", self._generated)
        self._span.add_event(outcome)
        if outcome == "failed":
            self._span.set_status(trace.StatusCode.ERROR, "the engine failed the generation")
        self._span.end()


def process_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user and system) process ``pid`` has used, from /proc (None where there is no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime and stime, fields 14 and 15


async def _load(worker: Served) -> Load | None:
    """What ``worker`` works on now; None while its process is down, restarting or too slow to answer."""
    if not worker.up:
        return None
    try:
        return await asyncio.wait_for(worker.load(), STATS_TIMEOUT_S)
    except Exception:  # restarting, or slow: it reports nothing this time
        return None


def forget_model(name: str) -> None:
    """Drop the gauges' series of a model the server no longer knows (a configuration reload removed it): a scrape
    would otherwise show its last state and figures for ever. Counters and histograms keep their totals."""
    for state in ModelState:
        with contextlib.suppress(KeyError):
            MODEL_STATE.remove(name, state.value)
    for gauge in (ENGINE_UP, ENGINE_RESTARTS, ENGINE_RUNNING, ENGINE_WAITING, KV_CACHE_USAGE, KV_CACHE_BYTES):
        with contextlib.suppress(KeyError):
            gauge.remove(name)
    with contextlib.suppress(KeyError):
        PROCESS_CPU.remove("engine", name)


async def refresh(models: ModelRegistry, store: ResponseStore | None = None) -> None:
    """Ask each served model's process (and the store) for the figures only they know, for the scrape about to
    happen: every kind of model the same way, KV-cache figures for those that have a KV cache."""
    PROCESS_CPU.labels("server", "").set(time.process_time())
    for name in models.states.names:
        status = models.states.get(name)
        for state in ModelState:
            MODEL_STATE.labels(name, state.value).set(1 if status is not None and status.state is state else 0)
        if name not in models.names:  # no process: none runs, nothing waits, no cache is held
            for gauge in (ENGINE_UP, ENGINE_RUNNING, ENGINE_WAITING, KV_CACHE_USAGE, KV_CACHE_BYTES):
                gauge.labels(name).set(0)
    for worker in models.workers():
        name = worker.name
        ENGINE_UP.labels(name).set(1 if worker.up else 0)
        ENGINE_RESTARTS.labels(name).set(worker.restarts)
        if worker.pid is not None and (seconds := process_cpu_seconds(worker.pid)) is not None:
            PROCESS_CPU.labels("engine", name).set(seconds)
        load = await _load(worker)
        if load is None:  # its last figures stand
            continue
        ENGINE_RUNNING.labels(name).set(load.running)
        ENGINE_WAITING.labels(name).set(load.waiting)
        if load.kv_cache is not None:
            KV_CACHE_USAGE.labels(name).set(load.kv_cache.usage)
            KV_CACHE_BYTES.labels(name).set(load.kv_cache.bytes)
    if store is not None:
        STORED_RESPONSES.set(await store.count())


async def loads(models: ModelRegistry, in_flight: int, limit: int) -> dict[str, Any]:
    """SGLang's ``GET /v1/loads`` answer (smg's load-aware policies read it): this server's load as one rank.

    Running and waiting requests and KV tokens are summed over the served models (embedding, rerank and speech
    models count their requests, and hold no KV tokens); ``token_usage`` is the fullest model's KV-cache share
    (the one a new request would wait on); ``utilization`` is the share of the server's concurrency bound in use
    (0 without a bound). Each model's own figures are under ``models``.
    """
    per_model: list[dict[str, Any]] = []
    for worker in models.workers():
        load = await _load(worker)  # None: it counts as holding nothing it can report
        cache = load.kv_cache if load is not None else None
        usage = cache.usage if cache is not None else 0.0
        capacity = cache.capacity_tokens if cache is not None else 0
        per_model.append(
            {
                "model": worker.name,
                "up": load is not None,
                "num_running_reqs": 0 if load is None else load.running,
                "num_waiting_reqs": 0 if load is None else load.waiting,
                "num_used_tokens": round(usage * capacity),
                "max_total_num_tokens": capacity,
                "token_usage": usage,
            }
        )
    running = sum(entry["num_running_reqs"] for entry in per_model)
    waiting = sum(entry["num_waiting_reqs"] for entry in per_model)
    rank = {
        "dp_rank": 0,
        "num_running_reqs": running,
        "num_waiting_reqs": waiting,
        "num_waiting_uncached_tokens": 0,
        "num_total_reqs": running + waiting,
        "num_used_tokens": sum(entry["num_used_tokens"] for entry in per_model),
        "max_total_num_tokens": sum(entry["max_total_num_tokens"] for entry in per_model),
        "token_usage": max((entry["token_usage"] for entry in per_model), default=0.0),
        "gen_throughput": 0.0,
        "cache_hit_rate": 0.0,
        "utilization": in_flight / limit if limit else 0.0,
        "max_running_requests": limit,
    }
    stamp = datetime.datetime.now(datetime.UTC).isoformat()
    return {"timestamp": stamp, "dp_rank_count": 1, "loads": [rank], "models": per_model}


def exposition() -> bytes:
    """The registry in Prometheus's text format."""
    return generate_latest(REGISTRY)
