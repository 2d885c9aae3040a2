"""Where the CPU went: seconds used per process during a run, per generated token.

The bench's own process (the client) from ``time.process_time``; the server's process (with its bridge, when
``ovserve serve`` runs both) and the model's engine process from the server's ``ovserve_process_cpu_seconds`` on
``/metrics``; with ``--engine``, the engine alone's process (engine_process.py) from /proc. Reading /metrics costs the
server a little CPU itself, outside the measured window.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families
from tornado.httpclient import AsyncHTTPClient

METRIC = "ovserve_process_cpu_seconds"
log = logging.getLogger(__name__)
_unread: set[str] = set()  # metrics URLs already reported as unreadable (said once per run, not per sample)


@dataclass(frozen=True)
class CpuSample:
    """CPU seconds used so far: this process's, and the server's and the model's engine's (None if unread)."""

    client: float
    server: float | None = None
    engine: float | None = None


async def sample(metrics_url: str | None, model: str) -> CpuSample:
    """This process's CPU now, and the server's and ``model``'s engine's from ``metrics_url`` if it answers."""
    client = time.process_time()
    if not metrics_url:
        return CpuSample(client)
    try:
        reply = await AsyncHTTPClient().fetch(metrics_url, request_timeout=10)
    except Exception as error:  # no /metrics there (a bridge alone, an older server): the client's figure alone
        if metrics_url not in _unread:
            _unread.add(metrics_url)
            log.warning("no server or engine CPU figures: %s answered %s", metrics_url, error)
        return CpuSample(client)
    found = {
        (sample.labels.get("process"), sample.labels.get("model")): sample.value
        for family in text_string_to_metric_families(reply.body.decode())
        for sample in family.samples
        if sample.name == METRIC
    }
    return CpuSample(client, found.get(("server", "")), found.get(("engine", model)))


def per_token(before: CpuSample, after: CpuSample, tokens: int) -> dict[str, float]:
    """Microseconds of CPU per generated token, by process, between two samples."""
    if tokens <= 0:
        return {}
    out = {"client": (after.client - before.client) / tokens * 1e6}
    for name in ("server", "engine"):
        start, end = getattr(before, name), getattr(after, name)
        if start is not None and end is not None:
            out[name] = (end - start) / tokens * 1e6
    return out
