"""Step-loop design benchmark for the ovserve engine: which thread or process should loop ``step()``.

What it measures, side by side in one run, on the same prompts and the same
greedy config (ignore_eos=True, fixed max_new_tokens, so every request makes
exactly the same number of tokens):

1. engine   -- ``ContinuousBatchingPipeline.generate(input_ids, [cfg] * N)``
               run in an executor thread (generate releases the GIL). This is
               the ceiling: no per-step Python at all.
2. thread   -- one Python thread loops: drain a thread-safe submit queue into
               ``add_request``, ``step()``, ``read()`` every handle that
               ``can_read()``, and hand the whole step's deltas to the asyncio
               loop with ONE ``call_soon_threadsafe``. The loop fans out to
               per-request ``asyncio.Queue``s. Sleeps on a ``threading.Event``
               when idle. Detokenisation runs on the event loop.
3. process  -- the same step loop in its own process (multiprocessing, spawn).
               Requests go over a duplex pipe; each step's deltas for all
               requests come back as ONE pickled list of
               (request_id, token_ids, text, finished, finish_reason).
               Detokenisation runs in the engine process, so the text
               travels with the ids. The asyncio side
               reads the pipe with ``loop.add_reader`` and fans out.

Detokenisation (--detok): "batched" (default) decodes every request's step
delta in ONE batched Tokenizer.decode call per step (BatchDetokenizer, the
vLLM prefix/read-offset scheme, multi-byte safe); "streamer" uses one
openvino_genai.TextStreamer per request (~100 us per write on this machine);
"none" skips it, to show its cost.

For 2 and 3, N asyncio "client" coroutines each submit requests back to back
and consume the deltas; per delta they build and serialise a
``StreamChatCompletionResponse`` protobuf (what the gRPC handler would do on
the event loop). A 1 ms ``asyncio.sleep`` ticker runs during every
measurement; its lateness (actual - 1 ms) shows how responsive the event loop
stays, since the gRPC server shares it.

Reported per design and concurrency (median over rounds, designs alternated
within each round): output tok/s, ratio to engine alone, time to first token
p50 (from submit to the first delta reaching the client), loop lateness
p50/p99.

Run (from the repo root):
    .venv/bin/python benchmarks/step_loop.py [--model DIR] [--rounds 3]
        [--concurrency 1 8 32] [--max-new-tokens 128] [--detok batched|streamer|none]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import queue
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import openvino as ov
import openvino_genai as ovg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from ovserve.clients.v1 import chat_pb2  # noqa: E402  (needs the repo root on sys.path)

DEFAULT_MODELS = [REPO / "service/bundled_models/tiny-chat", Path("/tmp/mb/out/tiny-chat")]

PROMPT_TOPICS = [
    "the weather in Paris",
    "a recipe for pancakes",
    "how rainbows form",
    "the history of chess",
    "why the sky is blue",
    "training a puppy",
    "the rules of football",
    "how to convert currencies",
    "planting tomatoes",
    "the capital of Spain",
    "writing a short poem",
    "sorting a list in Python",
    "the speed of light",
    "booking a flight",
    "a haiku about autumn",
    "the tallest mountain",
    "learning to swim",
    "saving money each month",
    "the life of bees",
    "building a birdhouse",
    "how vaccines work",
    "a bedtime story",
    "the phases of the moon",
    "making good coffee",
    "the boiling point of water",
    "cleaning a laptop keyboard",
    "fixing a flat tyre",
    "the origin of pizza",
    "a joke about cats",
    "choosing running shoes",
    "how tides work",
    "the largest ocean",
]

# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def pick_model(arg: str | None) -> Path:
    """Return the model directory: --model, else the bundled tiny-chat, else the interim export."""
    candidates = [Path(arg)] if arg else DEFAULT_MODELS
    for path in candidates:
        if (path / "openvino_model.xml").exists():
            return path
    raise SystemExit(f"no model with openvino_model.xml in {candidates}")


def scheduler_config() -> ovg.SchedulerConfig:
    """Small KV cache, room for 32+ sequences, prefix caching and split-fuse on."""
    sc = ovg.SchedulerConfig()
    sc.cache_size = 1  # GB
    sc.max_num_seqs = 64
    sc.enable_prefix_caching = True
    sc.dynamic_split_fuse = True
    return sc


def make_pipeline(model: str) -> ovg.ContinuousBatchingPipeline:
    return ovg.ContinuousBatchingPipeline(model, scheduler_config(), "CPU")


def generation_config(max_new_tokens: int) -> ovg.GenerationConfig:
    """Greedy, ignore_eos, fixed length: every request makes max_new_tokens tokens."""
    cfg = ovg.GenerationConfig()
    cfg.max_new_tokens = max_new_tokens
    cfg.ignore_eos = True
    cfg.do_sample = False
    return cfg


def encode_prompts(tokenizer: ovg.Tokenizer, count: int) -> list[list[int]]:
    """Token ids of `count` distinct chat-formatted prompts (same for every design)."""
    prompts = []
    for i in range(count):
        topic = PROMPT_TOPICS[i % len(PROMPT_TOPICS)]
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": f"Tell me about {topic}, please. (#{i})"}],
            add_generation_prompt=True,
        )
        prompts.append(tokenizer.encode(text, add_special_tokens=False).input_ids.data[0].tolist())
    return prompts


def to_tensor(ids: list[int]) -> ov.Tensor:
    import numpy as np

    return ov.Tensor(np.array([ids], dtype=np.int64))


class Detokenizer:
    """Incremental detokenisation of one request with openvino_genai.TextStreamer."""

    def __init__(self, tokenizer: ovg.Tokenizer | None):
        """tokenizer None: no detokenisation (the --detok none variant)."""
        self._chunks: list[str] = []
        self._streamer = ovg.TextStreamer(tokenizer, self._chunks.append) if tokenizer else None

    def push(self, ids: list[int], finished: bool) -> str:
        """Feed new token ids; return the text that became printable."""
        if self._streamer is None:
            return ""
        if ids:
            self._streamer.write(ids)
        if finished:
            self._streamer.end()
        text = "".join(self._chunks)
        self._chunks.clear()
        return text


class BatchDetokenizer:
    """Incremental detokenisation of every request's step delta in ONE batched decode call.

    Per request it keeps the ids and two offsets (the vLLM scheme): the text of
    ids[prefix:read] is already emitted; decoding ids[prefix:] and removing that
    prefix text gives the new text. Text ending in U+FFFD (an incomplete UTF-8
    sequence) is held back until the next token completes it.
    """

    def __init__(self, tokenizer: ovg.Tokenizer):
        self.tokenizer = tokenizer
        self.state: dict[int, list] = {}  # rid -> [ids, prefix_offset, read_offset]

    def push_step(self, deltas: list[tuple[int, list[int], bool]]) -> dict[int, str]:
        """deltas: (rid, new_ids, finished) for one step; returns rid -> new text."""
        batch: list[list[int]] = []
        for rid, ids, _ in deltas:
            st = self.state.setdefault(rid, [[], 0, 0])
            st[0].extend(ids)
            batch.append(st[0][st[1] : st[2]])
            batch.append(st[0][st[1] :])
        texts = self.tokenizer.decode(batch) if batch else []
        out: dict[int, str] = {}
        for i, (rid, _, finished) in enumerate(deltas):
            st = self.state[rid]
            prefix_text, full_text = texts[2 * i], texts[2 * i + 1]
            if full_text.endswith("\ufffd") and not finished:
                out[rid] = ""
            else:
                out[rid] = full_text[len(prefix_text) :]
                st[1], st[2] = st[2], len(st[0])
            if finished:
                del self.state[rid]
        return out


def serialise_chunk(request_id: int, text: str, finish_reason: int | None) -> bytes:
    """Per-delta consumer work: the protobuf chunk the gRPC handler would send."""
    choice = chat_pb2.ChatCompletionChunkChoice(index=0, delta=chat_pb2.ChatCompletionDelta(content=text))
    msg = chat_pb2.StreamChatCompletionResponse(
        id=f"chatcmpl-{request_id}",
        object="chat.completion.chunk",
        created=1_700_000_000,
        model="tiny-chat",
        choices=[choice],
    )
    if finish_reason is not None:
        choice.finish_reason = finish_reason
    return msg.SerializeToString()


# Engine finish reason -> proto FinishReason enum value (ovserve.v1.FinishReason).
FINISH_REASONS = {
    ovg.GenerationFinishReason.NONE: None,
    ovg.GenerationFinishReason.STOP: 1,
    ovg.GenerationFinishReason.LENGTH: 2,
    ovg.GenerationFinishReason.TOOL_CALL: 3,
}


def read_ready(active: dict, on_delta) -> None:
    """After a step: read every handle with something new; call on_delta once per request.

    `active` maps request id -> GenerationHandle; finished requests are removed.
    read() is non-blocking here because it is only called when can_read() is true.
    """
    running = ovg.GenerationStatus.RUNNING
    for rid, handle in list(active.items()):
        ids: list[int] = []
        reason = None
        if handle.can_read():
            for out in handle.read().values():  # {sequence id: GenerationOutput}
                ids.extend(out.generated_ids)
                reason = FINISH_REASONS[out.finish_reason] or reason
        finished = handle.get_status() != running and not handle.can_read()
        if finished:
            del active[rid]
        if ids or finished:
            on_delta(rid, ids, finished, reason)


# --------------------------------------------------------------------------
# Event-loop side: ticker, clients, fan-out
# --------------------------------------------------------------------------


async def ticker(lateness: list[float], stop: asyncio.Event) -> None:
    """Sleep 1 ms repeatedly and record how late each wake-up is (seconds)."""
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(0.001)
        lateness.append(time.perf_counter() - t0 - 0.001)


@dataclass
class RunStats:
    tokens: int = 0
    seconds: float = 0.0
    ttft: list[float] = field(default_factory=list)
    lateness: list[float] = field(default_factory=list)


class Frontend:
    """The asyncio side shared by both step-loop designs.

    `submit(rid, ids)` is provided by the design; `dispatch(batch)` is called
    on the loop thread with one step's deltas for all requests and fans them
    out to per-request asyncio queues.
    """

    def __init__(self, submit, detok: str, tokenizer: ovg.Tokenizer | None):
        """detok: where the loop detokenises: "streamer" (per request, in the
        consumer), "batched" (one decode per step message, in dispatch) or "none"
        (the engine process already did it, or no detokenisation)."""
        self.submit = submit
        self.detok = detok
        self.tokenizer = tokenizer
        self.batch_detok = BatchDetokenizer(tokenizer) if detok == "batched" else None
        self.streams: dict[int, asyncio.Queue] = {}
        self.next_id = 0

    def dispatch(self, batch: list[tuple]) -> None:
        if self.batch_detok is not None:
            texts = self.batch_detok.push_step([(rid, ids, fin) for rid, ids, _, fin, _ in batch])
            batch = [(rid, ids, texts[rid], fin, why) for rid, ids, _, fin, why in batch]
        for item in batch:
            stream = self.streams.get(item[0])
            if stream is not None:
                stream.put_nowait(item)

    async def one_request(self, ids: list[int], stats: RunStats) -> None:
        """Submit one request and consume its deltas until finished."""
        rid = self.next_id
        self.next_id += 1
        stream: asyncio.Queue = asyncio.Queue()
        self.streams[rid] = stream
        detok = Detokenizer(self.tokenizer) if self.detok == "streamer" else None
        t0 = time.perf_counter()
        self.submit(rid, ids)
        first = True
        while True:
            _, token_ids, text, finished, reason = await stream.get()
            if detok is not None:
                text = detok.push(token_ids, finished)
            if first and token_ids:
                stats.ttft.append(time.perf_counter() - t0)
                first = False
            stats.tokens += len(token_ids)
            serialise_chunk(rid, text, reason)
            if finished:
                break
        del self.streams[rid]

    async def client(self, prompts: list[list[int]], stats: RunStats) -> None:
        for ids in prompts:
            await self.one_request(ids, stats)


async def measure(run_clients) -> RunStats:
    """Run `run_clients(stats)` with the ticker going; fill wall time and lateness."""
    stats = RunStats()
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(stats.lateness, stop))
    await asyncio.sleep(0.01)
    t0 = time.perf_counter()
    await run_clients(stats)
    stats.seconds = time.perf_counter() - t0
    stop.set()
    await tick
    return stats


def client_prompts(prompts: list[list[int]], concurrency: int, per_client: int) -> list[list[list[int]]]:
    """Prompts for each client: client c uses prompts c, c+N, ... (cycled)."""
    return [[prompts[(c + k * concurrency) % len(prompts)] for k in range(per_client)] for c in range(concurrency)]


# --------------------------------------------------------------------------
# Design 1: engine alone
# --------------------------------------------------------------------------


async def run_engine_alone(pipe, per_client_prompts, cfg) -> RunStats:
    """generate() on all N prompts at once, `per_client` times, in an executor thread."""
    loop = asyncio.get_running_loop()
    n_batches = len(per_client_prompts[0])

    async def run(stats: RunStats) -> None:
        for k in range(n_batches):
            tensors = [to_tensor(p[k]) for p in per_client_prompts]
            results = await loop.run_in_executor(None, pipe.generate, tensors, [cfg] * len(tensors))
            stats.tokens += sum(len(r.m_generation_ids[0]) for r in results)

    return await measure(run)


# --------------------------------------------------------------------------
# Design 2: step loop in a thread
# --------------------------------------------------------------------------


class ThreadEngine:
    """One Python thread looping add_request + step + read; one call_soon_threadsafe per step."""

    def __init__(self, pipe, cfg, loop: asyncio.AbstractEventLoop):
        self.pipe, self.cfg, self.loop = pipe, cfg, loop
        self.submissions: queue.SimpleQueue = queue.SimpleQueue()
        self.wake = threading.Event()
        self.stopping = False
        self.dispatch = None  # set to Frontend.dispatch
        self.thread = threading.Thread(target=self._run, name="step-loop", daemon=True)
        self.thread.start()

    def submit(self, rid: int, ids: list[int]) -> None:
        """Called on the event loop: queue the request and wake the step thread."""
        self.submissions.put((rid, ids))
        self.wake.set()

    def close(self) -> None:
        self.stopping = True
        self.wake.set()
        self.thread.join()

    def _run(self) -> None:
        active: dict = {}
        while not self.stopping:
            self.wake.clear()
            while True:
                try:
                    rid, ids = self.submissions.get_nowait()
                except queue.Empty:
                    break
                active[rid] = self.pipe.add_request(rid, to_tensor(ids), self.cfg)
            if not active:
                self.wake.wait()
                continue
            self.pipe.step()
            batch: list[tuple] = []
            read_ready(active, lambda rid, ids, fin, why, out=batch: out.append((rid, ids, "", fin, why)))
            if batch:
                self.loop.call_soon_threadsafe(self.dispatch, batch)


async def run_thread_design(engine: ThreadEngine, frontend: Frontend, per_client_prompts) -> RunStats:
    async def run(stats: RunStats) -> None:
        await asyncio.gather(*(frontend.client(p, stats) for p in per_client_prompts))

    return await measure(run)


# --------------------------------------------------------------------------
# Design 3: step loop in its own process
# --------------------------------------------------------------------------


def engine_process_main(conn, model: str, max_new_tokens: int, detok: str) -> None:
    """Child process: pipeline + step loop; requests in, one message of deltas per step out.

    detok "streamer": a TextStreamer per request; "batched": one BatchDetokenizer
    decode per step; "none": no text.
    """
    pipe = make_pipeline(model)
    tokenizer = pipe.get_tokenizer() if detok == "streamer" else None
    batch_detok = BatchDetokenizer(pipe.get_tokenizer()) if detok == "batched" else None
    cfg = generation_config(max_new_tokens)
    conn.send("ready")
    active: dict = {}
    detoks: dict[int, Detokenizer] = {}
    while True:
        # Block on the pipe when idle; otherwise only take what is already there.
        while not active or conn.poll(0):
            msg = conn.recv()
            if msg is None:
                return
            rid, ids = msg
            active[rid] = pipe.add_request(rid, to_tensor(ids), cfg)
            detoks[rid] = Detokenizer(tokenizer)
        pipe.step()
        batch: list[tuple] = []

        def on_delta(rid, ids, finished, reason, out=batch):
            text = detoks[rid].push(ids, finished)
            if finished:
                del detoks[rid]
            out.append((rid, ids, text, finished, reason))

        read_ready(active, on_delta)
        if batch_detok is not None and batch:
            texts = batch_detok.push_step([(rid, ids, fin) for rid, ids, _, fin, _ in batch])
            batch = [(rid, ids, texts[rid], fin, why) for rid, ids, _, fin, why in batch]
        if batch:
            conn.send(batch)


class ProcessEngine:
    """Parent side of the engine process: submit over the pipe, fan out with loop.add_reader."""

    def __init__(self, model: str, max_new_tokens: int, detok: str):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=engine_process_main, args=(child, model, max_new_tokens, detok), daemon=True)
        self.proc.start()
        child.close()
        assert self.conn.recv() == "ready"
        self.dispatch = None  # set to Frontend.dispatch

    def submit(self, rid: int, ids: list[int]) -> None:
        self.conn.send((rid, ids))

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.add_reader(self.conn.fileno(), self._on_readable)

    def detach(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.remove_reader(self.conn.fileno())

    def _on_readable(self) -> None:
        while self.conn.poll(0):
            self.dispatch(self.conn.recv())

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(10)


# --------------------------------------------------------------------------
# Orchestration and report
# --------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def benchmark(args, model: str) -> dict:
    """All rounds; returns {(design, concurrency): [RunStats per round]}."""
    loop = asyncio.get_running_loop()
    pipe = make_pipeline(model)
    tokenizer = pipe.get_tokenizer()
    cfg = generation_config(args.max_new_tokens)
    prompts = encode_prompts(tokenizer, 64)

    thread_engine = ThreadEngine(pipe, cfg, loop)
    thread_front = Frontend(thread_engine.submit, args.detok, tokenizer)
    thread_engine.dispatch = thread_front.dispatch

    proc_engine = ProcessEngine(model, args.max_new_tokens, args.detok)
    proc_front = Frontend(proc_engine.submit, "none", None)
    proc_engine.dispatch = proc_front.dispatch
    proc_engine.attach(loop)

    designs = {
        "engine": lambda pcp: run_engine_alone(pipe, pcp, cfg),
        "thread": lambda pcp: run_thread_design(thread_engine, thread_front, pcp),
        "process": lambda pcp: run_thread_design(proc_engine, proc_front, pcp),
    }
    # Warm-up: every design once at the highest concurrency.
    warm = client_prompts(prompts, max(args.concurrency), 1)
    for run in designs.values():
        await run(warm)

    results: dict = {}
    for rnd in range(args.rounds):
        for conc in args.concurrency:
            per_client = max(1, args.tokens_per_run // (conc * args.max_new_tokens))
            pcp = client_prompts(prompts, conc, per_client)
            order = list(designs) if rnd % 2 == 0 else list(reversed(designs))
            for name in order:
                stats = await designs[name](pcp)
                expected = conc * per_client * args.max_new_tokens
                assert stats.tokens == expected, (name, stats.tokens, expected)
                results.setdefault((name, conc), []).append(stats)
                print(f"round {rnd + 1} c={conc:<3} {name:<8} {stats.tokens / stats.seconds:9.0f} tok/s", flush=True)

    proc_engine.detach(loop)
    proc_engine.close()
    thread_engine.close()
    return results


def report(results: dict, concurrency: list[int]) -> None:
    """Print the table: medians over rounds."""
    print()
    print(f"{'conc':>4} {'design':<8} {'tok/s':>9} {'vs engine':>9} {'TTFT p50':>9} {'late p50':>9} {'late p99':>9}")
    for conc in concurrency:
        base = statistics.median(s.tokens / s.seconds for s in results[("engine", conc)])
        for name in ("engine", "thread", "process"):
            runs = results[(name, conc)]
            tps = statistics.median(s.tokens / s.seconds for s in runs)
            ttft = statistics.median(pct(s.ttft, 0.5) for s in runs) if runs[0].ttft else float("nan")
            late50 = statistics.median(pct(s.lateness, 0.5) for s in runs)
            late99 = statistics.median(pct(s.lateness, 0.99) for s in runs)
            ttft_s = f"{ttft * 1e3:7.1f}ms" if ttft == ttft else f"{'-':>9}"
            print(
                f"{conc:>4} {name:<8} {tps:9.0f} {tps / base:9.2f} {ttft_s} {late50 * 1e3:7.2f}ms {late99 * 1e3:7.2f}ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="model directory (default: bundled tiny-chat, else /tmp/mb/out/tiny-chat)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument(
        "--tokens-per-run",
        type=int,
        default=8192,
        help="tokens generated per measurement (clients repeat requests to reach it)",
    )
    parser.add_argument(
        "--detok",
        choices=["batched", "streamer", "none"],
        default="batched",
        help="batched: one batched decode per step; streamer: a TextStreamer per request; "
        "none: skip detokenisation. Thread design: on the event loop; process design: "
        "in the engine process",
    )
    args = parser.parse_args()
    model = str(pick_model(args.model))
    print(
        f"model {model}; {os.cpu_count()} CPUs; openvino-genai {ovg.__version__}; "
        f"max_new_tokens {args.max_new_tokens}; {args.rounds} rounds; detok {args.detok}",
        flush=True,
    )
    results = asyncio.run(benchmark(args, model))
    report(results, args.concurrency)


if __name__ == "__main__":
    main()
