"""ovserve.service.config: the ``serve`` flags and the TOML file, merged into one ServeConfig (no model is loaded)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from ovserve.service.config import (
    DEFAULT_GRPC_PORT,
    DEFAULT_HOST,
    ConfigError,
    ServeConfig,
    add_arguments,
    from_arguments,
)
from ovserve.service.engine import EngineSettings
from ovserve.service.engine.cpu_features import cpu_flags, int8_dot_product
from ovserve.service.engine.settings import (
    AUTO_MAX_KV_BLOCKS,
    DEFAULT_KV_PRECISION,
    KV_BLOCK_TOKENS,
    STEP_TOKENS,
    STEP_TOKENS_SLOW_PREFILL,
    kv_block_bytes,
    kv_blocks,
)
from ovserve.service.models import (
    BUNDLED_DRAFT,
    BUNDLED_MODEL,
    BUNDLED_MODELS_DIR,
    BUNDLED_SPECULATIVE,
    ModelSpec,
    bundled_model_specs,
)
from ovserve.service.pipelines import PipelineKind
from ovserve.service.sources import SourceError
from tests.conftest import SERVED_BY_DEFAULT, TINY_CHAT, TINY_CHAT_DRAFT

needs_bundled = pytest.mark.skipif(
    not (TINY_CHAT / "openvino_model.xml").is_file() or not (TINY_CHAT_DRAFT / "openvino_model.xml").is_file(),
    reason="the bundled tiny-chat models are not built",
)


def configure(*argv: str | Path) -> ServeConfig:
    """ServeConfig for a ``serve`` command line, parsed by a real ArgumentParser."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return from_arguments(parser.parse_args([str(arg) for arg in argv]))


def model_dir(root: Path, name: str) -> Path:
    """A directory that looks like an OpenVINO model to the config checks (they only look for the IR file)."""
    path = root / name
    path.mkdir()
    (path / "openvino_model.xml").write_text("<net/>")
    return path


def toml_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ovserve.toml"
    path.write_text(text)
    return path


def by_name(config: ServeConfig) -> dict[str, ModelSpec]:
    return {spec.name: spec for spec in config.models}


@needs_bundled
def test_no_models_serves_the_bundled_tiny_chat_its_speculative_twin_and_tiny_vision() -> None:
    config = configure()
    assert config.host == DEFAULT_HOST == "127.0.0.1"
    assert config.port == DEFAULT_GRPC_PORT == 50051
    assert config.models == bundled_model_specs()
    plain, speculative, vision, embed, rerank, whisper, diffusion, speech = config.models
    assert (whisper.name, whisper.task) == ("tiny-whisper", PipelineKind.TRANSCRIBE)
    assert (diffusion.name, diffusion.task) == ("tiny-diffusion", PipelineKind.IMAGE)
    assert (speech.name, speech.task) == ("tiny-speech", PipelineKind.SPEAK)
    assert (embed.name, embed.task, rerank.name, rerank.task) == (
        "tiny-embed",
        PipelineKind.EMBED,
        "tiny-rerank",
        PipelineKind.RERANK,
    )
    assert vision.name == "tiny-vision" and vision.path == BUNDLED_MODELS_DIR / "tiny-vision" and not vision.draft_path
    assert plain.name == BUNDLED_MODEL == "tiny-chat"
    assert plain.path == BUNDLED_MODELS_DIR / BUNDLED_MODEL
    assert plain.draft_path is None
    assert speculative.name == BUNDLED_SPECULATIVE == "tiny-chat-speculative"
    assert speculative.path == BUNDLED_MODELS_DIR / BUNDLED_MODEL  # the same model...
    assert speculative.draft_path == BUNDLED_MODELS_DIR / BUNDLED_DRAFT  # ...with tiny-chat-draft as its draft
    for spec in config.models:
        assert not spec.prompt_lookup
        assert spec.settings == EngineSettings()


@needs_bundled
def test_no_models_bundled_models_take_the_scheduler_flags() -> None:
    specs = configure("--cache-size-gb", "3", "--max-num-seqs", "8", "--no-prefix-caching").models
    assert [spec.name for spec in specs] == SERVED_BY_DEFAULT
    for spec in specs:
        assert spec.settings == EngineSettings(cache_size_gb=3.0, max_num_seqs=8, enable_prefix_caching=False)


def test_stream_interval_from_flag_and_table(tmp_path: Path) -> None:
    assert EngineSettings().stream_interval_ms == 5.0
    for spec in configure("--stream-interval-ms", "0").models:
        assert spec.settings.stream_interval_ms == 0.0
    path = toml_file(tmp_path, "[scheduler]\nstream_interval_ms = 12.5\n")
    assert {spec.settings.stream_interval_ms for spec in configure("--config", path).models} == {12.5}


@pytest.mark.parametrize("value", ["-1", "nan"])
@pytest.mark.parametrize("name", ["stream_interval_ms", "stream_updates_per_s"])
def test_negative_stream_pacing_is_refused(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{name} must be 0 or more"):
        configure(f"--{name.replace('_', '-')}", value)


def test_stream_update_budget_from_flag_and_table(tmp_path: Path) -> None:
    path = toml_file(tmp_path, "[scheduler]\nstream_updates_per_s = 250\n")
    assert {spec.settings.stream_updates_per_s for spec in configure("--config", path).models} == {250.0}
    for spec in configure("--stream-updates-per-s", "0").models:
        assert spec.settings.stream_updates_per_s == 0.0


@needs_bundled
def test_no_models_bundled_models_take_the_scheduler_table(tmp_path: Path) -> None:
    path = toml_file(tmp_path, "[server]\nport = 6000\n\n[scheduler]\nmax_num_seqs = 4\ncache_size_gb = 2\n")
    config = configure("--config", path)
    assert config.port == 6000
    assert config.models == bundled_model_specs(EngineSettings(cache_size_gb=2, max_num_seqs=4))


def test_configured_models_replace_the_bundled_ones(tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    assert [spec.name for spec in configure("--model", f"one={one}").models] == ["one"]


@needs_bundled
def test_toml_models_with_draft_path_and_per_model_scheduler(tmp_path: Path) -> None:
    other = model_dir(tmp_path, "other")
    path = toml_file(
        tmp_path,
        f"""
[server]
host = "0.0.0.0"
port = 6000

[scheduler]
cache_size_gb = 2
max_num_seqs = 32

[[models]]
name = "chat"
path = "{TINY_CHAT}"
draft_path = "{TINY_CHAT_DRAFT}"
scheduler = {{ max_num_seqs = 4, dynamic_split_fuse = false }}

[[models]]
name = "other"
path = "{other}"
prompt_lookup = true
""",
    )
    config = configure("--config", path)
    assert (config.host, config.port) == ("0.0.0.0", 6000)
    assert [spec.name for spec in config.models] == ["chat", "other"]
    chat, other_spec = config.models
    assert chat.path == TINY_CHAT
    assert chat.draft_path == TINY_CHAT_DRAFT
    assert not chat.prompt_lookup
    # Per-model overrides on top of [scheduler], which sits on top of the built-in defaults.
    assert chat.settings == EngineSettings(cache_size_gb=2, max_num_seqs=4, dynamic_split_fuse=False)
    assert other_spec.path == other
    assert other_spec.draft_path is None
    assert other_spec.prompt_lookup
    assert other_spec.settings == EngineSettings(cache_size_gb=2, max_num_seqs=32)


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    path = toml_file(
        tmp_path,
        f"""
[server]
host = "0.0.0.0"
port = 6000

[scheduler]
max_num_seqs = 32
cache_size_gb = 2

[[models]]
name = "one"
path = "{one}"
""",
    )
    config = configure("--config", path, "--host", "::1", "--port", "0", "--max-num-seqs", "7")
    assert (config.host, config.port) == ("::1", 0)  # --port 0 (pick a free port) is not "unset"
    [spec] = config.models
    assert spec.settings == EngineSettings(cache_size_gb=2, max_num_seqs=7)


def test_model_flag_adds_to_the_files_models(tmp_path: Path) -> None:
    one, two = model_dir(tmp_path, "one"), model_dir(tmp_path, "two")
    path = toml_file(tmp_path, f'[[models]]\nname = "one"\npath = "{one}"\n')
    config = configure("--config", path, "--model", f"two={two}", "--max-num-batched-tokens", "512")
    specs = by_name(config)
    assert list(specs) == ["one", "two"]
    assert specs["two"].path == two
    assert specs["two"].draft_path is None
    assert specs["two"].settings == EngineSettings(max_num_batched_tokens=512)
    assert specs["one"].settings == EngineSettings(max_num_batched_tokens=512)


def test_repeated_model_flags_and_a_draft_for_one_of_them(tmp_path: Path) -> None:
    one, two, draft = model_dir(tmp_path, "one"), model_dir(tmp_path, "two"), model_dir(tmp_path, "draft")
    config = configure("--model", f"one={one}", "--model", f"two={two}", "--draft-model", f"two={draft}")
    specs = by_name(config)
    assert [spec.name for spec in config.models] == ["one", "two"]
    assert specs["one"].draft_path is None
    assert specs["two"].draft_path == draft
    assert specs["two"].path == two


def test_prompt_lookup_flag(tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    [spec] = configure("--model", f"one={one}", "--prompt-lookup", "one").models
    assert spec.prompt_lookup
    assert spec.draft_path is None


@pytest.mark.parametrize("flag", ["--draft-model", "--prompt-lookup"])
def test_flag_for_an_unknown_model_names_it(tmp_path: Path, flag: str) -> None:
    one = model_dir(tmp_path, "one")
    value = f"ghost={one}" if flag == "--draft-model" else "ghost"
    with pytest.raises(ConfigError, match=r"no model named 'ghost'"):
        configure("--model", f"one={one}", flag, value)


@pytest.mark.parametrize("value", ['"false"', "0", '"no"'])
def test_a_switch_in_the_toml_file_takes_only_true_or_false(tmp_path: Path, value: str) -> None:
    """bool("false") is True: a string or a number where a switch belongs is refused, naming the key."""
    path = toml_file(tmp_path, f'[[models]]\nname = "tiny-chat"\ntool_guided_generation = {value}\n')
    with pytest.raises(ConfigError, match=r"\[\[models\]\] #1 tool_guided_generation: must be true or false"):
        configure("--config", path)


@pytest.mark.parametrize("value", ["nopath", "=/some/where", "name=", "", "name/without/equals"])
def test_malformed_name_path(value: str) -> None:
    with pytest.raises(ConfigError, match="expected NAME=SOURCE"):
        configure("--model", value)


def test_malformed_draft_name_path(tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    with pytest.raises(ConfigError, match="expected NAME=SOURCE"):
        configure("--model", f"one={one}", "--draft-model", "one")


def test_path_with_equals_sign_splits_at_the_first(tmp_path: Path) -> None:
    odd = model_dir(tmp_path, "a=b")
    [spec] = configure("--model", f"odd={odd}").models
    assert (spec.name, spec.path) == ("odd", odd)


def test_model_path_without_ir_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceError, match=r"model 'x': .*empty: neither an OpenVINO model directory"):
        configure("--model", f"x={empty}")


def test_missing_model_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"nowhere: no such file or directory, and not a Hugging Face repository"):
        configure("--model", f"x={tmp_path / 'nowhere'}")


def test_draft_path_without_ir_is_refused(tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    empty = tmp_path / "empty"
    empty.mkdir()
    path = toml_file(tmp_path, f'[[models]]\nname = "one"\npath = "{one}"\ndraft_path = "{empty}"\n')
    with pytest.raises(SourceError, match=r"draft model of 'one': .*empty: neither an OpenVINO model directory"):
        configure("--config", path)


def test_unknown_scheduler_key_in_scheduler_table_is_named(tmp_path: Path) -> None:
    path = toml_file(tmp_path, "[scheduler]\ncache_size_gb = 1\nmax_num_sequences = 4\n")
    with pytest.raises(ConfigError, match=r"\[scheduler\].*max_num_sequences"):
        configure("--config", path)


def test_unknown_per_model_scheduler_key_is_named_with_the_model_entry(tmp_path: Path) -> None:
    one, two = model_dir(tmp_path, "one"), model_dir(tmp_path, "two")
    path = toml_file(
        tmp_path,
        f"""
[[models]]
name = "one"
path = "{one}"

[[models]]
name = "two"
path = "{two}"
scheduler = {{ kv_cache = 3 }}
""",
    )
    with pytest.raises(ConfigError, match=r"\[\[models\]\] #2.*kv_cache") as caught:
        configure("--config", path)
    assert "max_num_seqs" in str(caught.value)  # the known keys are listed


@pytest.mark.parametrize(
    "entry",
    [
        'name = "x"',  # no path
        'path = "/models/x"',  # no name
        "prompt_lookup = true",  # neither
    ],
)
def test_model_entry_without_name_or_path(tmp_path: Path, entry: str) -> None:
    one = model_dir(tmp_path, "one")
    path = toml_file(tmp_path, f'[[models]]\nname = "one"\npath = "{one}"\n\n[[models]]\n{entry}\n')
    with pytest.raises(ConfigError, match=r"\[\[models\]\] #2: needs name and path"):
        configure("--config", path)


def test_draft_model_and_prompt_lookup_exclude_each_other(tmp_path: Path) -> None:
    one, draft = model_dir(tmp_path, "one"), model_dir(tmp_path, "draft")
    with pytest.raises(ConfigError, match="exclude each other"):
        configure("--model", f"one={one}", "--draft-model", f"one={draft}", "--prompt-lookup", "one")


def test_model_flag_replaces_a_file_model_of_the_same_name(tmp_path: Path) -> None:
    old, new = model_dir(tmp_path, "old"), model_dir(tmp_path, "new")
    path = toml_file(tmp_path, f'[[models]]\nname = "m"\npath = "{old}"\n')
    [spec] = configure("--config", path, "--model", f"m={new}").models
    assert spec.path == new


def test_scheduler_flags_become_engine_settings(tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    [spec] = configure(
        "--model", f"one={one}", "--cache-size-gb", "0.5", "--max-num-seqs", "3", "--max-num-batched-tokens", "99",
        "--no-dynamic-split-fuse", "--no-prefix-caching",
    ).models  # fmt: skip
    assert spec.settings == EngineSettings(
        cache_size_gb=0.5, max_num_seqs=3, max_num_batched_tokens=99, dynamic_split_fuse=False,
        enable_prefix_caching=False,
    )  # fmt: skip


def test_home_in_model_path_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    model_dir(tmp_path, "mine")
    [spec] = configure("--model", "mine=~/mine").models
    assert spec.path == tmp_path / "mine"


def _model_config(root: Path, name: str, **config: object) -> Path:
    directory = root / name
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_kv_cache_is_sized_in_blocks_from_the_models_attention_shape(tmp_path: Path) -> None:
    tiny = TINY_CHAT
    # tiny-chat: 2 layers x (keys + values) x 4 heads x 32 dims x 2 bytes (f16) = 1 KiB a token, 32 KiB a block
    assert EngineSettings().scheduler(tiny)["num_kv_blocks"] == AUTO_MAX_KV_BLOCKS  # 1 GB would be 32,768
    assert EngineSettings(cache_size_gb=0.25).scheduler(tiny)["num_kv_blocks"] == 8192
    exact = EngineSettings(kv_cache_blocks=100).scheduler(tiny)
    assert (exact["num_kv_blocks"], exact["cache_size"]) == (100, 0)  # blocks, not a size
    qwen = _model_config(
        tmp_path, "qwen", num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, hidden_size=896
    )
    assert kv_blocks(qwen, None) == kv_blocks(qwen, 1.0) == 2730  # its 1 GB is under the cap
    llama = _model_config(
        tmp_path, "llama", num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, head_dim=64
    )
    assert kv_blocks(llama, None) == 1024  # its 1 GB is under the cap
    # u8: a byte a value, and an f32 scale and zero point per value token and per key channel in a block: 7,296
    # bytes a token on this shape, what openvino-genai 2026.4 allocated for it (tests/service/engine/test_memory.py
    # checks the real allocation on the bundled models)
    assert kv_block_bytes(64, "u8") * 24 * 2 == 7296 * KV_BLOCK_TOKENS
    assert kv_blocks(qwen, 1.0, "u8") == 4599
    narrow = EngineSettings(cache_size_gb=0.25, kv_cache_precision="u8").scheduler(tiny)["num_kv_blocks"]
    assert narrow == 13107  # a size means bytes, whatever the precision: 40 bytes a head and token at 32 dims
    shapeless = _model_config(tmp_path, "shapeless", model_type="odd")
    assert kv_blocks(shapeless, None) is None
    assert EngineSettings().scheduler(shapeless)["cache_size"] == 1  # the pipeline sizes 1 GB itself


def test_kv_cache_flags_and_their_errors(tmp_path: Path) -> None:
    for spec in configure("--kv-cache-blocks", "512").models:
        assert (spec.settings.kv_cache_blocks, spec.settings.cache_size_gb) == (512, None)
    path = toml_file(tmp_path, "[scheduler]\ncache_size_gb = 2\n")
    for spec in configure("--config", path, "--kv-cache-blocks", "512").models:  # the flag replaces the file's size
        assert (spec.settings.kv_cache_blocks, spec.settings.cache_size_gb) == (512, None)
    with pytest.raises(ConfigError, match="give cache_size_gb or kv_cache_blocks, not both"):
        configure("--kv-cache-blocks", "512", "--cache-size-gb", "1")
    with pytest.raises(ConfigError, match="kv_cache_blocks must be 1 or more"):
        configure("--kv-cache-blocks", "0")
    with pytest.raises(ConfigError, match="cache_size_gb must be more than 0"):
        configure("--cache-size-gb", "-2")


def test_server_table_and_flags_merge_field_by_field(tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    keys = tmp_path / "keys.txt"
    keys.write_text("sk-file-2\n\n")
    path = toml_file(
        tmp_path,
        f"""
[server]
grace_seconds = 3
api_keys = ["sk-toml"]
response_store = "{tmp_path / "store.db"}"
max_concurrent_requests = 7

[[models]]
name = "one"
path = "{one}"
""",
    )
    config = configure("--config", path, "--api-key", "sk-flag", "--api-key-file", keys, "--response-max-age", "60",
                       "--max-concurrent-requests", "0")  # fmt: skip
    assert config.grace_seconds == 3.0 and isinstance(config.grace_seconds, float)
    assert config.api_keys == ("sk-toml", "sk-flag", "sk-file-2")  # keys add up; every other value is replaced
    assert config.response_store == tmp_path / "store.db"
    assert config.response_max_age_seconds == 60.0
    assert config.max_concurrent_requests == 0  # the flag's 0 (no bound) wins over the file's 7
    defaults = configure("--model", f"one={one}")
    assert (defaults.grace_seconds, defaults.api_keys, defaults.response_store) == (10.0, (), None)
    assert defaults.max_concurrent_requests == 512 and defaults.response_max_age_seconds is None
    with pytest.raises(ConfigError, match="--max-concurrent-requests must be 0"):
        configure("--model", f"one={one}", "--max-concurrent-requests", "-1")


def test_a_negative_cpu_runtime_cache_is_refused() -> None:
    with pytest.raises(ConfigError, match="cpu_runtime_cache must be 0 or more"):
        configure("--cpu-runtime-cache", "-1")


def test_cpu_properties_reach_the_engine_and_bad_values_are_refused_naming_the_setting() -> None:
    for spec in configure("--kv-cache-precision", "f16", "--dynamic-quantization-group-size", "64").models:
        assert spec.settings.properties() == {"KV_CACHE_PRECISION": "f16", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 64}
    assert EngineSettings(device="GPU").properties() == {}  # another device: its plugin's own defaults
    with pytest.raises(ConfigError, match="kv_cache_precision must be one of u8, f16, bf16, f32; got 'u4'"):
        configure("--kv-cache-precision", "u4")
    with pytest.raises(ConfigError, match="dynamic_quantization_group_size must be 0 or more"):
        configure("--dynamic-quantization-group-size", "-32")
    for spec in configure("--inference-precision", "f32").models:
        assert spec.settings.properties() == {"INFERENCE_PRECISION_HINT": "f32"}
    with pytest.raises(ConfigError, match="inference_precision must be one of f32, bf16, f16; got 'fp32'"):
        configure("--inference-precision", "fp32")
    for spec in configure("--optimize-for", "prefill").models:
        assert spec.settings.optimize_for == "prefill"
    with pytest.raises(ConfigError, match="optimize_for must be one of decode, prefill; got 'speed'"):
        configure("--optimize-for", "speed")


def test_cpu_properties_are_openvinos_unless_given() -> None:
    assert EngineSettings().properties() == {}
    given = EngineSettings(kv_cache_precision="f16", dynamic_quantization_group_size=64).properties()
    assert given == {"KV_CACHE_PRECISION": "f16", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 64}


def test_a_generating_pipeline_on_a_cpu_is_always_told_its_kv_cache_precision() -> None:
    """OpenVINO's own choice differs by CPU and head size, and the cache is sized for the one told."""
    assert EngineSettings().engine_properties() == {"KV_CACHE_PRECISION": DEFAULT_KV_PRECISION}
    chosen = EngineSettings(kv_cache_precision="u8", inference_precision="f32").engine_properties()
    assert chosen == {"KV_CACHE_PRECISION": "u8", "INFERENCE_PRECISION_HINT": "f32"}
    assert EngineSettings(device="GPU").engine_properties() == {}  # another device: its plugin's own defaults


@pytest.mark.parametrize(
    ("int8_dot", "tokens"), [(False, STEP_TOKENS_SLOW_PREFILL), (True, STEP_TOKENS), (None, STEP_TOKENS)]
)
def test_tokens_per_step_default_to_what_was_measured_for_the_cpu(
    monkeypatch: pytest.MonkeyPatch, int8_dot: bool | None, tokens: int
) -> None:
    """Fewer tokens a step on a CPU known to lack an int8 dot-product instruction (its prompt tokens cost several
    times more); a value given wins, and another device keeps the larger step."""
    monkeypatch.setattr("ovserve.service.engine.settings.int8_dot_product", lambda: int8_dot)
    assert EngineSettings().scheduler(TINY_CHAT)["max_num_batched_tokens"] == tokens
    assert EngineSettings(max_num_batched_tokens=300).scheduler(TINY_CHAT)["max_num_batched_tokens"] == 300
    assert EngineSettings(device="GPU").step_tokens() == STEP_TOKENS


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu avx2\n")
    flags = cpu_flags.__wrapped__(cpuinfo)
    assert flags == {"fpu", "sse2", "avx2", "fma"} and int8_dot_product(flags) is False
    assert int8_dot_product(frozenset({"avx2", "avx_vnni"})) is True
    assert cpu_flags.__wrapped__(tmp_path / "missing") is None


def test_image_flags_become_the_media_policy(tmp_path: Path) -> None:
    config = configure("--allowed-media-domain", "img.example.com", "--allowed-media-domain", "cdn.example.com",
                       "--allow-private-media-hosts", "--allowed-local-media-path", tmp_path,
                       "--max-images-per-request", "2", "--max-image-bytes", "1000")  # fmt: skip
    media = config.media
    assert media.allowed_media_domains == ("img.example.com", "cdn.example.com") and media.allow_private_media_hosts
    assert (media.allowed_local_media_path, media.max_images_per_request, media.max_image_bytes) == (tmp_path, 2, 1000)
    assert configure().media.allowed_media_domains == () and not configure().media.allow_private_media_hosts


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [("--max-images-per-request", "0", "more than 0"), ("--max-image-pixels", "-1", "more than 0"),
     ("--media-fetch-timeout-seconds", "0", "more than 0"), ("--allowed-local-media-path", "/nonexistent/dir",
                                                            "not a directory")],
)  # fmt: skip
def test_bad_image_flags_are_refused(flag: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        configure(flag, value)


def test_inference_threads_reach_the_engine_settings_and_zero_is_refused() -> None:
    assert all(spec.settings.inference_threads == 1 for spec in configure("--inference-threads", "1").models)
    assert EngineSettings(inference_threads=1).properties() == {"INFERENCE_NUM_THREADS": 1}
    assert EngineSettings().properties() == {}  # OpenVINO's own default
    with pytest.raises(ConfigError, match="inference_threads must be 1 or more"):
        configure("--inference-threads", "0")


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--max-batch-inputs", "0", "--max-batch-inputs must be more than 0; got 0"),
        ("--max-batch-tokens", "-8", "--max-batch-tokens must be more than 0; got -8"),
        ("--max-queued-jobs", "0", "--max-queued-jobs must be more than 0"),
        ("--batch-delay-ms", "-1", "--batch-delay-ms must be 0 or more; got -1.0"),
        ("--batch-delay-ms", "nan", "--batch-delay-ms must be 0 or more; got nan"),
    ],
)
def test_pipeline_bounds_out_of_range_are_refused_naming_the_flag(flag: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        configure(flag, value)


def test_pipeline_batch_settings_reach_the_pipelines() -> None:
    config = configure("--max-batch-tokens", "4096", "--batch-delay-ms", "2.5")
    embed = next(spec for spec in config.models if spec.name == "tiny-embed")
    assert (embed.pipeline.max_batch_tokens, embed.pipeline.batch_delay_ms) == (4096, 2.5)
