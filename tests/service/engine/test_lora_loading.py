"""Adapters loaded at run time from hostile files and paths (issue 43): every refusal a 400 / INVALID_ARGUMENT
naming the field (``lora_path`` for a path or a file, else the adapter_config.json field), never a 500; no read
that blocks (a FIFO), no file outside the allowed directory (a symlink), no load holding up another; and the base
model's long greedy answers unchanged by the adapters loaded, as docs/operations/lora.md says (the test servers
compute in f32).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from safetensors.numpy import save_file

from ovserve.clients import OvserveClient
from ovserve.clients.v1 import model_pb2, model_pb2_grpc
from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge
from tests.rpc import failure
from tests.service.engine.test_lora import CAPITALS, write_adapter

WEIGHTS, CONFIG = "adapter_model.safetensors", "adapter_config.json"


@pytest.fixture(scope="module")
def allowed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("allowed")


@pytest.fixture(scope="module")
def running(allowed: Path) -> Iterator[RunningBridge]:
    with served_with_bridge(
        [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)], allow_runtime_lora=allowed
    ) as on:
        yield on


def load(running: RunningBridge, name: str, path: str) -> tuple[int, dict[str, Any] | str]:
    """POST /v1/load_lora_adapter: the status, and the error (or the text of a success)."""
    reply = http_request(running.port, "POST", "/v1/load_lora_adapter", {"lora_name": name, "lora_path": path})
    return reply.status, reply.json()["error"] if reply.status >= 400 else reply.body.decode()


def unload(running: RunningBridge, name: str) -> int:
    return http_request(running.port, "POST", "/v1/unload_lora_adapter", {"lora_name": name}).status


def _header(directory: Path, header: bytes) -> None:
    """A weights file of that header and no data."""
    (directory / WEIGHTS).write_bytes(struct.pack("<Q", len(header)) + header)


def _config(directory: Path, text: str) -> None:
    (directory / CONFIG).write_text(text)


def _offsets(directory: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """The weights file with its header changed by ``change`` (the data kept)."""
    data = (directory / WEIGHTS).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    change(header)
    _header(directory, json.dumps(header).encode())
    with (directory / WEIGHTS).open("ab") as file:
        file.write(data[8 + length :])


def _first(header: dict[str, Any]) -> dict[str, Any]:
    return header[min(key for key in header if key != "__metadata__")]


def _weights_with(directory: Path, value: float, dtype: type = np.float32) -> None:
    """The adapter's matrices with one weight set to ``value``."""
    from safetensors.numpy import load_file

    tensors = load_file(str(directory / WEIGHTS))
    first = min(tensors)
    tensors[first] = tensors[first].astype(dtype)
    tensors[first].flat[3] = value
    save_file(tensors, str(directory / WEIGHTS))


def _a_directory(directory: Path) -> None:
    (directory / WEIGHTS).unlink()
    (directory / WEIGHTS).mkdir()


def _outside_link(directory: Path, file: str) -> None:
    """``file`` a symlink to a good adapter's file outside the allowed directory."""
    outside = write_adapter(directory.parents[2] / f"outside-{directory.parent.name}", 9)  # (beside allowed/)
    (directory / file).unlink()
    (directory / file).symlink_to(outside / file)


#: Each hostile adapter: how it is made from a good one in ``directory`` (or the lora_path sent), and the field
#: its 400 names.
HOSTILE: dict[str, tuple[Callable[[Path], None] | str, str]] = {
    "a NUL in lora_path": ("good\x00/x", "lora_path"),
    "a 4,096-character lora_path": ("a" * 4096, "lora_path"),
    "a 300-character name in lora_path": ("a" * 300, "lora_path"),
    "~user in lora_path": ("~nobody-here/x", "lora_path"),
    "a deeply nested header": (lambda d: _header(d, b"[" * 100_000 + b"]" * 100_000), "lora_path"),
    "a header nested 40 deep": (lambda d: _header(d, b'{"a": ' * 40 + b"1" + b"}" * 40), "lora_path"),
    "a header that is a JSON list": (lambda d: _header(d, b"[1, 2]"), "lora_path"),
    "a header entry that is a list": (lambda d: _header(d, b'{"x": [1]}'), "lora_path"),
    "a header whose offsets are strings": (lambda d: _offsets(d, lambda h: _first(h).update(data_offsets="0")),
                                           "lora_path"),
    "offsets covering 8 bytes": (lambda d: _offsets(d, lambda h: _first(h).update(data_offsets=[0, 8])), "lora_path"),
    "overlapping offsets": (lambda d: _offsets(d, lambda h: [v.update(data_offsets=[0, v["data_offsets"][1] - v[
        "data_offsets"][0]]) for k, v in h.items() if k != "__metadata__"]), "lora_path"),
    "trailing bytes": (lambda d: (d / WEIGHTS).open("ab").write(b"\0" * 64) and None, "lora_path"),
    "a NaN weight": (lambda d: _weights_with(d, np.nan), "lora_path"),
    "an infinite F16 weight": (lambda d: _weights_with(d, np.inf, np.float16), "lora_path"),
    "weights a directory": (_a_directory, "lora_path"),
    "weights a symlink out of the directory": (lambda d: _outside_link(d, WEIGHTS), "lora_path"),
    "the config a symlink out of the directory": (lambda d: _outside_link(d, CONFIG), "lora_path"),
    'r "abc"': (lambda d: _config(d, '{"r": "abc", "lora_alpha": 4}'), "r"),
    "r Infinity": (lambda d: _config(d, '{"r": Infinity, "lora_alpha": 4}'), "r"),
    "r 1e-300": (lambda d: _config(d, '{"r": 1e-300, "lora_alpha": 4}'), "r"),
    "r true": (lambda d: _config(d, '{"r": true}'), "r"),
    "r not the matrices' rank": (lambda d: _config(d, '{"r": 8, "lora_alpha": 8}'), "r"),
    "lora_alpha NaN": (lambda d: _config(d, '{"r": 4, "lora_alpha": NaN}'), "lora_alpha"),
    "lora_alpha Infinity": (lambda d: _config(d, '{"r": 4, "lora_alpha": Infinity}'), "lora_alpha"),
    "lora_alpha 1e-300": (lambda d: _config(d, '{"r": 4, "lora_alpha": 1e-300}'), "lora_alpha"),
    "lora_alpha 10**400": (lambda d: _config(d, '{"r": 4, "lora_alpha": 1' + "0" * 400 + "}"), "lora_alpha"),
    "lora_alpha negative": (lambda d: _config(d, '{"r": 4, "lora_alpha": -4}'), "lora_alpha"),
    "use_rslora a string": (lambda d: _config(d, '{"r": 4, "use_rslora": "yes"}'), "use_rslora"),
    "a deeply nested config": (lambda d: _config(d, "[" * 100_000 + "]" * 100_000), "lora_path"),
    "a config nested 40 deep": (lambda d: _config(d, '{"r": 4, "x": ' + "[" * 40 + "]" * 40 + "}"), "lora_path"),
    "a config that is not UTF-8": (lambda d: (d / CONFIG).write_bytes(b'{"r": "\xff"}') and None, "lora_path"),
}  # fmt: skip
#: Names an adapter cannot be served as.
BAD_NAMES = {"a NUL": "a\x00b", "a newline": "a\nb", "100,000 characters": "n" * 100_000}


@pytest.mark.parametrize("how", list(HOSTILE))
def test_a_hostile_adapter_is_a_400_naming_the_field(running: RunningBridge, allowed: Path, how: str) -> None:
    """Over HTTP (OpenAI's envelope, ``param``) and gRPC (INVALID_ARGUMENT, BadRequest's field): the same field."""
    make, field = HOSTILE[how]
    name = f"case-{list(HOSTILE).index(how)}"
    if isinstance(make, str):
        write_adapter(allowed / "good", 1)
        path = make
    else:
        make(write_adapter(allowed / name / "adapter", 1))
        path = f"{name}/adapter"
    status, error = load(running, name, path)
    assert status == 400 and isinstance(error, dict) and error["param"] == field, (status, error)
    with grpc.insecure_channel(running.server.target) as channel, pytest.raises(grpc.RpcError) as refused:
        model_pb2_grpc.ModelServiceStub(channel).LoadLoraAdapter(
            model_pb2.LoadLoraAdapterRequest(lora_name=name, lora_path=path)
        )
    said = failure(refused.value)
    assert said.code == grpc.StatusCode.INVALID_ARGUMENT and said.fields == [field], said
    with OvserveClient(running.server.target) as client:
        assert name not in [model.id for model in client.list_models()]  # not loaded


@pytest.mark.parametrize("how", list(BAD_NAMES))
def test_a_name_no_request_could_give_is_a_400(running: RunningBridge, allowed: Path, how: str) -> None:
    write_adapter(allowed / "good", 1)
    status, error = load(running, BAD_NAMES[how], "good")
    assert status == 400 and isinstance(error, dict) and error["param"] == "lora_name", (status, error)
    with OvserveClient(running.server.target) as client:
        assert BAD_NAMES[how] not in [model.id for model in client.list_models()]


def test_a_fifo_config_is_refused_at_once_and_loads_go_on(running: RunningBridge, allowed: Path) -> None:
    """A FIFO as adapter_config.json: opening it for reading would wait for a writer for ever (and, before, held
    the lock every later load and unload waited on). Refused from its file type, before it is opened."""
    fifo = write_adapter(allowed / "fifo", 1) / CONFIG
    fifo.unlink()
    os.mkfifo(fifo)
    write_adapter(allowed / "fine", 2)
    try:
        status, error = load(running, "fifo", "fifo")
        assert status == 400 and isinstance(error, dict) and error["param"] == "lora_path", error
        assert "not a regular file" in error["message"]
        assert load(running, "fine", "fine")[0] == 200 and unload(running, "fine") == 200
    finally:
        with suppress(OSError):  # (a reader still waiting on the FIFO gets its end of file)
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_a_stuck_read_holds_up_no_other_load_or_unload_and_times_out(
    running: RunningBridge, allowed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that never ends (a hung file system, say) runs outside the lock the changes take turns on: another
    load and an unload go through meanwhile, and the stuck load is refused once LOAD_TIMEOUT_SECONDS passed."""
    from ovserve.service.api import lora

    started, release = threading.Event(), threading.Event()
    real_read = lora.read_adapter

    def read(name: str, *args: Any) -> Any:
        if name == "stuck":
            started.set()
            release.wait()
        return real_read(name, *args)

    monkeypatch.setattr(lora, "read_adapter", read)
    write_adapter(allowed / "slow", 3)
    write_adapter(allowed / "quick", 4)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        try:
            stuck = pool.submit(load, running, "stuck", "slow")
            assert started.wait(120)
            assert load(running, "quick", "quick")[0] == 200 and unload(running, "quick") == 200
            assert not stuck.done()  # still reading, and nothing waited for it
            monkeypatch.setattr(lora, "LOAD_TIMEOUT_SECONDS", 0.0)  # the next stuck read is refused at once
            status, error = load(running, "stuck", "slow")
            assert status == 400 and isinstance(error, dict) and error["param"] == "lora_path", error
            assert "took longer than" in error["message"]
        finally:
            release.set()
        assert stuck.result()[0] == 200 and unload(running, "stuck") == 200  # the first read, released, loads


PROMPTS = ["Tell me a story.", "Once upon a time", "Write a poem about the sea.", "Hello! How are you?"]


def test_base_answers_are_unchanged_by_loaded_adapters_in_f32(running: RunningBridge, allowed: Path) -> None:
    """The docs' promise (docs/operations/lora.md), where the tests run (f32): the base model's long greedy answers
    (up to 256 tokens)
    the same before any adapter, with the bundled one and a random one loaded (each changing its own answers),
    and after they are unloaded."""
    assert TEST_SETTINGS.inference_precision == "f32"
    shutil.copytree(CAPITALS, allowed / "capitals", dirs_exist_ok=True)
    write_adapter(allowed / "random", 5)
    with OvserveClient(running.server.target) as client:

        def answers(model: str, max_tokens: int = 256) -> list[str]:
            return [
                str(client.chat(model, [{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=0)
                    .choices[0].message.content)
                for prompt in PROMPTS
            ]  # fmt: skip

        base = answers("tiny-chat")
        assert len("".join(base)) > 800  # long answers (one runs to max_tokens): room to diverge
        assert load(running, "capitals", "capitals")[0] == 200 and load(running, "random", "random")[0] == 200
        try:
            assert answers("tiny-chat") == base
            for adapter in ("capitals", "random"):
                assert answers(adapter, 16) != answers("tiny-chat", 16)  # each adapter applied to its own
            assert answers("tiny-chat") == base  # after switching back from the adapters
        finally:
            assert unload(running, "capitals") == 200 and unload(running, "random") == 200
        assert answers("tiny-chat") == base
