"""Paired comparison of server configurations: which flags make ovserve faster, measured side by side.

Starts one ``ovserve serve`` per configuration (each on its own free ports, the same model), then runs
``ovserve bench`` against each in turn, ``--rounds`` times, the order rotated every round so that no
configuration always goes first. Prints, per load, the median throughput, TTFT p50 and CPU per token of
each configuration, and the median of the per-round throughput ratio against the first configuration:
on a shared 2-core machine only ratios taken within a round mean much.

    python benchmarks/compare_servers.py --concurrency 1 8 32 --rounds 3 \\
        --config default= --config threads1='--inference-threads 1'

A configuration may also name another checkout of ovserve to run (``NAME@DIR=FLAGS``): a change's
before/after, e.g. ``git worktree add /tmp/before HEAD~1`` then ``--config before@/tmp/before= --config after=``.

Only idle servers wait beside the one measured (an idle engine process blocks on its pipe).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

OVSERVE = [sys.executable, "-m", "ovserve.service.cli"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """One ``ovserve serve`` with extra flags, on free gRPC, REST and metrics ports."""

    def __init__(self, name: str, flags: list[str], model: str | None, checkout: str | None = None) -> None:
        self.name = name
        self.grpc, self.rest, self.metrics = _free_port(), _free_port(), _free_port()
        args = [*OVSERVE, "serve", "--port", str(self.grpc), "--rest-port", str(self.rest)]
        args += ["--metrics-port", str(self.metrics), "--log-level", "WARNING", *flags]
        if model:
            args += ["--model", model]
        env = {**os.environ, "PYTHONPATH": checkout} if checkout else None
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, cwd=checkout, env=env)

    def wait_ready(self, timeout: float = 300) -> None:
        """Until /v3/models lists a model."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"{self.name}: ovserve serve exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.rest}/v3/models", timeout=2) as reply:
                    if json.load(reply)["data"]:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise SystemExit(f"{self.name}: not ready after {timeout} s")

    def stop(self) -> None:
        """SIGTERM, then wait."""
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def bench(server: Server, backend: str, args: argparse.Namespace) -> list[dict]:
    """One ``ovserve bench`` run against ``server``; its summaries, one per load."""
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "bench.json"
        command = [*OVSERVE, "bench", "--backend", backend, "--target", f"127.0.0.1:{server.grpc}"]
        command += [
            "--url",
            f"http://127.0.0.1:{server.rest}",
            "--metrics-url",
            f"http://127.0.0.1:{server.metrics}/metrics",
        ]
        command += ["--concurrency", *map(str, args.concurrency), "--requests", str(args.requests)]
        command += ["--output-tokens", str(args.output_tokens), "--input-tokens", str(args.input_tokens)]
        command += ["--prefix-tokens", "0", "--no-progress", "--json", str(out)]
        if args.model_dir:
            command += ["--model-dir", args.model_dir]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())["summary"]


def main() -> None:
    """Parse the options, run the rounds, print the comparison."""
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--config", action="append", required=True, help="NAME=FLAGS (first: the baseline)")
    options.add_argument("--model", help="NAME=PATH for every server (default: ovserve's bundled models)")
    options.add_argument("--model-dir", help="the model's directory, for the bench's prompts")
    options.add_argument("--backend", default="grpc", choices=["grpc", "http"])
    options.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    options.add_argument("--requests", type=int, default=64)
    options.add_argument("--input-tokens", type=int, default=128)
    options.add_argument("--output-tokens", type=int, default=128)
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--json", type=Path, help="write every round's figures here")
    args = options.parse_args()
    configs = [entry.split("=", 1) for entry in args.config]
    servers = []
    for label, flags in configs:
        name, _, checkout = label.partition("@")
        model = args.model
        if checkout and model and "=" in model and not os.path.isabs(model.split("=", 1)[1]):
            model = model.split("=", 1)[0] + "=" + os.path.abspath(model.split("=", 1)[1])
        servers.append(Server(name, shlex.split(flags), model, checkout or None))
    rounds: list[dict[str, list[dict]]] = []
    try:
        for server in servers:
            server.wait_ready()
        for number in range(args.rounds):
            order = servers[number % len(servers) :] + servers[: number % len(servers)]
            rounds.append({server.name: bench(server, args.backend, args) for server in order})
            print(f"round {number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for server in servers:
            server.stop()
    if args.json:
        args.json.write_text(json.dumps(rounds, indent=1))
    _report(rounds, [server.name for server in servers], args.concurrency)


def _report(rounds: list[dict[str, list[dict]]], names: list[str], loads: list[int]) -> None:
    baseline = names[0]
    print(f"{'load':>5}  {'config':>12}  {'tok/s':>9}  {'ratio':>6}  {'TTFT p50':>9}  {'ITL p50':>8}  {'ITL p99':>8}  "
          f"{'p99/p50':>7}  {'server us/tok':>13}  {'engine us/tok':>13}  {'client us/tok':>13}")  # fmt: skip
    for index, load in enumerate(loads):
        for name in names:
            runs = [round_[name][index]["summary"] for round_ in rounds]
            throughput = statistics.median(run["output_throughput"] for run in runs)
            ratio = statistics.median(
                run["output_throughput"] / round_[baseline][index]["summary"]["output_throughput"]
                for run, round_ in zip(runs, rounds, strict=True)
            )
            ttft = statistics.median(run["ttft_ms"]["p50"] for run in runs)
            itl = {point: statistics.median(run["itl_ms"][point] for run in runs) for point in ("p50", "p99")}
            # The tail's ratio within each round, then the median: inter-token gaps move with the machine's load.
            tail = statistics.median(run["itl_ms"]["p99"] / run["itl_ms"]["p50"] for run in runs)
            cpu = {
                process: statistics.median(run.get("cpu_us_per_token", {}).get(process, float("nan")) for run in runs)
                for process in ("server", "engine", "client")
            }
            print(f"{load:>5}  {name:>12}  {throughput:>9.0f}  {ratio:>6.2f}  {ttft:>9.2f}  {itl['p50']:>8.1f}  "
                  f"{itl['p99']:>8.1f}  {tail:>7.1f}  {cpu['server']:>13.0f}  {cpu['engine']:>13.0f}  "
                  f"{cpu['client']:>13.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
