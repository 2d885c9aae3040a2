"""Conversations that grow (``ovserve bench --turns N``): the traffic of agents and chat UIs.

Each simulated user keeps one conversation: a system prompt shared by every conversation of the run, then N
turns, each sending the whole conversation so far (the system prompt, every earlier user message and the
model's reply to it) with a new user message, as OpenAI clients do. Concurrency is the number of conversations
in flight; a conversation's turns run one after another. Every runner gets the same messages: ovserve's faces,
a peer (llama-server, whose prompt cache reuses the resent prefix) and the engine alone (its prompt built with
the model's chat template, as the service builds it). Turn 1 against later turns shows whether prefix caching
works: a later turn's prompt is longer, but all of it but the last reply and the new message was seen before.

A failed turn ends its conversation: the turns it did not send count as failed too.

With ``scripted_replies`` the history carries a scripted reply of ``output_tokens`` tokens in place of each of the
model's: a random-weight model's text (a real-size model built for speed) decodes to strings that encode back
into many times the tokens it generated, so the resent conversation would grow by hundreds of tokens a turn and
outrun a peer's context. Each turn then adds the scripted reply and the new message to what was cached (the
model's own reply, cached as it was generated, is not resent): the same work for every runner.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ovserve.service.bench.backends import Backend
from ovserve.service.bench.kv_cache import KvCachePeak
from ovserve.service.bench.load import BenchRequest, PromptSource
from ovserve.service.bench.metrics import RequestResult, summarize
from ovserve.service.bench.progress import Progress, ProgressBar
from ovserve.service.bench.targets import ADDED_TTFT_MS, PEER_TTFT, Ratio

LATER = "turns 2+"  # the name of every turn after the first, taken together


@dataclass(frozen=True)
class ConversationLoad:
    """The conversations of one run: how many, how many turns, and the sizes of what each turn adds."""

    conversations: int
    turns: int
    system_tokens: int  # the shared system prompt
    turn_tokens: int  # each user message
    output_tokens: int  # each reply (ignore_eos: exactly this many)
    scripted_replies: bool = False  # the history resends scripted replies, not the model's (module docstring)


@dataclass(frozen=True)
class Script:
    """What the users of one run say: the shared system prompt and each conversation's user messages."""

    system: str
    users: tuple[tuple[str, ...], ...]  # [conversation][turn]
    replies: tuple[tuple[str, ...], ...] = ()  # [conversation][turn], with scripted_replies

    @classmethod
    def draw(cls, source: PromptSource, load: ConversationLoad) -> Script:
        """New random text for every run, so that no run finds another's prompts in a cache."""

        def texts(tokens: int) -> tuple[tuple[str, ...], ...]:
            return tuple(tuple(source.prompt(tokens) for _ in range(load.turns)) for _ in range(load.conversations))

        users = texts(load.turn_tokens)
        replies = texts(load.output_tokens) if load.scripted_replies else ()
        return cls(source.prompt(load.system_tokens), users, replies)

    def request(self, conversation: int, replies: Sequence[str], output_tokens: int) -> BenchRequest:
        """The next turn of ``conversation``, after ``replies`` (one per turn so far; the scripted ones are sent
        in their place when the script has them)."""
        users = self.users[conversation]
        if self.replies:
            replies = self.replies[conversation][: len(replies)]
        messages: list[dict[str, str]] = [{"role": "system", "content": self.system}]
        for user, reply in zip(users, replies, strict=False):
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
        user = users[len(replies)]
        messages.append({"role": "user", "content": user})
        return BenchRequest(user, output_tokens, messages=tuple(messages))


@dataclass(frozen=True)
class Turn:
    """One turn's request, timed."""

    conversation: int
    turn: int  # 1-based
    result: RequestResult


def _unsent(conversation: int, after: int, turns: int) -> list[Turn]:
    """The turns a conversation did not send once one of its turns failed: failures too."""
    now = time.perf_counter()
    error = f"turn {after} of this conversation failed"
    return [
        Turn(conversation, turn, RequestResult(start=now, end=now, error=error)) for turn in range(after + 1, turns + 1)
    ]


async def run_service(
    backend: Backend, script: Script, load: ConversationLoad, slots: int, progress: ProgressBar | None = None
) -> tuple[list[Turn], float]:
    """Every conversation on a backend, ``slots`` in flight; the turns and the run's wall time."""
    gate = asyncio.Semaphore(slots)
    turns: list[Turn] = []
    started = time.perf_counter()

    async def converse(conversation: int) -> None:
        replies: list[str] = []
        async with gate:
            for turn in range(1, load.turns + 1):
                result = await backend.stream(script.request(conversation, replies, load.output_tokens))
                turns.append(Turn(conversation, turn, result))
                if progress is not None:
                    progress.advance()
                if not result.ok:
                    turns.extend(_unsent(conversation, turn, load.turns))
                    return
                replies.append(result.text)

    await asyncio.gather(*(converse(conversation) for conversation in range(load.conversations)))
    return turns, time.perf_counter() - started


def run_engine(
    runner: Any,
    script: Script,
    load: ConversationLoad,
    slots: int,
    progress: Progress | None = None,
    kv_cache: KvCachePeak | None = None,
) -> tuple[list[Turn], float]:
    """Every conversation on the bare pipeline of an EngineRunner (blocking; the bench runs it in the engine
    alone's process, engine_process.py).

    As in EngineRunner.run, one thread adds requests and steps the pipeline; a conversation's next turn is added
    as soon as its reply ends (the reply decoded to text, as a server would send it), its prompt encoded before
    its clock starts.
    """
    import openvino_genai as ov_genai

    pending = deque(range(load.conversations))
    replies: dict[int, list[str]] = {conversation: [] for conversation in pending}
    running: dict[int, tuple[Any, RequestResult, int, list[int]]] = {}  # conversation -> handle, result, turn, ids
    turns: list[Turn] = []
    config = ov_genai.GenerationConfig(max_new_tokens=load.output_tokens, ignore_eos=True, do_sample=False)

    def add(conversation: int, turn: int) -> None:
        prompt = runner.encode(script.request(conversation, replies[conversation], load.output_tokens))
        result = RequestResult(start=time.perf_counter(), prompt_tokens=int(prompt.get_shape()[1]))
        running[conversation] = (runner.pipeline.add_request(runner.next_id(), prompt, config), result, turn, [])

    started = time.perf_counter()
    while pending or running:
        while pending and len(running) < slots:
            add(pending.popleft(), 1)
        runner.pipeline.step()
        now = time.perf_counter()
        if kv_cache is not None:
            runner.observe_kv_cache(kv_cache, len(running))
        for conversation, (handle, result, turn, ids) in list(running.items()):
            status = handle.get_status()
            if handle.can_read():
                new = [int(token) for output in handle.read().values() for token in output.generated_ids]
                if new:
                    result.chunk_times.append(now)
                    result.output_tokens += len(new)
                    ids.extend(new)
            if status == ov_genai.GenerationStatus.RUNNING:
                continue
            del running[conversation]
            result.end = now
            if status != ov_genai.GenerationStatus.FINISHED:
                result.error = f"engine status {status}"
            result.pieces.append(str(runner.tokenizer.decode(ids, skip_special_tokens=True)))
            turns.append(Turn(conversation, turn, result))
            if progress is not None:
                progress.advance()
            if not result.ok:
                turns.extend(_unsent(conversation, turn, load.turns))
            elif turn < load.turns:
                replies[conversation].append(result.text)
                add(conversation, turn + 1)
    return turns, time.perf_counter() - started


def turn_summaries(turns: Sequence[Turn], count: int) -> dict[str, dict[str, Any]]:
    """The figures of each turn ("turn 1", "turn 2"...) and of every later turn together (LATER); each turn's
    throughput over the time from its first request's start to its last one's end, and its mean prompt tokens."""
    groups = {f"turn {turn}": [t for t in turns if t.turn == turn] for turn in range(1, count + 1)}
    if count > 1:
        groups[LATER] = [t for t in turns if t.turn > 1]
    summaries = {}
    for name, group in groups.items():
        results = [t.result for t in group]
        span = max((r.end for r in results), default=0.0) - min((r.start for r in results), default=0.0)
        summary = summarize(results, span)
        summary["prompt_tokens_mean"] = (
            summary["input_tokens"] / summary["completed"] if summary["completed"] else math.nan
        )
        summaries[name] = summary
    return summaries


def prompt_tokens(turns: Sequence[Turn], conversations: int) -> list[list[int]]:
    """Each conversation's prompt tokens, turn by turn (as the server counted them; completed turns only)."""
    ordered = sorted((t for t in turns if t.result.ok), key=lambda t: (t.conversation, t.turn))
    by_conversation: list[list[int]] = [[] for _ in range(conversations)]
    for turn in ordered:
        by_conversation[turn.conversation].append(turn.result.prompt_tokens)
    return by_conversation


# Targets: against llama-server with its prompt cache, the 1.3x on growing conversations, and first tokens
# no later; against the engine alone, what the service keeps of it (as targets.py: 0.97 of its throughput on a
# real-size model, 0.80 on tiny-chat, whose steps cost almost nothing; the TTFT it may add).
PEER_THROUGHPUT = 1.3


def ratios(
    by_turn: dict[tuple[str, int], dict[str, dict[str, Any]]], concurrencies: Sequence[int], real_size: bool
) -> list[Ratio]:
    """One round's conversation ratios from its runs' turn summaries keyed by (backend, concurrency).

    Each runner's later turns' TTFT against its first turn's, with the growth of the prompt as the target: a
    prefill grows at least as fast as its prompt, so first tokens that grow slower show the resent prefix found
    cached (turn 1 of every conversation but the first finds the shared system prompt cached too). Each service
    backend's later turns against the engine's (throughput, TTFT added) and the peer's (throughput, TTFT).
    """
    backends = dict.fromkeys(backend for backend, _ in by_turn)
    found: list[Ratio] = []

    def figure(backend: str, concurrency: int, turn: str, *path: str) -> float:
        value: Any = by_turn.get((backend, concurrency), {}).get(turn)
        for key in path:
            value = None if value is None else value.get(key)
        return math.nan if value is None else float(value)

    def divide(a: float, b: float) -> float:
        return a / b if b and not math.isnan(b) else math.nan

    for concurrency in concurrencies:
        later = f"{LATER}, c={concurrency}"
        for backend in backends:
            ttft = divide(figure(backend, concurrency, LATER, "ttft_ms", "p50"),
                          figure(backend, concurrency, "turn 1", "ttft_ms", "p50"))  # fmt: skip
            grown = divide(figure(backend, concurrency, LATER, "prompt_tokens_mean"),
                           figure(backend, concurrency, "turn 1", "prompt_tokens_mean"))  # fmt: skip
            found.append(Ratio(f"{backend} TTFT p50 {LATER} / turn 1 (target: prompt growth), c={concurrency}",
                               ttft, "<=", round(grown, 3)))  # fmt: skip
        for backend in (name for name in backends if name in ADDED_TTFT_MS):
            ours = figure(backend, concurrency, LATER, "output_throughput")
            if "engine" in backends:
                engine = figure("engine", concurrency, LATER, "output_throughput")
                target = 0.97 if real_size else 0.80
                found.append(Ratio(f"{backend} tok/s / engine tok/s, {later}", divide(ours, engine), ">=", target))
                added = figure(backend, concurrency, LATER, "ttft_ms", "p50") - figure(
                    "engine", concurrency, LATER, "ttft_ms", "p50"
                )
                found.append(
                    Ratio(f"{backend} added TTFT p50 over engine, {later}", added, "<=", ADDED_TTFT_MS[backend], "ms")
                )
            if "peer" in backends:
                peer = figure("peer", concurrency, LATER, "output_throughput")
                found.append(Ratio(f"{backend} tok/s / peer tok/s, {later}", divide(ours, peer), ">=", PEER_THROUGHPUT))
                ttft = divide(figure(backend, concurrency, LATER, "ttft_ms", "p50"),
                              figure("peer", concurrency, LATER, "ttft_ms", "p50"))  # fmt: skip
                found.append(Ratio(f"{backend} TTFT p50 / peer TTFT p50, {later}", ttft, "<=", PEER_TTFT))
    return found


_TURN_COLUMNS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("done", ("completed",), "{:.0f}"),
    ("failed", ("failed",), "{:.0f}"),
    ("prompt tok", ("prompt_tokens_mean",), "{:.0f}"),
    ("out tok/s", ("output_throughput",), "{:.1f}"),
    ("TTFT p50", ("ttft_ms", "p50"), "{:.2f}"),
    ("TTFT p99", ("ttft_ms", "p99"), "{:.2f}"),
    ("TPOT p50", ("tpot_ms", "p50"), "{:.3f}"),
    ("E2E p50", ("e2e_ms", "p50"), "{:.1f}"),
)


def table(runs: Sequence[dict[str, Any]]) -> str:
    """One line per (backend, load, turn): prompt tokens (mean), throughput during the turn, latencies in ms."""
    headers = ["backend", "load", "turn", *(header for header, _, _ in _TURN_COLUMNS)]
    rows = []
    for run in runs:
        for turn, summary in run.get("by_turn", {}).items():
            cells = []
            for _, path, pattern in _TURN_COLUMNS:
                value: Any = summary
                for key in path:
                    value = value[key]
                cells.append("-" if isinstance(value, float) and math.isnan(value) else pattern.format(value))
            rows.append([run["backend"], run["load"], turn, *cells])
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in [headers, *rows]]
    return "\n".join(["conversations, turn by turn:", lines[0], "-" * len(lines[0]), *lines[1:]])
