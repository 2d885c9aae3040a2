"""``ovserve bench`` end to end on tiny-chat, tiny-embed and tiny-rerank: the report is complete and sane (no timing
assertions)."""

from __future__ import annotations

import asyncio
import json
import math
import socket
from pathlib import Path
from typing import Any

import pytest

from ovserve.rest_bridge.server import Bridge
from ovserve.service.bench.cli import main
from ovserve.service.bench.cold import ADMIN_KEY_ENV, FIGURES
from ovserve.service.bench.embeddings import EMBEDDINGS, InputLoad, rates_and_ratios
from ovserve.service.bench.metrics import LATENCIES, STATS, median_summary
from ovserve.service.bench.targets import Ratio, median_ratios
from ovserve.service.bench.urls import ApiBase
from ovserve.service.models import BUNDLED_MODELS_DIR, ModelSpec
from ovserve.service.residency import ResidencySettings
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge
from tests.rest_bridge.conftest import bridge as bridge  # the REST fixture, shared with tests/rest_bridge

REQUESTS, OUTPUT_TOKENS = 4, 16


def _free_port() -> int:
    """A local port nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _bench(tmp_path: Path, *args: str) -> dict[str, Any]:
    report = tmp_path / "report.json"
    common = ["--requests", str(REQUESTS), "--warmup", "1", "--output-tokens", str(OUTPUT_TOKENS)]
    common += ["--input-tokens", "32", "--model", "tiny-chat", "--no-progress", "--json", str(report)]
    assert main([*common, *args]) == 0
    result: dict[str, Any] = json.loads(report.read_text())
    return result


def _check_summaries(report: dict[str, Any], backends: set[str]) -> None:
    runs = report["summary"]
    assert {(run["backend"], run["concurrency"]) for run in runs} == {(b, c) for b in backends for c in (1, 2)}
    for run in runs:
        summary = run["summary"]
        assert summary["requests"] == summary["completed"] == REQUESTS, summary["errors"]
        assert summary["failed"] == 0
        assert summary["output_tokens"] == REQUESTS * OUTPUT_TOKENS
        assert summary["input_tokens"] > 0
        assert summary["request_throughput"] > 0
        assert summary["output_throughput"] > 0
        for latency in LATENCIES:
            values = summary[f"{latency}_ms"]
            assert set(values) == set(STATS)
            assert all(isinstance(values[stat], float) and not math.isnan(values[stat]) for stat in STATS)
            assert 0 <= values["p50"] <= values["p90"] <= values["p99"]


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_bench_grpc_and_rest(
    server: ServerThread, bridge: RunningBridge, tmp_path: Path, tiny_chat_dir: Path, endpoint: str
) -> None:
    report = _bench(
        tmp_path, "--backend", "grpc", "http", "--target", server.target, "--url", f"http://127.0.0.1:{bridge.port}",
        "--endpoint", endpoint, "--model-dir", str(tiny_chat_dir), "--concurrency", "1", "2",
    )  # fmt: skip
    _check_summaries(report, {"grpc", "http"})
    assert report["machine"]["cpus"] >= 1
    assert "ratios" not in report  # only with --engine


COLD_ROUNDS = 2


def test_cold_starts_time_the_first_request_of_an_unloaded_model_beside_a_warm_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--cold-starts on a server of its own (the bench unloads its model): on each face, every round's cold request
    (it loads the model) and warm one, and LoadModel alone, all measured; within each round the cold request takes
    longer than the warm one (it waits for an engine process to start and compile: seconds against milliseconds);
    the model is left loaded; the table is printed before the load's."""
    with served_with_bridge([ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]) as served:
        report = _bench(
            tmp_path, "--backend", "grpc", "http", "--target", served.server.target,
            "--url", f"http://127.0.0.1:{served.port}", "--cold-starts", str(COLD_ROUNDS), "--concurrency", "1",
        )  # fmt: skip
        assert served.server.server.registry.states.get("tiny-chat").state.value == "loaded"
    printed = capsys.readouterr().out
    print(printed)  # the figures, for whoever runs it with -s
    cold = report["cold_start"]
    assert (cold["model"], cold["rounds"], set(cold["by_backend"])) == ("tiny-chat", COLD_ROUNDS, {"grpc", "http"})
    for figures in cold["by_backend"].values():
        assert len(figures["per_round"]) == COLD_ROUNDS
        for measured in [figures, *figures["per_round"]]:
            assert set(FIGURES) <= set(measured) and all(measured[key] > 0 for key in FIGURES), measured
        for measured in figures["per_round"]:
            assert measured["cold_ttft_ms"] > measured["warm_ttft_ms"] and measured["ttft_cold_over_warm"] > 1
            assert measured["cold_e2e_ms"] > measured["warm_e2e_ms"] and measured["e2e_cold_over_warm"] > 1
    assert report["summary"][0]["summary"]["completed"] == REQUESTS  # the warm load ran after, as usual
    assert printed.index("cold start of tiny-chat") < printed.index("TTFT p50")
    assert "LoadModel alone" in printed
    assert report["config"]["admin_key"] is None and report["config"]["cold_starts"] == COLD_ROUNDS


def test_cold_starts_need_an_admin_key_and_a_server_that_loads_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With API keys on, a user's key cannot unload: the bench stops in one line saying an admin key is needed,
    before any load, and the model stays loaded. An admin key (here from the environment) unloads it, but a server
    started with --no-autoload does not load it on the first request: the bench says so, and loads it again."""
    spec = ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)
    keys = {"api_keys": ("user-key", "admin-key"), "admin_keys": ("admin-key",)}
    with served_with_bridge([spec], residency=ResidencySettings(autoload=False), **keys) as served:
        common = ["--target", served.server.target, "--url", f"http://127.0.0.1:{served.port}", "--requests", "1",
                  "--cold-starts", "1", "--no-progress"]  # fmt: skip
        states = served.server.server.registry.states
        for backend in ("grpc", "http"):
            with pytest.raises(SystemExit) as stopped:
                main([*common, "--backend", backend, "--api-key", "user-key"])
            message = str(stopped.value.code)
            assert "cannot measure cold starts" in message and "\n" not in message, message
            assert f"an admin key is needed (--admin-key or {ADMIN_KEY_ENV})" in message, message
            assert states.get("tiny-chat").state.value == "loaded"
        monkeypatch.setenv(ADMIN_KEY_ENV, "admin-key")
        with pytest.raises(SystemExit) as stopped:
            main([*common, "--backend", "grpc"])
        message = str(stopped.value.code)
        assert "--no-autoload" in message and "'tiny-chat' is not loaded" in message, message
        assert states.get("tiny-chat").state.value == "loaded"  # loaded again before the bench stopped


def test_output_paths_checked_before_the_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json or --plot in a folder that does not exist stops the bench at once, naming the flag and the folder
    (it used to fail writing the report after the whole run); no server is needed to see it."""
    for flag in ("--json", "--plot"):
        missing = tmp_path / "no-such-folder" / "out"
        with pytest.raises(SystemExit) as stopped:
            main(["--target", "127.0.0.1:1", flag, str(missing), "--no-progress"])
        assert stopped.value.code == 2
        said = capsys.readouterr().err
        assert f"{flag} {missing}: no folder {missing.parent}" in said, said


def test_bench_poisson_rate_without_tokenizer(server: ServerThread, tmp_path: Path) -> None:
    report = _bench(tmp_path, "--target", server.target, "--rate", "50", "--max-concurrency", "2")
    (run,) = report["summary"]
    assert run["load"] == "rate=50/s c<=2"
    assert run["summary"]["completed"] == REQUESTS


def test_bench_engine_prints_ratios(
    server: ServerThread, tmp_path: Path, tiny_chat_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _bench(
        tmp_path, "--target", server.target, "--model-dir", str(tiny_chat_dir), "--engine",
        "--concurrency", "1", "2", "--rounds", "2", "--prefix-tokens", "256",
    )  # fmt: skip
    _check_summaries(report, {"engine", "grpc"})
    assert sorted({run["round"] for run in report["runs"]}) == [1, 2]
    # Back to back, the order reversed in the second round (so that a machine's drift does not always favour one).
    order = [(run["round"], run["backend"]) for run in report["runs"] if run["concurrency"] == 1]
    assert order == [(1, "engine"), (1, "grpc"), (2, "grpc"), (2, "engine")], order
    metrics = {ratio["metric"] for ratio in report["ratios"]}
    assert "grpc tok/s / engine tok/s, c=2" in metrics
    assert "grpc added TTFT p50 over engine, c=1" in metrics
    assert "grpc batching kept (2/1 vs engine)" in metrics
    assert "grpc ITL p99 / p50, c=2" in metrics
    assert "grpc TTFT cached prefix / cold" in metrics
    assert set(report["prefix_ttft_ms"]) == {"engine", "grpc"}
    for run in report["runs"]:  # the engine alone runs in its own process: its CPU is read there, not the bench's
        if run["backend"] == "engine":
            spent = run["summary"]["cpu_us_per_token"]
            assert set(spent) == {"client", "engine"} and spent["engine"] > spent["client"], spent
    for ratio in report["ratios"]:
        assert ratio["op"] in (">=", "<=") and ratio["met"] in (True, False)
    printed = capsys.readouterr().out
    assert "TTFT p50" in printed and "met" in printed


def test_ratios_are_paired_within_rounds_then_the_median_taken() -> None:
    rounds = [
        [Ratio("grpc / engine", 0.90, ">=", 0.8), Ratio("ITL p99 / p50", math.nan, "<=", 3.0)],
        [Ratio("grpc / engine", 0.70, ">=", 0.8), Ratio("ITL p99 / p50", 2.0, "<=", 3.0)],
        [Ratio("grpc / engine", 0.95, ">=", 0.8), Ratio("ITL p99 / p50", 4.0, "<=", 3.0)],
    ]
    throughput, tail = median_ratios(rounds)
    assert (throughput.metric, throughput.value, throughput.met) == ("grpc / engine", 0.90, True)
    assert (tail.value, tail.met) == (3.0, True)  # a round that could not measure it is left out
    assert math.isnan(median_ratios([[Ratio("x", math.nan, "<=", 1.0)]])[0].value)


def test_bench_sends_images_to_a_vision_model(server: ServerThread, bridge: RunningBridge, tmp_path: Path) -> None:
    """--images 1 against tiny-vision: every request answered over both faces, each prompt 16 image tokens
    (and the tag's newline) longer than the same prompts without an image."""
    common = ["--model", "tiny-vision", "--backend", "grpc", "http", "--target", server.target,
              "--url", f"http://127.0.0.1:{bridge.port}", "--concurrency", "2", "--seed", "7"]  # fmt: skip
    with_images = _bench(tmp_path, *common, "--images", "1", "--image-size", "48")
    without = _bench(tmp_path, *common)
    for run, plain in zip(with_images["summary"], without["summary"], strict=True):
        summary = run["summary"]
        assert summary["completed"] == REQUESTS and summary["failed"] == 0, summary["errors"]
        extra = summary["input_tokens"] - plain["summary"]["input_tokens"]
        assert REQUESTS * 16 <= extra <= REQUESTS * 18, extra


def test_bench_reports_cpu_per_token_by_process(server: ServerThread, tmp_path: Path) -> None:
    """With the server's /metrics reachable (as ``ovserve serve`` serves them beside /v3), every run says how many
    CPU microseconds the client, the server and the model's engine spent per generated token."""
    with_metrics = Bridge(server.target, "127.0.0.1", 0, figures=server.server)
    server.run(with_metrics.start())
    try:
        url = f"http://127.0.0.1:{with_metrics.port}"
        report = _bench(tmp_path, "--backend", "grpc", "http", "--target", server.target, "--url", url,
                        "--concurrency", "2")  # fmt: skip
    finally:
        server.run(with_metrics.stop())
    for run in report["summary"]:
        spent = run["summary"]["cpu_us_per_token"]
        assert set(spent) == {"client", "server", "engine"} and all(value > 0 for value in spent.values()), spent
    without = _bench(tmp_path, "--target", server.target, "--metrics-url", "", "--concurrency", "1")
    assert set(without["summary"][0]["summary"]["cpu_us_per_token"]) == {"client"}  # nothing else to read


def test_a_figure_some_rounds_lack_is_the_median_of_the_others() -> None:
    rounds = [
        {"output_throughput": 10.0, "cpu_us_per_token": {"client": 5.0, "server": 7.0}, "errors": ["a"]},
        {"output_throughput": 30.0, "cpu_us_per_token": {}, "errors": []},
        {"output_throughput": 20.0, "cpu_us_per_token": {"client": 9.0}, "errors": ["b"]},
    ]
    merged = median_summary(rounds)
    assert merged["output_throughput"] == 20.0 and merged["rounds"] == 3
    assert merged["cpu_us_per_token"] == {"client": 7.0, "server": 7.0}
    assert merged["errors"] == ["a", "b"]


def test_a_round_with_failures_is_left_out_of_the_figures_and_ratios() -> None:
    """A round in which requests failed (an engine restarting) would count its answered requests only, a false
    low throughput: its figures are left out, its failures summed and its errors kept; its ratios are missing
    that round, and the median is of the rounds that measured them."""
    rounds = [
        {"failed": 0, "output_throughput": 10.0, "cpu_us_per_token": {"client": 5.0}, "errors": []},
        {"failed": 16, "output_throughput": 0.0, "cpu_us_per_token": {"client": 1.0}, "errors": ["503"]},
        {"failed": 0, "output_throughput": 14.0, "cpu_us_per_token": {"client": 7.0}, "errors": []},
    ]
    merged = median_summary(rounds)
    assert merged["output_throughput"] == 12.0 and merged["cpu_us_per_token"] == {"client": 6.0}
    assert (merged["failed"], merged["rounds_left_out"], merged["errors"]) == (16, 1, ["503"])
    all_failed = median_summary([rounds[1], rounds[1]])
    assert (all_failed["output_throughput"], all_failed["failed"], all_failed["rounds_left_out"]) == (0.0, 32, 0)
    by_round = [
        [Ratio("grpc / engine", 0.9, ">=", 0.8), Ratio("http / engine", 0.8, ">=", 0.8)],
        [Ratio("http / engine", 0.6, ">=", 0.8)],  # gRPC failed this round
        [Ratio("grpc / engine", 1.0, ">=", 0.8), Ratio("http / engine", 0.7, ">=", 0.8)],
    ]
    assert {ratio.metric: ratio.value for ratio in median_ratios(by_round)} == pytest.approx(
        {"grpc / engine": 0.95, "http / engine": 0.7}
    )


def test_each_run_draws_its_own_seed_and_records_it(server: ServerThread, tmp_path: Path) -> None:
    """Without --seed, two runs against one server send different prompts (the same ones would hit its prefix
    cache), and each report says which seed it used, so that a run can be repeated."""
    seeds = [_bench(tmp_path, "--target", server.target, "--concurrency", "1")["config"]["seed"] for _ in range(2)]
    assert all(isinstance(seed, int) for seed in seeds) and seeds[0] != seeds[1], seeds
    repeated = _bench(tmp_path, "--target", server.target, "--concurrency", "1", "--seed", str(seeds[0]))
    assert repeated["config"]["seed"] == seeds[0]


@pytest.mark.parametrize(
    ("url", "default", "api"),
    [
        ("127.0.0.1:8000", "/v3", "http://127.0.0.1:8000/v3"),
        ("http://127.0.0.1:8000/", "/v3", "http://127.0.0.1:8000/v3"),
        ("http://127.0.0.1:8000/v3", "/v3", "http://127.0.0.1:8000/v3"),
        ("https://h:1/v3/chat/completions", "/v3", "https://h:1/v3"),
        ("http://h:8080", "/v1", "http://h:8080/v1"),
        ("http://h:8080/v1/embeddings", "/v1", "http://h:8080/v1"),
        ("http://h:8080/v1/rerank", "/v3", "http://h:8080/v1"),
        ("http://h:8080/v1/models", "/v3", "http://h:8080/v1"),
        ("http://h:8080/proxy/v1", "/v3", "http://h:8080/proxy/v1"),
    ],
)
def test_one_url_names_every_endpoint(url: str, default: str, api: str) -> None:
    base = ApiBase.parse(url, default)
    assert base.api == api
    assert [base.route(e) for e in ("chat", "completions", "embeddings", "rerank", "/models")] == [
        f"{api}/chat/completions", f"{api}/completions", f"{api}/embeddings", f"{api}/rerank", f"{api}/models",
    ]  # fmt: skip
    assert base.metrics == api.rsplit("/", 1)[0] + "/metrics"


@pytest.mark.parametrize("endpoint", ["chat", "embeddings", "rerank"])
def test_a_wrong_url_or_target_ends_in_one_line_naming_it(
    server: ServerThread, bridge: RunningBridge, tmp_path: Path, endpoint: str
) -> None:
    """A port with nothing OpenAI-compatible behind it (the gRPC port, for HTTP), a path that is not the API, a
    target with no gRPC service: SystemExit with the URL or target in its one line, before any load."""
    model = {"embeddings": "tiny-embed", "rerank": "tiny-rerank"}.get(endpoint, "tiny-chat")
    host, grpc_port = server.target.rsplit(":", 1)
    closed = f"127.0.0.1:{_free_port()}"
    cases = [
        (["--backend", "http", "--url", f"http://{host}:{grpc_port}"], f"{host}:{grpc_port}"),
        (["--backend", "http", "--url", f"http://127.0.0.1:{bridge.port}/nothing"], "/nothing"),
        (["--backend", "http", "--url", f"http://{closed}"], closed),
        (["--backend", "grpc", "--target", closed], closed),
    ]
    for args, named in cases:
        with pytest.raises(SystemExit) as stopped:
            main(["--endpoint", endpoint, "--model", model, "--requests", "1", "--no-progress", *args])
        message = str(stopped.value.code)
        assert named in message and "\n" not in message, message


def test_bench_against_a_peer_prints_ratios_against_it(
    server: ServerThread, bridge: RunningBridge, tmp_path: Path, tiny_chat_dir: Path
) -> None:
    """--peer: the same load on another OpenAI-compatible server (here ovserve's own bridge, named by a route
    URL), its model the first it lists; ratios of each service backend against it, without --engine."""
    report = _bench(
        tmp_path, "--backend", "grpc", "--target", server.target, "--peer",
        f"http://127.0.0.1:{bridge.port}/v3/chat/completions", "--model-dir", str(tiny_chat_dir),
        "--concurrency", "1", "2", "--metrics-url", "",
    )  # fmt: skip
    _check_summaries(report, {"grpc", "peer"})
    metrics = {ratio["metric"]: ratio for ratio in report["ratios"]}
    assert set(metrics) == {f"grpc {what} / peer {what}, c={c}" for what in ("tok/s", "TTFT p50") for c in (1, 2)}
    assert all(ratio["value"] > 0 and ratio["met"] is not None for ratio in metrics.values())


def _inputs_bench(tmp_path: Path, *args: str) -> dict[str, Any]:
    """An embeddings or rerank bench of REQUESTS requests of 6-word texts; its JSON report."""
    report = tmp_path / "inputs.json"
    common = ["--requests", str(REQUESTS), "--input-tokens", "6", "--no-progress", "--json", str(report)]
    assert main([*common, *args]) == 0
    result: dict[str, Any] = json.loads(report.read_text())
    return result


def _rates(report: dict[str, Any]) -> dict[tuple[str, int], float]:
    return {(row["backend"], row["concurrency"]): row["inputs_per_s"] for row in report["inputs_per_s"]}


def test_rerank_bench_against_the_service_and_the_bare_pipeline(
    server: ServerThread, bridge: RunningBridge, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--endpoint rerank over gRPC and HTTP beside TextRerankPipeline: documents per second for every runner and
    concurrency, and each service backend's ratio to the engine; the default is 4 documents a request."""
    report = _inputs_bench(
        tmp_path, "--endpoint", "rerank", "--model", "tiny-rerank", "--backend", "grpc", "http",
        "--target", server.target, "--url", f"http://127.0.0.1:{bridge.port}", "--engine",
        "--model-dir", str(BUNDLED_MODELS_DIR / "tiny-rerank"), "--concurrency", "1", "2", "--rounds", "2",
    )  # fmt: skip
    assert (report["endpoint"], report["unit"]) == ("rerank", "documents")
    assert report["load"]["inputs_per_request"] == 4 and report["load"]["query_words"] > 0
    rates = _rates(report)
    assert set(rates) == {(name, c) for name in ("engine", "grpc", "http") for c in (1, 2)}
    assert all(rate > 0 and math.isfinite(rate) for rate in rates.values()), rates
    assert set(report["ratios"]) == {f"{name} / engine, c={c}" for name in ("grpc", "http") for c in (1, 2)}
    assert all(value > 0 and math.isfinite(value) for value in report["ratios"].values())
    printed = capsys.readouterr().out
    assert "documents/s" in printed and "http / engine, c=2" in printed


def test_embeddings_bench_against_a_peer_prints_ratios_against_it(
    server: ServerThread, bridge: RunningBridge, tmp_path: Path
) -> None:
    """--peer on --endpoint embeddings: the same requests to another server's embeddings route (here ovserve's own
    bridge, named by its API base, its model named by --peer-model); ratios of each service backend to it."""
    report = _inputs_bench(
        tmp_path, "--endpoint", "embeddings", "--model", "tiny-embed", "--backend", "grpc", "--target",
        server.target, "--url", f"http://127.0.0.1:{bridge.port}", "--peer", f"http://127.0.0.1:{bridge.port}/v3",
        "--peer-model", "tiny-embed", "--inputs-per-request", "3", "--concurrency", "1", "2",
    )  # fmt: skip
    assert (report["endpoint"], report["load"]["inputs_per_request"]) == ("embeddings", 3)
    rates = _rates(report)
    assert set(rates) == {(name, c) for name in ("grpc", "peer") for c in (1, 2)}
    assert all(rate > 0 for rate in rates.values())
    assert set(report["ratios"]) == {"grpc / peer, c=1", "grpc / peer, c=2"}
    assert all(value > 0 and math.isfinite(value) for value in report["ratios"].values())


class _ShortPeer:
    """A peer that lists a model and answers every rerank with one result, whatever the documents."""

    def __init__(self, loop_of: ServerThread) -> None:
        self._thread = loop_of
        self.port = 0
        self._server: Any = None

    async def _start(self) -> None:
        from tornado.httpserver import HTTPServer
        from tornado.netutil import bind_sockets
        from tornado.web import Application, RequestHandler

        class Models(RequestHandler):
            def get(self) -> None:
                self.write({"object": "list", "data": [{"id": "short"}]})

        class Rerank(RequestHandler):
            def post(self) -> None:
                self.write({"results": [{"index": 0, "relevance_score": 0.5}]})

        sockets = bind_sockets(0, "127.0.0.1")
        self.port = sockets[0].getsockname()[1]
        self._server = HTTPServer(Application([(r"/v1/models", Models), (r"/v1/rerank", Rerank)]))
        self._server.add_sockets(sockets)

    async def _stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> _ShortPeer:
        self._thread.run(self._start())
        return self

    def __exit__(self, *_: object) -> None:
        self._thread.run(self._stop())


def test_a_peer_whose_answer_lacks_documents_ends_the_bench_naming_it(server: ServerThread, tmp_path: Path) -> None:
    """Every answer must cover every input sent: a peer that scores one of 4 documents (its model the first it
    lists) stops the bench with one line naming the peer and the counts, not a ratio of work it did not do."""
    with _ShortPeer(server) as peer, pytest.raises(SystemExit) as stopped:
        main([
            "--endpoint", "rerank", "--model", "tiny-rerank", "--target", server.target, "--requests", "2",
            "--no-progress", "--peer", f"http://127.0.0.1:{peer.port}",
        ])  # fmt: skip
    message = str(stopped.value.code)
    assert "peer answered 1 results for 4 inputs" in message and "\n" not in message, message


def test_ratios_to_the_engine_and_the_peer_are_paired_within_rounds() -> None:
    """Each round's ratio from its own back-to-back runs, then the median: not the ratio of the medians (which
    here would be 0.5), so a slow round on a shared machine slows every runner of that round alike."""
    load = InputLoad(requests=10, inputs_per_request=2, concurrency=(1,), rounds=3)
    seconds = {("engine", 1): [1.0, 1.0, 4.0], ("grpc", 1): [2.0, 1.0, 2.0], ("peer", 1): [4.0, 2.0, 8.0]}
    report = rates_and_ratios(EMBEDDINGS, load, seconds)
    assert report["ratios"] == {"grpc / engine, c=1": 1.0, "grpc / peer, c=1": 2.0}
    assert _rates(report) == {("engine", 1): 20.0, ("grpc", 1): 10.0, ("peer", 1): 5.0}


def test_an_events_data_is_its_data_lines_and_a_comment_has_none() -> None:
    from ovserve.service.bench.backends import sse_data

    assert sse_data(b'data: {"a": 1}') == '{"a": 1}'
    assert sse_data(b":") == "" and sse_data(b": ping") == ""  # llama-server's ping (it failed 1 request in 32)
    assert sse_data(b'event: message\ndata: {"a":\ndata: 1}') == '{"a":\n1}'  # several lines, and other fields
    assert sse_data(b"data:[DONE]") == "[DONE]"


def test_a_peers_requests_each_get_their_own_connection_and_ovserves_share_one() -> None:
    """llama-server closed kept-alive connections under the bench and requests sent on them failed, so a peer's
    requests open a connection each; ovserve's bridge keeps its connections (as real clients do)."""
    asyncio.run(_connections_by_backend())


async def _connections_by_backend() -> None:
    from aiohttp import web

    from ovserve.service.bench.backends import HttpBackend
    from ovserve.service.bench.load import BenchRequest

    seen: list[object] = []

    async def completions(request: web.Request) -> web.StreamResponse:
        seen.append(request.transport.get_extra_info("peername") if request.transport else None)
        reply = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await reply.prepare(request)
        chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": None}
        usage = {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        await reply.write(b":\n\n")  # llama-server's ping after 30 s without a token: a comment, not data
        for event in (chunk, usage):
            await reply.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        await reply.write(b"data: [DONE]\n\n")
        return reply

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        for name, connections in (("peer", 3), ("http", 1)):
            seen.clear()
            backend = HttpBackend(ApiBase.parse(f"http://127.0.0.1:{port}", "/v1"), "m", "chat", 4, name=name)
            try:
                for _ in range(3):
                    result = await backend.stream(BenchRequest("hello", 1))
                    assert result.error is None and result.output_tokens == 1, result.error
            finally:
                await backend.close()
            assert len(set(seen)) == connections, (name, seen)
    finally:
        await runner.cleanup()
