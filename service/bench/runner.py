"""A whole bench: every load on every backend (and the engine), alternating, then summaries and ratios."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import os
import platform
import random
import statistics
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ovserve.clients.defaults import DEFAULT_REST_URL, DEFAULT_TARGET
from ovserve.service.bench import conversation, cpu, kv_cache
from ovserve.service.bench.backends import Backend, GrpcBackend, HttpBackend, run_load
from ovserve.service.bench.load import BenchRequest, PromptSource, Schedule, cycle, noise_images
from ovserve.service.bench.metrics import RequestResult, median_summary, summarize
from ovserve.service.bench.progress import ProgressBar
from ovserve.service.bench.targets import Ratio, median_ratios, ratios
from ovserve.service.bench.urls import ApiBase, first_grpc_model, first_model


@dataclass
class BenchConfig:
    """Everything a bench run needs; the CLI fills it from its options."""

    backends: list[str] = field(default_factory=lambda: ["grpc"])
    target: str = DEFAULT_TARGET
    url: str = DEFAULT_REST_URL
    endpoint: str = "chat"
    model: str | None = None  # served name; None: the first model the server lists
    model_dir: Path | None = None
    concurrency: list[int] = field(default_factory=lambda: [1])
    rate: float | None = None
    max_concurrency: int | None = None
    requests: int = 32
    warmup: int = 4
    input_tokens: list[int] = field(default_factory=lambda: [128])  # several: one run each, or mixed_lengths
    mixed_lengths: bool = False  # one run whose prompt lengths are drawn from input_tokens
    input_range: float = 0.1
    output_tokens: int = 128
    prompts: list[str] | None = None  # from --prompts; replaces random prompts
    engine: bool = False
    rounds: int = 1
    prefix_tokens: int = 1024  # length of the cached-prefix probe (--engine only; 0 skips it)
    metrics_url: str | None = None  # the server's /metrics (None: next to --url; "": none)
    peer: str | None = None  # another OpenAI-compatible server's URL, run the same load (llama-server, vLLM, OVMS)
    peer_model: str | None = None  # the model the peer serves (None: the first it lists)
    images: int = 0  # images per request (chat; random noise, new for every request)
    image_size: int = 64  # their side in pixels
    seed: int = 0
    progress: bool | None = None  # None: when stderr is a terminal
    mix: tuple[str, ...] = ()  # served names the requests take in turn (a base model and its adapters); () none
    cold_starts: int = 0  # rounds of cold starts of the model (service/bench/cold.py); 0: none
    api_key: str | None = None  # sent to ovserve's faces with every request (None: the admin key, if any)
    admin_key: str | None = None  # for the cold starts' unloads and loads (with keys on, only an admin key may)
    turns: int = 0  # conversations of this many turns instead of independent requests (conversation.py); 0: none
    system_tokens: int = 512  # the conversations' shared system prompt
    turn_tokens: int = 64  # each user message of a conversation
    scripted_replies: bool = False  # conversations resend scripted replies (random-weight models)
    conversations: int | None = None  # per run (None: as many as the concurrency, all in flight at once)
    kv_cache: bool = False  # read the KV cache in use during each run (kv_cache.py)

    @property
    def request_key(self) -> str | None:
        """The key requests carry: the API key, else the admin key (an admin key is a valid API key too)."""
        return self.api_key or self.admin_key

    def schedules(self) -> list[Schedule]:
        """The loads, in the order they run."""
        if self.rate is not None:
            return [Schedule(concurrency=self.max_concurrency, rate=self.rate, seed=self.seed)]
        return [Schedule(concurrency=concurrency) for concurrency in self.concurrency]

    def lengths(self) -> list[tuple[int, ...]]:
        """The prompt lengths of each run, in the order they run: each --input-tokens value alone, or all of them
        drawn from in one run (--mixed-lengths)."""
        if self.mixed_lengths:
            return [tuple(self.input_tokens)]
        return [(tokens,) for tokens in self.input_tokens]

    def length_label(self, lengths: tuple[int, ...]) -> str:
        """How a run's prompt lengths are named after its load ("" when every run has the one length)."""
        if self.turns or (len(self.input_tokens) == 1 and not self.mixed_lengths):
            return ""
        return f" in={lengths[0]}" if len(lengths) == 1 else f" in=mix({','.join(map(str, lengths))})"


class Bench:
    """Runs a BenchConfig; ``await Bench(config).run()`` returns the report as a dict."""

    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        self._engine: Any = None  # an EngineProcess, started only with --engine
        self._image_rng = random.Random(config.seed)
        self._prompts: PromptSource | None = None
        self._offset = 0  # where the next run starts in a --prompts file
        self._model = config.model or ""  # the served model benched (found in _open_backends if not given)
        self._metrics_url = config.metrics_url if config.metrics_url is not None else ApiBase.parse(config.url).metrics

    async def run(self) -> dict[str, Any]:
        """Every round of every load on every backend; the report with summaries (medians over rounds)."""
        config = self.config
        backends = await self._open_backends()
        try:
            # First: a server that cannot be asked to unload stops the bench before any load.
            cold_start = await self._cold_starts(backends) if config.cold_starts else None
            runs: list[dict[str, Any]] = []
            runners = [runner for runner in (self._engine, *backends) if runner is not None]
            for round_number in range(config.rounds):
                # Back to back within a round, in the reverse order every other round: a shared machine's speed
                # drifts (all runners, the peer too, 20 % slower from one round to the next, measured), and a
                # runner always run last would always take the drift the same way.
                order = runners if round_number % 2 == 0 else runners[::-1]
                for lengths in config.lengths():
                    for schedule in config.schedules():
                        for runner in order:
                            runs.append(await self._one(runner, schedule, lengths, round_number))
            prefix = await self._prefix_probes(backends) if config.engine and config.prefix_tokens > 0 else {}
        finally:
            for backend in backends:
                await backend.close()
            if self._engine is not None:
                await asyncio.to_thread(self._engine.close)
        summaries = _median_runs(runs)
        report: dict[str, Any] = {
            "machine": _machine(),
            "config": {key: str(value) if isinstance(value, Path) else value for key, value in asdict(config).items()},
            "runs": runs,
            "summary": summaries,
        }
        report["config"]["prompts"] = len(config.prompts) if config.prompts else None  # the count, not the text
        for secret in ("api_key", "admin_key"):  # whether one was given, never the key
            report["config"][secret] = "(given)" if report["config"][secret] else None
        if cold_start is not None:
            report["cold_start"] = cold_start
        if config.engine or config.peer:
            concurrencies = [] if config.rate is not None else config.concurrency
            per_round = [self._round_ratios(runs, number + 1, concurrencies, prefix) for number in range(config.rounds)]
            found = median_ratios(per_round) if concurrencies else []
            report["prefix_ttft_ms"] = prefix
            report["ratios"] = [ratio.as_dict() for ratio in found]
        return report

    def _round_ratios(
        self, runs: Sequence[dict[str, Any]], number: int, concurrencies: Sequence[int], prefix: dict[str, Any]
    ) -> list[Ratio]:
        """One round's ratios, for each prompt length's runs apart (each named by its length when there are
        several), and the conversations' turn by turn."""
        config = self.config
        # A run with failures is left out: its ratios are NaN that round, not a false 0.
        clean = [run for run in runs if run["round"] == number and not run["summary"]["failed"]]
        found: list[Ratio] = []
        for index, lengths in enumerate(config.lengths()):
            label = config.length_label(lengths)
            # (a run without lengths, a conversation's or a --prompts file's, is the only group there is)
            group = [run for run in clean if run["input_tokens"] in (None, list(lengths))]
            summaries = {(run["backend"], run["concurrency"]): run["summary"] for run in group}
            probes = prefix if index == 0 else {}  # the cached-prefix probe's own length: its ratio once
            measured = ratios(summaries, concurrencies, probes, _is_real_size(config.model_dir))
            found += [
                dataclasses.replace(ratio, metric=f"{label.strip()} {ratio.metric}".strip()) for ratio in measured
            ]
        if config.turns:
            by_turn = {(run["backend"], run["concurrency"]): run["by_turn"] for run in clean}
            found += conversation.ratios(by_turn, concurrencies, _is_real_size(config.model_dir))
        return found

    async def _open_backends(self) -> list[Backend]:
        config = self.config
        if config.engine:
            if config.model_dir is None:
                raise SystemExit("--engine needs --model-dir (the model directory the service serves)")
            from ovserve.service.bench.engine_process import EngineProcess

            # Waited for in a thread: compiling a real-size model takes a while and the loop has nothing else to do.
            self._engine = await asyncio.to_thread(EngineProcess, config.model_dir, config.endpoint)
        if config.prompts is None:
            codec = self._engine.codec if self._engine is not None else _codec(config.model_dir)
            self._prompts = PromptSource(codec, config.seed)
        # Every server is asked for its models first: a wrong URL or target ends in one line naming it.
        service = ApiBase.parse(config.url)
        key = config.request_key
        listed = [await first_grpc_model(config.target, key) if name == "grpc" else await first_model(service, key)
                  for name in config.backends]  # fmt: skip
        model = self._model = config.model or listed[0]
        slots = max([*config.concurrency, config.max_concurrency or 0, 64 if config.rate else 0])
        makers: dict[str, Callable[[], Backend]] = {
            "grpc": lambda: GrpcBackend(config.target, model, config.endpoint, key),
            "http": lambda: HttpBackend(service, model, config.endpoint, slots, api_key=key),
        }
        backends = [makers[name]() for name in config.backends]
        if config.peer:
            peer = ApiBase.parse(config.peer, default_prefix="/v1")  # the OpenAI path other servers use
            peer_model = config.peer_model or await first_model(peer)
            backends.append(HttpBackend(peer, peer_model, config.endpoint, slots, name="peer"))
        return backends

    async def _cold_starts(self, backends: Sequence[Backend]) -> dict[str, Any]:
        """``--cold-starts``: the model unloaded and timed as its first request loads it, on each of ovserve's faces
        (not the engine's, nor a peer's); the model is left loaded."""
        from ovserve.service.bench import cold

        config = self.config
        key = config.admin_key or config.api_key  # (the one key given may be an admin's)
        admins: dict[str, Callable[[], cold.ModelAdmin]] = {
            "grpc": lambda: cold.GrpcAdmin(config.target, key),
            "http": lambda: cold.HttpAdmin(ApiBase.parse(config.url), key),
        }
        faces = [cold.Face(backend, admins[backend.name]()) for backend in backends if backend.name in admins]
        try:
            return await cold.measure(faces, self._model, config.cold_starts, self._requests)
        finally:
            for face in faces:
                await face.admin.close()

    def _requests(self, count: int, lengths: tuple[int, ...] = ()) -> list[BenchRequest]:
        """Fresh prompts (and images) for every run: a prompt seen before would hit the prefix cache and flatter
        TTFT. ``lengths``: the run's prompt lengths (one, or several to draw from; () the first --input-tokens)."""
        config = self.config
        if config.prompts is not None:
            requests = cycle(config.prompts, count, config.output_tokens, self._offset)
            self._offset += count
        else:
            assert self._prompts is not None
            drawn: int | tuple[int, ...] = lengths if len(lengths) > 1 else (lengths or tuple(config.input_tokens))[0]
            requests = self._prompts.requests(count, drawn, config.input_range, config.output_tokens)
        if config.mix:  # in turn, so that neighbours in a batch ask for different names
            requests = [dataclasses.replace(request, model=config.mix[index % len(config.mix)])
                        for index, request in enumerate(requests)]  # fmt: skip
        if not config.images:
            return requests
        return [
            dataclasses.replace(request, images=noise_images(config.images, config.image_size, self._image_rng))
            for request in requests
        ]

    async def _load(
        self,
        runner: Any,
        requests: Sequence[BenchRequest],
        schedule: Schedule,
        progress: ProgressBar | None,
        peak: kv_cache.KvCachePeak | None = None,
    ) -> tuple[list[RequestResult], float]:
        if runner is self._engine:
            results, duration = await asyncio.to_thread(runner.run, requests, schedule, progress, peak)
            return results, duration
        return await run_load(runner, requests, schedule, progress)

    async def _converse(
        self, runner: Any, schedule: Schedule, label: str, peak: kv_cache.KvCachePeak | None
    ) -> tuple[list[conversation.Turn], float]:
        """``--turns``: the run's conversations, with a new script (system prompt and user messages)."""
        config = self.config
        slots = schedule.slots or 1
        load = conversation.ConversationLoad(
            config.conversations or slots,
            config.turns,
            config.system_tokens,
            config.turn_tokens,
            config.output_tokens,
            config.scripted_replies,
        )
        assert self._prompts is not None
        script = conversation.Script.draw(self._prompts, load)
        progress = ProgressBar(label, load.conversations * load.turns, enabled=config.progress)
        try:
            if runner is self._engine:
                return await asyncio.to_thread(runner.converse, script, load, slots, progress, peak)
            return await conversation.run_service(runner, script, load, slots, progress)
        finally:
            progress.close()

    @contextlib.asynccontextmanager
    async def _kv_cache(self, runner: Any) -> AsyncIterator[kv_cache.KvCachePeak | None]:
        """``--kv-cache``: where a run's fullest KV cache is noted (the engine's pipeline read after each step;
        ovserve's and the peer's /metrics read during the run)."""
        if not self.config.kv_cache:
            yield None
        elif runner is self._engine:
            yield kv_cache.KvCachePeak("bytes")
        elif runner.name == "peer":
            assert self.config.peer is not None
            peer = ApiBase.parse(self.config.peer, default_prefix="/v1")
            async with kv_cache.sampled(peer.metrics, "llama-server", "") as peak:
                yield peak
        else:
            async with kv_cache.sampled(self._metrics_url, "ovserve", self._model) as peak:
                yield peak

    async def _one(
        self, runner: Any, schedule: Schedule, lengths: tuple[int, ...], round_number: int
    ) -> dict[str, Any]:
        config = self.config
        if config.warmup:
            warmup = self._requests(config.warmup, lengths)
            await self._load(runner, warmup, Schedule(concurrency=schedule.slots or 8), None)
        load_label = schedule.label + config.length_label(lengths)
        label = f"{runner.name} {load_label}" + (f" #{round_number + 1}" if config.rounds > 1 else "")
        # The engine alone's CPU is read from its process; a peer's /metrics are not ovserve's.
        metrics = None if runner is self._engine or runner.name == "peer" else self._metrics_url
        turns: list[conversation.Turn] = []
        requests: list[BenchRequest] = []
        before = await self._cpu(runner, metrics)
        async with self._kv_cache(runner) as peak:
            if config.turns:
                turns, duration = await self._converse(runner, schedule, label, peak)
                results = [turn.result for turn in turns]
            else:
                requests = self._requests(config.requests, lengths)
                progress = ProgressBar(label, config.requests, enabled=config.progress)
                results, duration = await self._load(runner, requests, schedule, progress, peak)
                progress.close()
        after = await self._cpu(runner, metrics)
        summary = summarize(results, duration)
        summary["cpu_us_per_token"] = cpu.per_token(before, after, summary["output_tokens"])
        by_model = {  # each name's own figures (throughput: its tokens over the whole run's time)
            name: summarize([result for request, result in zip(requests, results, strict=True)
                             if request.model == name], duration)
            for name in config.mix
        }  # fmt: skip
        extra: dict[str, Any] = {"by_model": by_model} if by_model else {}
        if config.turns:
            extra["by_turn"] = conversation.turn_summaries(turns, config.turns)
            extra["prompt_tokens_by_conversation"] = conversation.prompt_tokens(
                turns, len({t.conversation for t in turns})
            )
        if peak is not None and (figures := peak.figures(kv_cache.context_tokens(summary))) is not None:
            extra["kv_cache"] = figures
        return {
            "backend": runner.name,
            "load": load_label,
            "concurrency": schedule.concurrency if schedule.rate is None else None,
            "rate": schedule.rate,
            "round": round_number + 1,
            "input_tokens": None if config.turns or config.prompts is not None else list(lengths),
            "summary": summary,
        } | extra

    async def _cpu(self, runner: Any, metrics: str | None) -> cpu.CpuSample:
        """The CPU used so far by this process, and by the server and its engine (``metrics``) or the engine alone."""
        sample = await cpu.sample(metrics, self._model)
        if runner is self._engine:
            sample = dataclasses.replace(sample, engine=runner.cpu_seconds())
        return sample

    async def _prefix_probes(self, backends: Sequence[Backend]) -> dict[str, dict[str, float]]:
        """TTFT of a long prompt sent cold, then again with the same prefix; median over rounds, per backend."""
        assert self._prompts is not None or self.config.prompts is not None
        source = self._prompts or PromptSource(None, self.config.seed)
        probes: dict[str, dict[str, list[float]]] = {}
        for _ in range(self.config.rounds):
            for runner in [r for r in (self._engine, *backends) if r is not None]:
                prefix = source.prompt(self.config.prefix_tokens)  # new for every probe, so the first is truly cold
                times = probes.setdefault(runner.name, {"cold_ms": [], "warm_ms": []})
                for key, suffix in (("cold_ms", " first question"), ("warm_ms", " second question")):
                    results, _ = await self._load(
                        runner, [BenchRequest(prefix + suffix, 4)], Schedule(concurrency=1), None
                    )
                    if results and results[0].ok:
                        times[key].append(results[0].ttft * 1000)
        return {
            name: {key: statistics.median(values) for key, values in times.items()}
            for name, times in probes.items()
            if times["cold_ms"] and times["warm_ms"]
        }


def _median_runs(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (backend, load): the median over its rounds."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in runs:
        grouped.setdefault((run["backend"], run["load"]), []).append(run)
    merged = []
    for rounds in grouped.values():
        first = rounds[0]
        entry = {key: first[key] for key in ("backend", "load", "concurrency", "rate", "input_tokens")}
        entry["summary"] = median_summary([run["summary"] for run in rounds])
        for part in ("by_model", "by_turn"):  # each name's (each turn's) summaries, merged the same way
            if part in first:
                entry[part] = {name: median_summary([run[part][name] for run in rounds]) for name in first[part]}
        measured = [run["kv_cache"] for run in rounds if "kv_cache" in run]
        if measured:
            entry["kv_cache"] = _median_figures(measured)
        merged.append(entry)
    return merged


def _median_figures(rounds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each number's median over the rounds that have it (None if none has); a text (a unit) as the first says."""
    merged: dict[str, Any] = {}
    for key, value in rounds[0].items():
        numbers = [figures[key] for figures in rounds if isinstance(figures.get(key), int | float)]
        merged[key] = value if isinstance(value, str) else (statistics.median(numbers) if numbers else None)
    return merged


def _codec(model_dir: Path | None) -> Any:
    if model_dir is None:
        return None
    from ovserve.service.workers.codec import TokenCodec

    return TokenCodec(model_dir)


def _is_real_size(model_dir: Path | None) -> bool:
    """Whether the model is not the bundled tiny-chat (whose throughput target is lower: it measures overhead)."""
    from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR

    return model_dir is None or model_dir.resolve() != (BUNDLED_MODELS_DIR / BUNDLED_MODEL).resolve()


def _machine() -> dict[str, Any]:
    """Where and when the figures were taken."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
