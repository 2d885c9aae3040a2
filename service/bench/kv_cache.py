"""KV-cache memory per stream: the server's cache gauges read while a run is in flight (``--kv-cache``).

ovserve's /metrics has, per model, the share of the KV cache in use (``ovserve_kv_cache_usage_ratio``: the
pipeline's ``PipelineMetrics.cache_usage``, a share of the blocks allocated so far), the bytes allocated so far
(``ovserve_kv_cache_bytes``: ``kv_cache_size_in_bytes``; the pipeline grows it as it is used) and the requests its
engine runs. Their product is the bytes in use; at the fullest moment of a run, divided by the streams running
then, it is the KV cache one stream holds at that run's context length. Prompts that share a prefix (a
conversation's system prompt) share its blocks with prefix caching on, so a stream then holds less than its own
context's worth. llama.cpp's llama-server (``--metrics``) counted the tokens its cache holds
(``llamacpp:kv_cache_tokens``) beside the requests it processes; where a peer still says so, its tokens per stream
are reported beside. Builds since May 2025 dropped its KV-cache gauges (ggml-org/llama.cpp#13660): then the peer's
row has none (llama-server reserves ``--ctx-size`` ÷ ``--parallel`` cells per slot up front, used or not).

The gauges are read every ``INTERVAL`` seconds: each read asks the model's engine process for its figures, a
small cost to the run it measures, so sampling is asked for (``--kv-cache``), not always on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from tornado.httpclient import AsyncHTTPClient

INTERVAL = 0.25  # seconds between reads of /metrics during a run
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Gauges:
    """The names a server kind gives its KV-cache figures: the in-use measure (and, when usage is a share, what
    it is a share of) and the streams running."""

    in_use: str  # bytes in use, or the share of ``of`` in use
    of: str | None  # None: ``in_use`` is the measure itself
    streams: str
    unit: str  # "bytes" or "tokens"
    by_model: bool  # whether the samples carry a ``model`` label


# One table of what each server calls its figures, read the same way.
SERVERS: dict[str, Gauges] = {
    "ovserve": Gauges(
        "ovserve_kv_cache_usage_ratio", "ovserve_kv_cache_bytes", "ovserve_engine_requests_running", "bytes", True
    ),
    "llama-server": Gauges("llamacpp:kv_cache_tokens", None, "llamacpp:requests_processing", "tokens", False),
}


def read_gauges(text: str, gauges: Gauges, model: str) -> tuple[float, float] | None:
    """(in use, streams running) from a /metrics page; None if the page lacks the figures."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if gauges.by_model and sample.labels.get("model") != model:
                continue
            found[sample.name] = sample.value
    if gauges.in_use not in found or gauges.streams not in found:
        return None
    in_use = found[gauges.in_use]
    if gauges.of is not None:
        if gauges.of not in found:
            return None
        in_use *= found[gauges.of]
    return in_use, found[gauges.streams]


class KvCachePeak:
    """The fullest KV cache seen during a run, with the streams running at that moment."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.in_use = 0.0
        self.streams = 0.0
        self.samples = 0

    def observe(self, in_use: float, streams: float) -> None:
        """One reading of the cache in use and the streams running."""
        self.samples += 1
        if streams > 0 and in_use > self.in_use:
            self.in_use, self.streams = in_use, streams

    def figures(self, context_tokens: float) -> dict[str, Any] | None:
        """The run's figures: peak in use, streams then, per stream and per context token (None: never seen in
        use). ``context_tokens`` is a stream's prompt and reply, the longest its context got."""
        if not self.streams:
            return None
        per_stream = self.in_use / self.streams
        return {
            "unit": self.unit,
            "peak_in_use": self.in_use,
            "streams_at_peak": self.streams,
            "per_stream": per_stream,
            "context_tokens": context_tokens,
            "per_context_token": per_stream / context_tokens if context_tokens else None,
            "samples": self.samples,
        }


@contextlib.asynccontextmanager
async def sampled(metrics_url: str | None, server: str, model: str) -> AsyncIterator[KvCachePeak | None]:
    """Reads ``metrics_url`` every INTERVAL seconds while the block runs; yields the peak (None: no URL)."""
    if not metrics_url:
        yield None
        return
    gauges = SERVERS[server]
    peak = KvCachePeak(gauges.unit)
    client = AsyncHTTPClient(force_instance=True)

    async def poll() -> None:
        warned = False
        while True:
            try:
                reply = await client.fetch(metrics_url, request_timeout=10)
                read = read_gauges(reply.body.decode(), gauges, model)
            except Exception as error:  # no /metrics there, or not these gauges: the run goes on without them
                read = None
                if not warned:
                    log.warning("no KV-cache figures: %s answered %s", metrics_url, error)
            if read is not None:
                peak.observe(*read)
            elif not warned:
                log.info("no KV-cache figures at %s", metrics_url)
            warned = warned or read is None
            await asyncio.sleep(INTERVAL)

    task = asyncio.create_task(poll())
    try:
        yield peak
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        client.close()


def context_tokens(summary: Mapping[str, Any]) -> float:
    """A run's longest context per stream on average: its prompt tokens and reply tokens per completed request."""
    done = summary.get("completed") or 0
    return (summary["input_tokens"] + summary["output_tokens"]) / done if done else 0.0


def table(runs: list[dict[str, Any]]) -> str:
    """One line per run that measured its KV cache: the context per stream, the streams at the fullest moment,
    and what one stream held (MiB for ovserve and the engine, tokens for llama-server)."""
    headers = ["backend", "load", "context tok", "streams", "per stream", "per context tok"]
    rows = []
    for run in runs:
        figures = run.get("kv_cache")
        if not figures:
            continue
        scale, unit = (2**20, "MiB") if figures["unit"] == "bytes" else (1, "tokens")
        per_token = figures["per_context_token"]
        rows.append([
            run["backend"], run["load"], f"{figures['context_tokens']:.0f}", f"{figures['streams_at_peak']:.0f}",
            f"{figures['per_stream'] / scale:.2f} {unit}",
            "-" if per_token is None else f"{per_token:.0f} {figures['unit']}",
        ])  # fmt: skip
    if not rows:
        return "KV cache: not read (no /metrics with KV-cache figures answered)"
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in [headers, *rows]]
    return "\n".join(
        ["KV cache per stream, at the fullest moment of each run:", lines[0], "-" * len(lines[0]), *lines[1:]]
    )
