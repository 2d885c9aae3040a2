"""``ovserve bench``'s workloads users run, end to end on tiny-chat: conversations that grow turn by turn, several
prompt lengths and mixed lengths in one command, and the KV cache per stream (no timing assertions)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ovserve.rest_bridge.server import Bridge
from ovserve.service.bench import kv_cache
from ovserve.service.bench.cli import main
from ovserve.service.bench.load import PromptSource
from ovserve.service.workers.codec import TokenCodec
from tests.conftest import ServerThread

TURNS, CONVERSATIONS, TURN_TOKENS, OUTPUT_TOKENS = 3, 2, 8, 8


@pytest.fixture(scope="module")
def metered(server: ServerThread) -> Iterator[str]:
    """A bridge serving /metrics beside /v3 (as ``ovserve serve`` does); its URL."""
    running = Bridge(server.target, "127.0.0.1", 0, figures=server.server)
    server.run(running.start())
    yield f"http://127.0.0.1:{running.port}"
    server.run(running.stop())


def _bench(tmp_path: Path, *args: str) -> dict[str, Any]:
    report = tmp_path / "report.json"
    assert main(["--model", "tiny-chat", "--no-progress", "--warmup", "1", "--json", str(report), *args]) == 0
    result: dict[str, Any] = json.loads(report.read_text())
    return result


def test_conversations_grow_turn_by_turn_on_the_engine_and_both_faces(
    server: ServerThread, metered: str, tiny_chat_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--turns: every conversation's turns answered on the engine alone, gRPC and REST; figures per turn and for
    the later turns together; each later turn's prompt longer than the one before by at least the user message
    appended (and the reply); ratios of the later turns against the engine; the KV cache the engine held."""
    report = _bench(
        tmp_path, "--backend", "grpc", "http", "--target", server.target, "--url", metered, "--engine",
        "--model-dir", str(tiny_chat_dir), "--turns", str(TURNS), "--conversations", str(CONVERSATIONS),
        "--concurrency", "2", "--system-tokens", "24", "--turn-tokens", str(TURN_TOKENS),
        "--output-tokens", str(OUTPUT_TOKENS), "--kv-cache", "--prefix-tokens", "0", "--peer", f"{metered}/v3",
    )  # fmt: skip
    printed = capsys.readouterr().out
    print(printed)
    runs = {run["backend"]: run for run in report["summary"]}
    assert set(runs) == {"engine", "grpc", "http", "peer"}
    for name, run in runs.items():
        summary = run["summary"]
        assert summary["completed"] == TURNS * CONVERSATIONS and summary["failed"] == 0, (name, summary["errors"])
        assert summary["output_tokens"] == TURNS * CONVERSATIONS * OUTPUT_TOKENS
        by_turn = run["by_turn"]
        assert list(by_turn) == ["turn 1", "turn 2", "turn 3", "turns 2+"]
        assert [by_turn[turn]["completed"] for turn in by_turn] == [CONVERSATIONS] * TURNS + [CONVERSATIONS * 2]
        means = [by_turn[f"turn {turn}"]["prompt_tokens_mean"] for turn in range(1, TURNS + 1)]
        assert all(later - earlier > TURN_TOKENS for earlier, later in itertools.pairwise(means)), means
    for run in report["runs"]:
        conversations = run["prompt_tokens_by_conversation"]
        assert len(conversations) == CONVERSATIONS and all(len(turns) == TURNS for turns in conversations)
        for turns in conversations:
            assert all(later - earlier > TURN_TOKENS for earlier, later in itertools.pairwise(turns)), turns
    metrics = {ratio["metric"] for ratio in report["ratios"]}
    for backend in ("grpc", "http"):
        expected = [f"{backend} tok/s / engine tok/s", f"{backend} added TTFT p50 over engine",
                    f"{backend} tok/s / peer tok/s", f"{backend} TTFT p50 / peer TTFT p50"]  # fmt: skip
        assert {f"{name}, turns 2+, c=2" for name in expected} <= metrics
    growth = {
        ratio["metric"].split()[0]: ratio for ratio in report["ratios"] if "(target: prompt growth)" in ratio["metric"]
    }
    assert set(growth) == {"engine", "grpc", "http", "peer"}
    for name, ratio in growth.items():  # the target is the runner's own prompt growth from turn 1 to the later turns
        by_turn = runs[name]["by_turn"]
        grown = by_turn["turns 2+"]["prompt_tokens_mean"] / by_turn["turn 1"]["prompt_tokens_mean"]
        assert ratio["target"] == pytest.approx(grown, abs=1e-3) and ratio["target"] > 1, ratio
    engine_cache = runs["engine"]["kv_cache"]
    assert engine_cache["unit"] == "bytes" and engine_cache["per_stream"] > 0 and engine_cache["streams_at_peak"] >= 1
    assert "kv_cache" not in runs["peer"]  # (ovserve's bridge as the peer: no llama-server gauges to read)
    assert "conversations, turn by turn:" in printed and "KV cache per stream" in printed


def test_several_prompt_lengths_run_one_after_another_and_mixed_lengths_in_one_run(
    server: ServerThread, tiny_chat_dir: Path, tmp_path: Path
) -> None:
    """--input-tokens 16 48: a run per length and concurrency, named by both; exact lengths (--input-range 0), so
    the longer run's prompts hold 32 tokens more each; ratios to the engine per length. --mixed-lengths: one run
    per concurrency whose prompts are drawn from the lengths."""
    requests = 4
    common = ["--target", server.target, "--model-dir", str(tiny_chat_dir), "--requests", str(requests),
              "--output-tokens", "4", "--input-range", "0", "--input-tokens", "16", "48"]  # fmt: skip
    report = _bench(tmp_path, *common, "--concurrency", "1", "2", "--engine", "--prefix-tokens", "0")
    runs = {(run["backend"], run["load"]): run for run in report["summary"]}
    assert set(runs) == {(b, f"c={c} in={n}") for b in ("engine", "grpc") for c in (1, 2) for n in (16, 48)}
    for (backend, load), run in runs.items():
        assert run["summary"]["completed"] == requests, (backend, load, run["summary"]["errors"])
        assert run["input_tokens"] == [int(load.rsplit("=", 1)[1])]
    for backend in ("engine", "grpc"):
        added = (
            runs[backend, "c=2 in=48"]["summary"]["input_tokens"]
            - runs[backend, "c=2 in=16"]["summary"]["input_tokens"]
        )
        assert abs(added - requests * 32) <= requests, (backend, added)
    metrics = {ratio["metric"] for ratio in report["ratios"]}
    assert {"in=16 grpc tok/s / engine tok/s, c=2", "in=48 grpc tok/s / engine tok/s, c=2"} <= metrics
    mixed = _bench(tmp_path, *common, "--concurrency", "2", "--mixed-lengths")
    (run,) = mixed["summary"]
    assert (run["load"], run["input_tokens"], run["summary"]["completed"]) == ("c=2 in=mix(16,48)", [16, 48], requests)


def test_mixed_lengths_are_drawn_from_the_list_exactly_and_long_prompts_are_built_at_once(tiny_chat_dir: Path) -> None:
    """Each mixed-length prompt is one of the lengths, in the model's tokens (the service's codec); a 16k-token
    prompt is built by one encode of its words (not token by token), so it takes about as long as a few hundred
    tokens' would."""
    codec = TokenCodec(tiny_chat_dir)
    source = PromptSource(codec, seed=3)
    lengths = [len(codec.encode(request.prompt, add_special_tokens=False))
               for request in source.requests(12, (5, 40), 0.1, 1)]  # fmt: skip
    assert set(lengths) == {5, 40}, lengths
    calls: list[int] = []

    class Counting:
        def encode(self, text: str, **options: Any) -> Any:
            calls.append(len(text))
            return codec.encode(text, **options)

        def decode_windows(self, windows: list[list[int]], **options: Any) -> Any:
            return codec.decode_windows(windows, **options)

    long = PromptSource(Counting(), seed=3).prompt(16384)
    assert len(calls) == 1 and len(codec.encode(long, add_special_tokens=False)) == 16384


def test_scripted_replies_stand_in_for_the_models_in_the_resent_history(tiny_chat_dir: Path) -> None:
    """--scripted-replies: each turn's history carries the script's reply of --output-tokens tokens, whatever the
    model said, so every runner resends the same conversation; without it, the model's own text is resent."""
    from ovserve.service.bench.conversation import ConversationLoad, Script

    codec = TokenCodec(tiny_chat_dir)
    load = ConversationLoad(2, 3, 16, 8, 12, scripted_replies=True)
    script = Script.draw(PromptSource(codec, seed=5), load)
    request = script.request(1, ["what the model said", "and again"], load.output_tokens)
    sent = [message["content"] for message in request.messages if message["role"] == "assistant"]
    assert sent == list(script.replies[1][:2]) and "what the model said" not in sent
    assert all(len(codec.encode(text, add_special_tokens=False)) == 12 for text in sent)
    plain = Script.draw(PromptSource(codec, seed=5), ConversationLoad(2, 3, 16, 8, 12))
    assert plain.replies == ()
    resent = plain.request(0, ["what the model said"], 12).messages
    assert resent[2] == {"role": "assistant", "content": "what the model said"}


def test_the_kv_cache_gauges_are_read_while_a_stream_is_in_flight(
    server: ServerThread, metered: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench's sampler reads ovserve's /metrics while a long stream runs: once it sees the stream running, the
    KV cache it holds is non-zero (bytes in use: the share in use times the bytes allocated)."""
    monkeypatch.setattr(kv_cache, "INTERVAL", 0.02)
    asyncio.run(_sample_while_streaming(server.target, f"{metered}/metrics"))


async def _sample_while_streaming(target: str, metrics_url: str) -> None:
    from ovserve.service.bench.backends import GrpcBackend
    from ovserve.service.bench.load import BenchRequest

    backend = GrpcBackend(target, "tiny-chat", "chat")
    stream = asyncio.create_task(backend.stream(BenchRequest("tell me a long story", 1800)))
    try:
        async with kv_cache.sampled(metrics_url, "ovserve", "tiny-chat") as peak:
            assert peak is not None
            while not peak.streams and not stream.done():  # awaited: the stream is seen running, or it ended
                await asyncio.sleep(0.01)
            figures = peak.figures(context_tokens=100)
        assert not stream.done() or figures is not None, (
            "the stream ended before /metrics showed it running",
            stream.result(),
        )
        assert figures is not None and figures["peak_in_use"] > 0 and figures["streams_at_peak"] >= 1, figures
        assert figures["unit"] == "bytes" and figures["per_context_token"] > 0
    finally:
        stream.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stream
        await backend.close()


def test_each_servers_kv_cache_gauges_are_read_by_their_own_names() -> None:
    """ovserve's share in use times the bytes allocated, for the model asked about; llama-server's tokens held,
    with the requests it processes; a page without them reads as nothing."""
    ovserve = (
        'ovserve_kv_cache_usage_ratio{model="other"} 0.9\n'
        'ovserve_kv_cache_usage_ratio{model="tiny-chat"} 0.25\n'
        'ovserve_kv_cache_bytes{model="tiny-chat"} 4096.0\n'
        'ovserve_engine_requests_running{model="tiny-chat"} 2.0\n'
    )
    assert kv_cache.read_gauges(ovserve, kv_cache.SERVERS["ovserve"], "tiny-chat") == (1024.0, 2.0)
    llama = "llamacpp:kv_cache_tokens 300\nllamacpp:requests_processing 3\n"
    assert kv_cache.read_gauges(llama, kv_cache.SERVERS["llama-server"], "") == (300.0, 3.0)
    assert kv_cache.read_gauges("llamacpp:prompt_tokens_total 5\n", kv_cache.SERVERS["llama-server"], "") is None
    peak = kv_cache.KvCachePeak("tokens")
    for in_use, streams in ((300.0, 3.0), (50.0, 0.0), (200.0, 1.0)):
        peak.observe(in_use, streams)
    assert peak.figures(150.0) == {
        "unit": "tokens", "peak_in_use": 300.0, "streams_at_peak": 3.0, "per_stream": 100.0,
        "context_tokens": 150.0, "per_context_token": 100.0 / 150.0, "samples": 3,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--turns", "2", "--endpoint", "completions"], "--turns"),
        (["--turns", "2", "--rate", "2"], "--turns"),
        (["--turns", "2", "--input-tokens", "8", "16"], "--turn-tokens"),
        (["--conversations", "2"], "--conversations and --scripted-replies need --turns"),
        (["--scripted-replies"], "--conversations and --scripted-replies need --turns"),
        (["--mixed-lengths"], "--mixed-lengths"),
        (["--input-tokens", "0"], "--input-tokens"),
    ],
)
def test_workload_options_that_do_not_fit_together_end_in_a_line_naming_them(
    args: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--no-progress", *args])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err
