"""Serving the model the user has: a Hugging Face directory, a repository id from the hub cache, a GGUF file.

Each is the bundled tiny-chat's own weights in that form (tests/sources/checkpoints.py), served by ``ovserve
serve`` as a user starts it, beside the bundled IR: every answer must equal the bundled model's. Conversions go
to a model cache that the next start reuses, and that two processes starting at once fill once.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import openvino_genai as ov_genai
import pytest
from huggingface_hub.file_download import repo_folder_name

from ovserve.service.config import add_arguments, from_arguments
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
from ovserve.service.sources import Provenance, export, resolve
from ovserve.service.sources.cache import ModelCache
from ovserve.service.workers.codec import TokenCodec
from tests.rest_bridge.conftest import http_request
from tests.rest_bridge.test_cli import ROOT, ovserve, read_until
from tests.sources.checkpoints import gguf_file, hf_checkpoint

REPO = "ovserve-tests/tiny-chat"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
# The three sources, and the bundled model with the repository as its speculative-decoding draft (the same
# weights: every drafted token is accepted, the answers stay the bundled model's). A GGUF file could not be its
# draft: OpenVINO GenAI refuses a draft whose tokenizer differs, and the GGUF one splits digits.
SOURCES = ("from-hf", "from-hub", "from-gguf", "with-draft")
# Prompts without digits: the GGUF tokenizer splits digit runs one by one, as Qwen2's pre-tokenizer does
# (checkpoints.gguf_file), so a number would be other tokens than the bundled model's.
PROMPTS = ["Hello!", "Who are you?", "What's the weather like in Paris?", "Tell me about Rome."]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Get the weather in a city.", "parameters": CITY},
}


@dataclass
class Sources:
    hf: Path
    gguf: Path
    hub_home: Path  # HF_HOME holding REPO at COMMIT in the hub cache's layout

    def env(self) -> dict[str, str]:
        """The hub cache, offline."""
        return {**os.environ, "HF_HOME": str(self.hub_home), "HF_HUB_OFFLINE": "1"}

    def serve_args(self, cache: Path) -> list[str]:
        """``ovserve serve`` with the bundled model and every source, converting into ``cache``."""
        bundled = BUNDLED_MODELS_DIR / BUNDLED_MODEL
        return ["serve", "--port", "0", "--rest-port", "0", "--cache-size-gb", "1", "--model-cache", str(cache),
                "--model", f"{BUNDLED_MODEL}={bundled}",
                "--model", f"from-hf={self.hf}", "--weight-format", "from-hf=fp16",
                "--model", f"from-hub={REPO}", "--model", f"from-gguf={self.gguf}",
                "--model", f"with-draft={bundled}", "--draft-model", f"with-draft={REPO}"]  # fmt: skip


def hub_cache(home: Path, checkpoint: Path) -> Path:
    """HF_HOME with ``checkpoint`` as REPO's snapshot at COMMIT, its main branch pointing there (the layout
    huggingface_hub's downloads leave, folder named by its own function)."""
    repo = home / "hub" / repo_folder_name(repo_id=REPO, repo_type="model")
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for item in checkpoint.iterdir():
        (snapshot / item.name).write_bytes(item.read_bytes())
    return home


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Sources:
    root = tmp_path_factory.mktemp("sources")
    hf = hf_checkpoint(root / "tiny-chat-hf")
    return Sources(hf, gguf_file(root / "tiny-chat.gguf"), hub_cache(root / "hf-home", hf))


@dataclass
class Started:
    port: int
    log: list[str]
    seconds: float  # from the command to "serving"


@contextmanager
def serving(sources: Sources, cache: Path) -> Iterator[Started]:
    """``ovserve serve`` on the bundled model and the three sources, until SIGTERM."""
    began = time.monotonic()
    with ovserve(*sources.serve_args(cache), env=sources.env()) as process:
        lines: list[str] = []
        port = int(read_until(process, r"REST listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        read_until(process, r"serving tiny-chat", lines)
        yield Started(port, lines, time.monotonic() - began)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def first(sources: Sources, cache: Path) -> Iterator[Started]:
    with serving(sources, cache) as started:
        yield started


def answer(port: int, model: str, prompt: str, **extra: object) -> dict[str, object]:
    reply = http_request(port, "POST", "/v3/chat/completions", {
        "model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0, "max_tokens": 40,
        **extra})  # fmt: skip
    assert reply.status == 200, reply.body
    message = reply.json()["choices"][0]["message"]
    return {"content": message.get("content"), "tool_calls": [call["function"] for call in
            message.get("tool_calls") or []]}  # fmt: skip


@pytest.mark.parametrize("model", SOURCES)
def test_each_source_answers_as_the_bundled_model(first: Started, model: str) -> None:
    for prompt in PROMPTS:
        assert answer(first.port, model, prompt) == answer(first.port, BUNDLED_MODEL, prompt), prompt
    expected = answer(first.port, BUNDLED_MODEL, PROMPTS[2], tools=[WEATHER])
    assert expected["tool_calls"], expected  # the bundled model calls the tool: the comparison means something
    assert answer(first.port, model, PROMPTS[2], tools=[WEATHER]) == expected


def test_each_source_says_what_it_was_built_from(first: Started, sources: Sources) -> None:
    described = {model["id"]: model for model in http_request(first.port, "GET", "/v3/models").json()["data"]}
    assert described["from-hf"]["source"] == str(sources.hf)
    assert (described["from-hf"]["source_kind"], described["from-hf"]["weight_format"]) == ("huggingface", "fp16")
    assert described["from-hf"]["precision"] == "fp16"
    assert (described["from-hub"]["source"], described["from-hub"]["revision"]) == (REPO, COMMIT)
    assert described["from-gguf"]["source_kind"] == "gguf"
    assert described[BUNDLED_MODEL]["source_kind"] == "openvino" and described[BUNDLED_MODEL]["precision"] == "fp16"
    converted = [line for line in first.log if "converted " in line and " into " in line]
    assert len(converted) == 3, "".join(first.log)  # the draft is from-hub's conversion, reused


def test_the_next_start_reuses_the_conversions(first: Started, sources: Sources, cache: Path) -> None:
    with serving(sources, cache) as again:
        reused = [line for line in again.log if "(converted before)" in line]
        assert len(reused) == 4 and not [line for line in again.log if " in " in line and "converted " in line
                                         and "before" not in line], "".join(again.log)  # fmt: skip
        assert answer(again.port, "from-hf", PROMPTS[1]) == answer(again.port, BUNDLED_MODEL, PROMPTS[1])
    print(f"\nstart with three conversions {first.seconds:.1f} s; reusing them {again.seconds:.1f} s "
          f"({first.seconds / again.seconds:.1f}x)")  # fmt: skip


def test_two_servers_starting_at_once_on_a_new_source_convert_it_once(sources: Sources, tmp_path: Path) -> None:
    args = ["serve", "--port", "0", "--rest-port", "0", "--cache-size-gb", "1", "--model-cache", str(tmp_path),
            "--model", f"g={sources.gguf}"]  # fmt: skip
    with ovserve(*args, env=sources.env()) as one, ovserve(*args, env=sources.env()) as two:
        logs: list[list[str]] = [[], []]
        ports = [int(read_until(process, r"REST listening on 127\.0\.0\.1:(\d+)", lines).group(1))
                 for process, lines in zip((one, two), logs, strict=True)]  # fmt: skip
        for process, lines in zip((one, two), logs, strict=True):
            read_until(process, r"serving g", lines)
        assert answer(ports[0], "g", PROMPTS[0]) == answer(ports[1], "g", PROMPTS[0])
        for process in (one, two):
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0
    text = "".join(logs[0] + logs[1])
    assert len(re.findall(r"converted \S+ into", text)) == 1 and text.count("(converted before)") == 1, text
    assert len([entry for entry in tmp_path.iterdir() if entry.is_dir()]) == 1  # no partial directory left


def test_convert_and_pull_ahead_of_time(sources: Sources, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pulled = subprocess.run([sys.executable, "-m", "ovserve.service.cli", "pull", REPO, "--model-cache", str(cache)],
                            cwd=ROOT, env=sources.env(), capture_output=True, text=True, timeout=600)  # fmt: skip
    assert pulled.returncode == 0, pulled.stderr
    directory = Path(pulled.stdout.strip())
    assert directory.parent == cache and (directory / "openvino_model.xml").is_file()
    again = subprocess.run([sys.executable, "-m", "ovserve.service.cli", "pull", REPO, "--model-cache", str(cache)],
                           cwd=ROOT, env=sources.env(), capture_output=True, text=True, timeout=600)  # fmt: skip
    assert again.stdout == pulled.stdout and "(converted before)" in again.stderr, again.stderr
    out = tmp_path / "tiny-chat-ov"
    converted = subprocess.run([sys.executable, "-m", "ovserve.service.cli", "convert", str(sources.gguf), str(out),
                                "--model-cache", str(cache)], cwd=ROOT, env=sources.env(), capture_output=True,
                               text=True, timeout=600)  # fmt: skip
    assert converted.returncode == 0, converted.stderr
    assert {"openvino_model.xml", "openvino_tokenizer.xml", "config.json", "tokenizer.json"} <= {
        item.name for item in out.iterdir()
    }


def unsupported_gguf(path: Path) -> Path:
    """A GGUF file of an architecture OpenVINO GenAI does not read."""
    writer = gguf.GGUFWriter(str(path), "gpt2")
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_served_on_its_openvino_tokenizer_alone_counts_long_prompts_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where transformers cannot convert a GGUF's tokenizer (no tokenizer.json), the model is served on the one
    OpenVINO GenAI writes, which cut every encode to 8,192 tokens: a longer prompt was read and counted as its first
    8,192 tokens. Export lifts that cut; the tokens are the bundled tokenizer's, long prompt and short."""
    import transformers

    def cannot_convert(*args: object, **kwargs: object) -> None:
        raise ValueError("a tokenizer transformers does not convert")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", cannot_convert)
    out = tmp_path / "exported"
    out.mkdir()
    export.export_gguf(gguf_file(tmp_path / "tiny-chat.gguf"), out)
    assert not (out / "tokenizer.json").exists()
    served, bundled = TokenCodec(out), TokenCodec(BUNDLED_MODELS_DIR / BUNDLED_MODEL)
    for text in ("Tell me about Paris", "hello world " * 3000):
        assert served.encode(text, add_special_tokens=False) == bundled.encode(text, add_special_tokens=False)
    assert len(bundled.encode("hello world " * 3000, add_special_tokens=False)) > 8192


def test_a_gguf_converted_by_an_earlier_export_is_converted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversion cached before export_gguf changed (an earlier GGUF_EXPORT_REVISION) is not served."""
    source, cache = str(gguf_file(tmp_path / "tiny.gguf")), tmp_path / "cache"
    now, _ = resolve(source, cache_dir=cache)
    assert resolve(source, cache_dir=cache)[0] == now  # cached
    monkeypatch.setattr(export, "GGUF_EXPORT_REVISION", export.GGUF_EXPORT_REVISION - 1)
    assert resolve(source, cache_dir=cache)[0] != now


def test_a_quantised_gguf_is_served_in_its_quantisation(tmp_path: Path) -> None:
    directory, provenance = resolve(str(gguf_file(tmp_path / "q8.gguf", "Q8_0")), cache_dir=tmp_path / "cache")
    assert (provenance.source_kind, provenance.precision) == ("gguf", "int8")
    pipe = ov_genai.LLMPipeline(str(directory), "CPU")
    bundled = ov_genai.LLMPipeline(str(BUNDLED_MODELS_DIR / BUNDLED_MODEL), "CPU")
    config = ov_genai.GenerationConfig(max_new_tokens=16, do_sample=False)
    history = ov_genai.ChatHistory([{"role": "user", "content": "Hello!"}])
    assert pipe.generate(history, config).texts == bundled.generate(history, config).texts


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("/nowhere/model", "no such file or directory, and not a Hugging Face repository id"),
        ("nobody/no-such-model", "not in the Hugging Face cache, and the hub cannot be reached"),
        ("notes.txt", "a file must be a .gguf model"),
        ("gpt2.gguf", "GGUF architecture 'gpt2' is not one OpenVINO GenAI reads"),
        ("q5.gguf", "is Q5_0, which OpenVINO GenAI's GGUF reader does not read"),
        ("empty-dir", "neither an OpenVINO model directory"),
        (
            "unknown-arch",
            "failed (optimum-cli exit 1): ValueError: The checkpoint you are trying to load has model "
            "type `no-such-architecture` but Transformers does not recognize this architecture",
        ),
    ],
)
def test_a_bad_source_is_one_line_and_exit_1(sources: Sources, tmp_path: Path, source: str, says: str) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "empty-dir").mkdir()
    unsupported_gguf(tmp_path / "gpt2.gguf")
    (tmp_path / "unknown-arch").mkdir()
    (tmp_path / "unknown-arch" / "config.json").write_text('{"model_type": "no-such-architecture"}')
    (tmp_path / "unknown-arch" / "model.safetensors").write_bytes(b"")
    if source == "q5.gguf":
        gguf_file(tmp_path / source, "Q5_0")
    run = subprocess.run([sys.executable, "-m", "ovserve.service.cli", "serve", "--port", "0", "--rest-port", "0",
                          "--model-cache", str(tmp_path / "cache"), "--model", f"x={source}"],
                         cwd=tmp_path, env={**sources.env(), "PYTHONPATH": str(ROOT)}, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert run.returncode == 1, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ovserve serve: model 'x': ") and says in last, run.stderr
    assert "listening" not in run.stderr


def test_a_weight_format_for_an_openvino_model_is_refused(sources: Sources, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "ovserve.service.cli", "serve", "--model-cache", str(tmp_path),
                          "--model", f"x={BUNDLED_MODELS_DIR / BUNDLED_MODEL}", "--weight-format", "x=int4"],
                         cwd=ROOT, env=sources.env(), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 1 and "already an OpenVINO model" in run.stderr, run.stderr


def test_a_toml_entry_names_a_source_and_the_cache(sources: Sources, tmp_path: Path) -> None:
    """[[models]] path takes a SOURCE as --model does, [server] model_cache the cache, weight_format a format."""
    toml = tmp_path / "ovserve.toml"
    toml.write_text(f'[server]\nmodel_cache = "{tmp_path / "cache"}"\n\n'
                    f'[[models]]\nname = "q"\npath = "{sources.hf}"\nweight_format = "int8"\n')  # fmt: skip
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (spec,) = from_arguments(parser.parse_args(["--config", str(toml)])).models
    assert spec.path.parent == tmp_path / "cache" and spec.provenance is not None
    assert (spec.provenance.source_kind, spec.provenance.weight_format, spec.provenance.precision) == (
        "huggingface", "int8", "int8")  # fmt: skip
    history = ov_genai.ChatHistory([{"role": "user", "content": "Hello!"}])
    reply = ov_genai.LLMPipeline(str(spec.path), "CPU").generate(history, max_new_tokens=16, do_sample=False)
    assert reply.texts[0].strip()  # int8 weights answer (not necessarily as fp16 ones do)


def test_a_half_written_conversion_is_made_again(tmp_path: Path) -> None:
    """A conversion killed midway leaves a directory without its provenance file: never served, made again."""
    cache, made = ModelCache(tmp_path), []

    def make(out: Path) -> None:
        made.append(out)
        (out / "openvino_model.xml").write_text("<net/>")
        Provenance("s", "gguf").write(out)

    entry = cache.entry("m", "0123")
    entry.mkdir(parents=True)
    (entry / "openvino_model.xml").write_text("half")  # what a killed conversion left
    directory, fresh = cache.get_or_make("m", "0123", make)
    assert (directory, fresh, len(made)) == (entry, True, 1)
    assert (entry / "openvino_model.xml").read_text() == "<net/>"
    assert cache.get_or_make("m", "0123", make) == (entry, False) and len(made) == 1
