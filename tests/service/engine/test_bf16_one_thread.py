"""OpenVINO 2026.4 dies of SIGFPE compiling in bf16 on one inference thread on a CPU with AMX (issue 45): ovserve
computes in f32 where the precision was left to OpenVINO, and refuses bf16 asked for with one thread, naming why.
Whether the machine running the tests has AMX or not, the decision is tested on faked CPU feature sets, and through
the config on one."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ovserve.service.config import ConfigError
from ovserve.service.engine import cpu_features
from ovserve.service.engine.cpu_features import crash_free_precision
from tests.service.test_config import by_name, configure, model_dir, toml_file

SAPPHIRE_RAPIDS = frozenset({"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8"})
ZEN4 = frozenset({"avx2", "avx512f", "avx512_bf16", "avx512_vnni"})  # bf16 by default too, without AMX: no crash
AVX2 = frozenset({"avx2", "fma"})
REFUSED = "bf16 on one inference thread crashes OpenVINO 2026.4 on this CPU"

# (device, precision given, threads given, CPU flags) -> the precision compiled with (REFUSED: ValueError)
DECISIONS: list[tuple[str, str | None, int | None, frozenset[str] | None, str | None]] = [
    ("CPU", None, 1, SAPPHIRE_RAPIDS, "f32"),  # OpenVINO's bf16 on one thread: avoided
    ("CPU", "bf16", 1, SAPPHIRE_RAPIDS, REFUSED),  # asked for: refused, naming the ways out
    ("CPU", "f32", 1, SAPPHIRE_RAPIDS, "f32"),
    ("CPU", "f16", 1, SAPPHIRE_RAPIDS, "f16"),
    ("CPU", None, 2, SAPPHIRE_RAPIDS, None),  # two threads compile
    ("CPU", "bf16", 4, SAPPHIRE_RAPIDS, "bf16"),
    ("cpu", None, 1, SAPPHIRE_RAPIDS, "f32"),  # OpenVINO's device names are case-insensitive
    ("GPU", None, 1, SAPPHIRE_RAPIDS, None),  # another device's plugin
    ("CPU", None, 1, ZEN4, None),
    ("CPU", "bf16", 1, ZEN4, "bf16"),
    ("CPU", None, 1, AVX2, None),
]


@pytest.mark.parametrize(("device", "precision", "threads", "flags", "expected"), DECISIONS)
def test_the_precision_compiled_with_on_each_cpu(
    device: str, precision: str | None, threads: int | None, flags: frozenset[str], expected: str | None
) -> None:
    if expected == REFUSED:
        with pytest.raises(
            ValueError, match=f"^{REFUSED} .*--inference-threads 2 or more, or --inference-precision f32"
        ):
            crash_free_precision(device, precision, threads, flags)
    else:
        assert crash_free_precision(device, precision, threads, flags) == expected


def test_threads_left_to_openvino_are_one_where_one_cpu_is_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_features.os, "sched_getaffinity", lambda pid: {0})
    assert crash_free_precision("CPU", None, None, SAPPHIRE_RAPIDS) == "f32"
    monkeypatch.setattr(cpu_features.os, "sched_getaffinity", lambda pid: {0, 1})
    assert crash_free_precision("CPU", None, None, SAPPHIRE_RAPIDS) is None


def test_unknown_cpu_flags_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: None)
    assert crash_free_precision("CPU", None, 1) is None


@pytest.fixture
def amx(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine's CPU taken for one with AMX."""
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: SAPPHIRE_RAPIDS)


def test_serve_computes_in_f32_on_one_thread_and_says_why(
    amx: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    one, two = model_dir(tmp_path, "one"), model_dir(tmp_path, "two")
    path = toml_file(
        tmp_path,
        f'[[models]]\nname = "one"\npath = "{one}"\nscheduler = {{ inference_threads = 1 }}\n\n'
        f'[[models]]\nname = "two"\npath = "{two}"\n',
    )
    with caplog.at_level(logging.WARNING, logger="ovserve.service.config"):
        specs = by_name(configure("--config", path))
    assert specs["one"].settings.inference_precision == "f32"
    assert specs["two"].settings.inference_precision is None  # OpenVINO's default threads: left alone
    [warning] = caplog.records
    assert warning.getMessage().startswith("model 'one' computes in f32: OpenVINO's default, bf16, on one inference")
    [flagged] = configure("--model", f"one={one}", "--inference-threads", "1").models
    assert flagged.settings.inference_precision == "f32"


def test_serve_refuses_bf16_asked_for_on_one_thread(amx: None, tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    with pytest.raises(ConfigError, match=f"^model 'one': {REFUSED}"):
        configure("--model", f"one={one}", "--inference-threads", "1", "--inference-precision", "bf16")
    [spec] = configure("--model", f"one={one}", "--inference-threads", "2", "--inference-precision", "bf16").models
    assert (spec.settings.inference_threads, spec.settings.inference_precision) == (2, "bf16")


def test_serve_changes_nothing_without_amx(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: ZEN4)
    one = model_dir(tmp_path, "one")
    [spec] = configure("--model", f"one={one}", "--inference-threads", "1", "--inference-precision", "bf16").models
    assert spec.settings.inference_precision == "bf16"
    [spec] = configure("--model", f"one={one}", "--inference-threads", "1").models
    assert spec.settings.inference_precision is None
