"""Results out: a terminal table, the ratios against their targets, a JSON file, and an optional PNG plot."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Table columns: header -> how to read it from a run's summary.
_COLUMNS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("done", ("completed",), "{:.0f}"),
    ("failed", ("failed",), "{:.0f}"),  # over every round; a round with failures is left out of the figures
    ("req/s", ("request_throughput",), "{:.2f}"),
    ("out tok/s", ("output_throughput",), "{:.1f}"),
    ("TTFT mean", ("ttft_ms", "mean"), "{:.2f}"),
    ("TTFT p50", ("ttft_ms", "p50"), "{:.2f}"),
    ("TTFT p99", ("ttft_ms", "p99"), "{:.2f}"),
    ("TPOT p50", ("tpot_ms", "p50"), "{:.3f}"),
    ("TPOT p99", ("tpot_ms", "p99"), "{:.3f}"),
    ("ITL p50", ("itl_ms", "p50"), "{:.3f}"),
    ("ITL p99", ("itl_ms", "p99"), "{:.3f}"),
    ("E2E p50", ("e2e_ms", "p50"), "{:.1f}"),
    ("E2E p99", ("e2e_ms", "p99"), "{:.1f}"),
)
CPU_PROCESSES = ("client", "server", "engine")  # the CPU-per-token columns, by process
# The cold-start table's columns (service/bench/cold.py's figures): header, key, format.
_COLD_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("cold TTFT", "cold_ttft_ms", "{:.1f}"),
    ("warm TTFT", "warm_ttft_ms", "{:.1f}"),
    ("TTFT cold/warm", "ttft_cold_over_warm", "{:.1f}"),
    ("cold E2E", "cold_e2e_ms", "{:.1f}"),
    ("warm E2E", "warm_e2e_ms", "{:.1f}"),
    ("E2E cold/warm", "e2e_cold_over_warm", "{:.2f}"),
    ("LoadModel alone", "load_model_ms", "{:.1f}"),
)


def _cell(summary: dict[str, Any], path: tuple[str, ...], pattern: str) -> str:
    value: Any = summary
    for key in path:
        value = value[key]
    return "-" if isinstance(value, float) and math.isnan(value) else pattern.format(value)


def table(runs: Sequence[dict[str, Any]]) -> str:
    """One line per run (backend, load); latencies in ms."""
    headers = ["backend", "load", *(header for header, _, _ in _COLUMNS), *(f"{name} us/tok" for name in CPU_PROCESSES)]
    rows = [
        [run["backend"], run["load"], *(_cell(run["summary"], path, pattern) for _, path, pattern in _COLUMNS),
         *_cpu_cells(run["summary"])]
        for run in runs
    ]  # fmt: skip
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(str(cell).rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    header = "  ".join(cell.rjust(width) for cell, width in zip(headers, widths, strict=True))
    return "\n".join([header, "-" * len(header), *lines, "(latencies in ms; CPU microseconds per generated token)"])


def by_model_table(runs: Sequence[dict[str, Any]]) -> str:
    """``table`` of each served name's own figures in runs of mixed traffic (``ovserve bench --mix``)."""
    return table(
        [{"backend": run["backend"], "load": f"{run['load']} {name}", "summary": summary}
         for run in runs for name, summary in run.get("by_model", {}).items()]
    )  # fmt: skip


def _cpu_cells(summary: dict[str, Any]) -> list[str]:
    spent = summary.get("cpu_us_per_token", {})
    return [f"{spent[name]:.0f}" if name in spent else "-" for name in CPU_PROCESSES]


def ratio_table(found: Sequence[dict[str, Any]]) -> str:
    """Each ratio (Ratio.as_dict), its target and whether it is met."""
    if not found:
        return "ratios: none measurable (run --engine with concurrency 1 and 8)"
    width = max(len(ratio["metric"]) for ratio in found)
    lines = [f"{'ratio'.ljust(width)}  {'measured':>10}  {'target':>10}  result"]
    for ratio in found:
        value = "-" if math.isnan(ratio["value"]) else f"{ratio['value']:.3f}{ratio['unit']}"
        target = f"{ratio['op']} {ratio['target']:g}{ratio['unit']}"
        verdict = {True: "met", False: "NOT met", None: "not measured"}[ratio["met"]]
        lines.append(f"{ratio['metric'].ljust(width)}  {value:>10}  {target:>10}  {verdict}")
    return "\n".join(lines)


def cold_start_table(cold_start: dict[str, Any]) -> str:
    """The cold-start figures (``ovserve bench --cold-starts``), one line per backend: medians over rounds, each
    ratio the median of its rounds' own."""
    headers = ["backend", *(header for header, _, _ in _COLD_COLUMNS)]
    rows = [[name, *(pattern.format(figures[key]) for _, key, pattern in _COLD_COLUMNS)]
            for name, figures in cold_start["by_backend"].items()]  # fmt: skip
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    header, *lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
                      for row in [headers, *rows]]  # fmt: skip
    title = (
        f"cold start of {cold_start['model']}: unloaded, its first request loads it; then a warm request "
        f"({cold_start['rounds']} rounds; ms)"
    )
    return "\n".join([title, header, "-" * len(header), *lines])


def write_json(path: Path, report: dict[str, Any]) -> None:
    """The whole report as JSON (NaN written as null, so any JSON reader takes it)."""
    path.write_text(json.dumps(_nan_to_none(report), indent=2) + "\n", encoding="utf-8")


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: _nan_to_none(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(item) for item in value]
    return value


def plot(path: Path, runs: Sequence[dict[str, Any]]) -> None:
    """Latency (TTFT p50/p99, ITL p50) and throughput against concurrency, one line per backend.

    matplotlib is imported here, so the bench runs without it unless a plot is asked for.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise SystemExit("--plot needs matplotlib: pip install 'ovserve[bench]'") from error
    figure, (latency, throughput) = plt.subplots(1, 2, figsize=(11, 4))
    # One line per backend, and per prompt length when several ran (--input-tokens A B: "grpc in=A").
    lines = dict.fromkeys((run["backend"], _length(run["load"])) for run in runs)
    for line in lines:
        backend = "".join(line)
        points = sorted(
            ((run["concurrency"], run["summary"]) for run in runs if (run["backend"], _length(run["load"])) == line),
            key=lambda p: p[0] or 0,
        )
        points = [(concurrency, summary) for concurrency, summary in points if concurrency is not None]
        if not points:
            continue
        xs = [concurrency for concurrency, _ in points]
        latency.plot(xs, [s["ttft_ms"]["p50"] for _, s in points], marker="o", label=f"{backend} TTFT p50")
        latency.plot(
            xs, [s["ttft_ms"]["p99"] for _, s in points], marker="x", linestyle="--", label=f"{backend} TTFT p99"
        )
        latency.plot(xs, [s["itl_ms"]["p50"] for _, s in points], marker="s", linestyle=":", label=f"{backend} ITL p50")
        throughput.plot(xs, [s["output_throughput"] for _, s in points], marker="o", label=backend)
    latency.set(xlabel="concurrent requests", ylabel="ms", title="latency", xscale="log", yscale="log")
    throughput.set(xlabel="concurrent requests", ylabel="output tokens/s", title="throughput", xscale="log")
    measured = sorted({run["concurrency"] for run in runs if run["concurrency"] is not None})
    for axes in (latency, throughput):
        # Ticks at the concurrencies measured, written plainly (log scale would print 2x10^0).
        axes.set_xticks(measured, [str(value) for value in measured])
        axes.minorticks_off()
        axes.legend(fontsize="small")
        axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _length(load: str) -> str:
    """The prompt lengths a load's label names (" in=2048", " in=mix(...)"), or "" when it names none."""
    return load[load.index(" in=") :] if " in=" in load else ""
