"""The engine process: loads the pipeline and runs EngineCore, talking to the server over a pipe.

Why a process (benchmarks/step_loop.py, measured on this kind of machine):
``step()`` holds the GIL, so in-process it stalls the gRPC/HTTP event loop for
every step (p99 loop lateness 2-15 ms at 8-32 streams); in its own process the
loop stayed under 1.3 ms and throughput at 32 streams was higher, for the price
of one pickled message per hand-over (see EngineCore).

Messages: see messages.py (one record type each).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import signal
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ovserve.service.engine import salting
from ovserve.service.engine.adapters import LoraAdapter
from ovserve.service.engine.core import EngineCore, Submission
from ovserve.service.engine.messages import (
    HEARTBEAT_S,
    AdaptersSet,
    Alive,
    Cancel,
    Outcome,
    Outcomes,
    QueryStats,
    SetAdapters,
    StatsReport,
)
from ovserve.service.engine.scoring import ScoringModel, scoring_properties
from ovserve.service.engine.scoring_lane import ScoringLane
from ovserve.service.workers.child import Channel, ChildConnection
from ovserve.service.workers.errors import EngineError
from ovserve.service.workers.messages import LoadFailed, Ready, Stop


@dataclass(frozen=True)
class WorkerSpec:
    """What the engine process loads."""

    model_dir: Path
    draft_dir: Path | None
    device: str
    scheduler: dict[str, object]  # SchedulerConfig attributes
    prompt_lookup: bool = False
    flush_interval: float = 0.0  # seconds; see EngineCore
    update_rate: float = 0.0  # hand-overs per second over all requests (0: no budget); see EngineCore
    properties: dict[str, object] = field(default_factory=dict)  # device properties (EngineSettings.properties)
    markup: tuple[str, ...] = ()  # the output parsers' markup: its special tokens stay in the text (TokenCodec)
    adapters: tuple[LoraAdapter, ...] = ()  # LoRA adapters requests may name (checked: service/engine/adapters.py)
    # Prefix caching per namespace (salting.py): requests' prompts come salted unless the pipeline cannot take it.
    salted: bool = False


def main() -> None:
    """Entry point of the engine process: ``python -m ovserve.service.engine FD``.

    FD is the engine's end of a socketpair made by the server; the first
    message on it is the WorkerSpec. Started with subprocess rather than
    multiprocessing's spawn, which would re-run the parent's ``__main__``.
    """
    # Ctrl-C reaches the whole process group; the server decides when the engine stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s engine: %(message)s")
    connection = ChildConnection(Connection(int(sys.argv[1])))
    spec: WorkerSpec = connection.recv()
    # Compiled at the first request that asks for alternatives or prompt logprobs, or has a logit bias (see
    # scoring.py, biased_lane.py); its KV cache is f16 whatever the pipeline's (scoring_properties).
    scoring = ScoringModel(spec.model_dir, spec.device, scoring_properties(spec.properties))
    try:
        core = _load(spec, scoring)
    except Exception as error:
        connection.send(LoadFailed(f"{type(error).__name__}: {error}"))
        return
    connection.send(Ready())
    connection.start_heartbeat()
    lane = ScoringLane(scoring, connection.send)
    with contextlib.suppress(EOFError, BrokenPipeError):  # the server is gone: nothing left to serve
        _serve(connection, core, lane)


def _load(spec: WorkerSpec, scoring: ScoringModel) -> EngineCore:
    import openvino_genai as ov_genai

    from ovserve.service.workers.codec import TokenCodec

    if spec.draft_dir is not None and spec.scheduler.get("enable_prefix_caching"):
        # openvino-genai 2026.4: speculative sampling with prefix caching fails a
        # step ("content_length <= prompt_ids.size() + ...") after a few requests.
        logging.info("prefix caching is off for a pipeline with a draft model")
    # One Adapter object each, kept: openvino-genai tells adapters apart by object, not by file.
    adapters = adapter_set(spec.adapters, {})
    # The pipeline's prefix cache is kept per namespace when salted ids hold on it (checked on the first one built).
    # (a vision model's pipeline takes its prompts as text, which cannot be salted: isolated, it caches nothing)
    saltable = spec.draft_dir is None and salting.takes_token_ids(spec.model_dir)
    salt = {"stride": salting.STRIDE if spec.salted and saltable else 0, "checked": False}

    def pipeline(adapters: dict[str, tuple[ov_genai.Adapter, float]]) -> ov_genai.ContinuousBatchingPipeline:
        scheduler = ov_genai.SchedulerConfig()
        for name, value in spec.scheduler.items():
            setattr(scheduler, name, value)
        if spec.draft_dir is not None or (spec.salted and not salt["stride"]):
            scheduler.enable_prefix_caching = False
        if adapters and scheduler.enable_prefix_caching:
            # openvino-genai 2026.4 keys cached blocks by tokens alone: a prefix computed under one adapter would
            # be reused under another, or under the base model.
            logging.info("prefix caching is off for a pipeline serving LoRA adapters")
            scheduler.enable_prefix_caching = False
        properties: dict[str, object] = dict(spec.properties)
        if spec.draft_dir is not None:
            # A fresh draft each time: a pipeline transforms the draft's graph in place.
            properties["draft_model"] = ov_genai.draft_model(str(spec.draft_dir), spec.device)
        if spec.prompt_lookup:
            properties["prompt_lookup"] = True
        if adapters:  # every adapter at construction: the pipeline hooks the layers they target, once
            mode = ov_genai.AdapterConfig.Mode.MODE_DYNAMIC  # the one mode that takes int8/int4 weights and switches
            properties["adapters"] = ov_genai.AdapterConfig(list(adapters.values()), mode)
        built = ov_genai.ContinuousBatchingPipeline(str(spec.model_dir), scheduler, spec.device, properties)
        if salt["stride"] and not salt["checked"] and scheduler.enable_prefix_caching:
            salt["checked"] = True
            if not salting.salt_holds(built):
                logging.warning("prefix caching is off: this device computes otherwise for salted token ids, so "
                                "API keys' prompts cannot be kept apart in its cache (salting.py)")  # fmt: skip
                salt["stride"] = 0
                return pipeline(adapters)
        return built

    first = [pipeline(adapters)]  # built (and its salt checked) before the core learns the stride
    return EngineCore(
        lambda: first.pop() if first else pipeline(adapters),
        TokenCodec(spec.model_dir, spec.markup).decode_windows,
        speculative=spec.draft_dir is not None,
        adapters=adapters,
        rebuild=pipeline,
        flush_interval=spec.flush_interval,
        update_rate=spec.update_rate,
        salted=bool(salt["stride"]),
        lane=scoring.sequence,  # the biased lane decodes on the scoring copy (biased_lane.py)
    )


def adapter_set(adapters: tuple[LoraAdapter, ...], known: dict[str, tuple[Any, float]]) -> dict[str, tuple[Any, float]]:
    """The openvino-genai Adapter and alpha of each adapter, reusing those ``known`` already (openvino-genai tells
    adapters apart by object, not by file)."""
    import openvino_genai as ov_genai

    return {
        adapter.name: known.get(adapter.name) or (ov_genai.Adapter(str(adapter.path)), adapter.alpha)
        for adapter in adapters
    }


def _serve(connection: Channel, core: EngineCore, lane: ScoringLane) -> None:
    said = time.monotonic()  # when the server last heard from us

    def hand_over(outcomes: list[Outcome]) -> bool:
        """Send the outcomes; the scored requests' go through the lane. Whether anything was sent now."""
        direct = []
        for outcome in outcomes:
            if lane.claims(outcome[0]):
                lane.put(outcome)
            else:
                direct.append(outcome)
        if direct:
            connection.send(Outcomes(direct))
        return bool(direct)

    while True:
        # Drain every waiting command without blocking while requests run;
        # block on the pipe (no spinning) when there is nothing to step.
        timeout: float | None = 0.0 if core.busy else None
        while connection.poll(timeout):
            match connection.recv():
                case Submission() as submission:
                    if submission.scoring is not None:
                        lane.open(submission)
                    if submission.scoring is None or submission.scoring.generate:
                        hand_over(core.add(submission))
                case Cancel(request_id):
                    core.cancel(request_id)
                    lane.cancel(request_id)
                case QueryStats(token):
                    stats = dataclasses.replace(core.stats(), scoring=lane.active)
                    connection.send(StatsReport(token, stats))
                case SetAdapters(token, adapters):
                    try:
                        core.set_adapters(token, adapter_set(adapters, core.adapters))
                    except Exception as error:  # an adapter openvino-genai cannot read
                        connection.send(AdaptersSet(token, f"{type(error).__name__}: {error}"))
                case Stop():
                    stopping = EngineError("the engine is shutting down")
                    failed = dict(core.fail_all(stopping))
                    failed.update((request_id, stopping) for request_id in lane.stop())
                    connection.send(Outcomes(list(failed.items())))
                    return
            timeout = 0.0
        for request_id in lane.take_failed():  # the scoring failed: the pipeline need not go on
            core.cancel(request_id)
        if core.busy:
            if hand_over(core.step()):
                said = time.monotonic()
            elif time.monotonic() - said >= HEARTBEAT_S:
                connection.send(Alive())
                said = time.monotonic()
            for token, problem in core.take_adapters_set():
                connection.send(AdaptersSet(token, problem))
