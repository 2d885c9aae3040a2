"""The settings of which models stay loaded (issue 45): --load-on-request and --idle-unload-s per model (flags and
TOML keys), the server's budget flags and their checks, --models-dir's offered models, and a request's keep-alive
as Ollama writes it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ovserve.clients.keep_alive import keep_alive_seconds
from ovserve.service.config import ConfigError, offered_models
from ovserve.service.engine import EngineSettings
from ovserve.service.pipelines import PipelineSettings
from ovserve.service.residency import ResidencySettings
from ovserve.service.server.model_keeper import estimated_bytes
from tests.service.test_config import configure, model_dir, toml_file


def test_load_on_request_and_idle_unload_by_flag_and_by_toml_key(tmp_path: Path) -> None:
    one, two = model_dir(tmp_path, "one"), model_dir(tmp_path, "two")
    flagged = configure("--model", f"one={one}", "--model", f"two={two}", "--load-on-request", "two",
                        "--idle-unload-s", "one=90", "--idle-unload-s", "two=0")  # fmt: skip
    entries = (f'[[models]]\nname = "one"\npath = "{one}"\nidle_unload_s = 90\n'
               f'[[models]]\nname = "two"\npath = "{two}"\nload_on_request = true\nidle_unload_s = 0\n')  # fmt: skip
    toml = toml_file(tmp_path, entries)
    for config in (flagged, configure("--config", toml)):
        settings = {spec.name: (spec.load_on_request, spec.idle_unload_s) for spec in config.models}
        assert settings == {"one": (False, 90.0), "two": (True, 0.0)}  # 0 is kept: unloaded as soon as idle


@pytest.mark.parametrize("value", ["soon", "-5", "inf", "nan"])
def test_an_idle_time_that_is_not_a_finite_duration_is_refused_naming_the_flag(tmp_path: Path, value: str) -> None:
    one = model_dir(tmp_path, "one")
    with pytest.raises(ConfigError, match=r"--idle-unload-s one"):
        configure("--model", f"one={one}", "--idle-unload-s", f"one={value}")


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--max-loaded-models", "0"], "--max-loaded-models must be 1 or more"),
        (["--models-memory-gb", "-1"], "--models-memory-gb must be more than 0"),
        (["--model-load-wait-s", "0"], "--model-load-wait-s must be more than 0"),
        (["--models-dir", "/no/such/dir"], "--models-dir /no/such/dir: not a directory"),
    ],
)
def test_budget_flags_are_checked(tmp_path: Path, flags: list[str], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        configure("--model", f"one={model_dir(tmp_path, 'one')}", *flags)


def test_more_models_loaded_at_start_than_the_budget_is_refused_naming_them(tmp_path: Path) -> None:
    one, two = model_dir(tmp_path, "one"), model_dir(tmp_path, "two")
    with pytest.raises(ConfigError, match=r"2 models load at start \(one, two\)"):
        configure("--model", f"one={one}", "--model", f"two={two}", "--max-loaded-models", "1")
    config = configure("--model", f"one={one}", "--model", f"two={two}", "--max-loaded-models", "1",
                       "--load-on-request", "two", "--no-autoload")  # fmt: skip
    assert config.residency == ResidencySettings(autoload=False, max_loaded_models=1)


def test_a_models_directory_offers_each_model_by_name_loaded_on_request(tmp_path: Path) -> None:
    offered = tmp_path / "offered"
    offered.mkdir()
    model_dir(offered, "ov-model")
    (offered / "hf-model").mkdir()
    (offered / "hf-model" / "config.json").write_text("{}")
    (offered / "small.gguf").write_bytes(b"GGUF")
    (offered / "notes.txt").write_text("not a model")
    (offered / ".hidden").mkdir()
    (offered / "empty").mkdir()
    model_dir(offered, "one")  # the configuration's own model of that name wins
    config = configure("--model", f"one={model_dir(tmp_path, 'one')}", "--models-dir", offered)
    specs = {spec.name: spec for spec in config.models}
    assert list(specs) == ["one", "hf-model", "ov-model", "small"]
    assert specs["one"].path == tmp_path / "one"
    assert all(specs[name].load_on_request and specs[name].provenance is None for name in ("hf-model", "small"))
    assert not specs["one"].load_on_request


def test_offered_models_need_no_conversion_before_their_first_load(tmp_path: Path) -> None:
    (tmp_path / "big.gguf").write_bytes(b"GGUF" + bytes(4096))
    [spec] = offered_models(tmp_path, set(), EngineSettings(cache_size_gb=0.5), PipelineSettings())
    assert (spec.name, spec.path, spec.load_on_request) == ("big", tmp_path / "big.gguf", True)
    assert estimated_bytes(spec) == 4100 + 2**29  # its file, and its KV cache


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(300, 300.0), (2.5, 2.5), ("300", 300.0), ("5m", 300.0), ("1h30m", 5400.0), ("250ms", 0.25), ("0", 0.0),
     (0, 0.0), ("-1", math.inf), (-1, math.inf), ("-5m", math.inf), (10**9, math.inf), ("1.5h", 5400.0)],
)  # fmt: skip
def test_keep_alive_reads_seconds_and_go_durations_as_ollama_does(value: object, seconds: float) -> None:
    assert keep_alive_seconds(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["soon", "5 m", "m", "", "1d", True, None, [5], {"s": 1}, "9" * 40, float("nan")])
def test_a_keep_alive_that_is_not_a_duration_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match=r"duration|seconds"):
        keep_alive_seconds(value)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('max_num_seqs = "many"', "max_num_seqs must be an integer; got 'many'"),
        ("max_num_seqs = 2.5", "max_num_seqs must be an integer; got 2.5"),
        ("cache_size_gb = true", "cache_size_gb must be a number; got True"),
        ("enable_prefix_caching = 1", "enable_prefix_caching must be true or false; got 1"),
        ("device = 3", "device must be a string; got 3"),
    ],
)
def test_a_scheduler_value_of_the_wrong_type_is_refused_naming_its_table_and_key(
    tmp_path: Path, line: str, problem: str
) -> None:
    toml = toml_file(
        tmp_path, f'[scheduler]\n{line}\n[[models]]\nname = "one"\npath = "{model_dir(tmp_path, "one")}"\n'
    )
    with pytest.raises(ConfigError, match=rf"\[scheduler\]: {problem}"):
        configure("--config", toml)


def test_scheduler_numbers_become_their_settings_types(tmp_path: Path) -> None:
    entry = f'[[models]]\nname = "one"\npath = "{model_dir(tmp_path, "one")}"\nscheduler = {{ max_num_seqs = 8.0 }}\n'
    toml = toml_file(tmp_path, f"[scheduler]\ncache_size_gb = 2\nstream_interval_ms = 5\n{entry}")
    settings = configure("--config", toml).models[0].settings
    assert (settings.cache_size_gb, settings.stream_interval_ms, settings.max_num_seqs) == (2.0, 5.0, 8)
    assert isinstance(settings.cache_size_gb, float) and isinstance(settings.max_num_seqs, int)
