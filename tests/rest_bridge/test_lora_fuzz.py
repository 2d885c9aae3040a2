"""A standing fuzz suite for runtime LoRA loading: generated hostile ``POST /v1/load_lora_adapter`` and
``/v1/unload_lora_adapter`` requests against a server started with ``--allow-runtime-lora``.

From a seed, each load breaks a good PEFT adapter (tests/service/engine/test_lora.write_adapter) one way or
several, with the makers of tests/service/engine/test_lora_loading.py: ``lora_path`` as a string (a NUL, 4,096
characters, a 300-character name, paths outside the directory, symlinks out of it), ``adapter_config.json`` (r
and lora_alpha of other types, non-finite, tiny or huge; nesting; not JSON; a FIFO, a directory, a symlink out),
the safetensors file (its header's length, nesting and types; a tensor's dtype, shape and offsets; bytes cut or
added; NaN weights), the body itself (the HTTP fuzz's mutations), and unloads of odd names. Four clients at once,
as the other storms. Every answer below 500 in OpenAI's envelope, a 400 naming a field (the field broken, where
the generator knows it), no read running into the loader's time bound; afterwards no broken adapter is served,
and a good adapter still loads, answers and unloads.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ovserve.clients import OvserveClient
from ovserve.service.api import lora
from ovserve.service.models import ModelSpec
from tests import surface_inputs as inputs
from tests.conftest import FUZZ_REPORT, TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge
from tests.rest_bridge.test_http_fuzz import mutated_body
from tests.rest_bridge.test_surface_fuzz import Tally, http_storm
from tests.service.engine.test_lora import write_adapter
from tests.service.engine.test_lora_loading import (
    BAD_NAMES,
    CONFIG,
    WEIGHTS,
    _a_directory,
    _config,
    _first,
    _header,
    _offsets,
    _outside_link,
    _weights_with,
    load,
    unload,
)

SEED = 20261128
REQUESTS = 160
LOAD, UNLOAD = "/v1/load_lora_adapter", "/v1/unload_lora_adapter"
Change = Callable[[Path], None]  # breaks the adapter in a directory
# What a change does, the fields a 400 for it may name (empty: the adapter stays valid, a 200), and whether it
# replaces a file with another kind of file or none (applied after the changes that write into the files: writing
# into a FIFO would wait for a reader).
Mutation = tuple[str, Change, frozenset[str], bool]


@pytest.fixture(scope="module")
def allowed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("allowed")


@pytest.fixture(scope="module")
def running(allowed: Path) -> Iterator[RunningBridge]:
    """tiny-chat alone (a base model adapters apply to), adapters loadable from under ``allowed``."""
    with served_with_bridge(
        [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)], allow_runtime_lora=allowed
    ) as on:
        yield on


def _replaced(file: Path, make: Callable[[Path], Any]) -> None:
    """``file`` made again by ``make`` (a FIFO, a directory)."""
    file.unlink()
    make(file)


# ---- adapter_config.json: (value, refused) per field; a refused value's 400 names that field ----

CONFIG_VALUES: dict[str, list[tuple[str, bool]]] = {
    "r": [('"abc"', True), ("Infinity", True), ("-Infinity", True), ("NaN", True), ("1e-300", True), ("1e309", True),
          ("0", True), ("-1", True), (str(2**64), True), ("4.0", True), ("true", True), ("[]", True), ("{}", True),
          ("8", True), ("3", True), ("4", False), ("null", False)],
    "lora_alpha": [("NaN", True), ("Infinity", True), ("-Infinity", True), ("1e-300", True), ("1" + "0" * 400, True),
                   ("-4", True), ("0", True), ('"4"', True), ("true", True), ("[]", True), ("1e-50", True),
                   ("5000", True), ("4", False), ("0.5", False), ("16", False), ("null", False)],
    "use_rslora": [('"yes"', True), ("1", True), ("[]", True), ("{}", True), ("true", False), ("false", False)],
    "use_dora": [('"x"', True), ("0", True), ("false", False)],
}  # fmt: skip
# adapter_config.json that is no config at all: a 400 naming lora_path (label, change, replaces the file)
CONFIG_FILES: list[tuple[str, Change, bool]] = [
    ("not JSON", lambda d: _config(d, "{"), False),
    ("empty", lambda d: _config(d, ""), False),
    ("not UTF-8", lambda d: (d / CONFIG).write_bytes(b'{"r": "\xff"}') and None, False),
    ("a JSON list", lambda d: _config(d, "[4]"), False),
    ("a JSON number", lambda d: _config(d, "4"), False),
    ("null", lambda d: _config(d, "null"), False),
    ("nested 100,000 deep", lambda d: _config(d, "[" * 100_000 + "]" * 100_000), False),
    ("nested 17 deep", lambda d: _config(d, '{"r": 4, "x": ' + "[" * 16 + "]" * 16 + "}"), False),
    ("2 MiB", lambda d: _config(d, '{"r": 4' + " " * (2 * inputs.MIB) + "}"), False),
    ("DoRA", lambda d: _config(d, '{"r": 4, "use_dora": true}'), False),
    ("a FIFO", lambda d: _replaced(d / CONFIG, os.mkfifo), True),
    ("a directory", lambda d: _replaced(d / CONFIG, Path.mkdir), True),
    ("missing", lambda d: (d / CONFIG).unlink(), True),
    ("a symlink out of the directory", lambda d: _outside_link(d, CONFIG), True),
]


def _config_mutation(rng: random.Random) -> Mutation:
    """adapter_config.json with one to three fields given drawn values (a 400 names one of those refused), or
    not a config at all (a 400 naming lora_path)."""
    if rng.random() < 0.3:
        label, change, replaces = rng.choice(CONFIG_FILES)
        return f"adapter_config.json {label}", change, frozenset({"lora_path"}), replaces
    drawn = {name: rng.choice(CONFIG_VALUES[name]) for name in rng.sample(list(CONFIG_VALUES), rng.randint(1, 3))}
    drawn.setdefault("r", ("4", False))
    text = "{" + ", ".join(f'"{name}": {value}' for name, (value, _) in drawn.items()) + "}"
    fields = {name for name, (_, bad) in drawn.items() if bad}
    if drawn.get("use_dora", ("", False))[0] == "true":
        fields.add("lora_path")
    return f"adapter_config.json {text[:80]}", lambda d: _config(d, text), frozenset(fields), False


# ---- the safetensors file: its header and its data, each break a 400 naming lora_path ----

DTYPES: list[Any] = ["F64", "I32", "BOOL", "", "f32", 5, None, ["F32"]]
SHAPES: list[Any] = [[], [0], [-1, 4], [4], [4, 128, 1], "x", [1.5, 2], [2**40, 2**40], [4, 129], None]
OFFSETS: list[Any] = [[0, 8], [-1, 10], "0", [0], [5, 3], [0, 2**64], [1.5, 2.5], [0, 0], None, [2**63, 2**63 + 8]]


def _entry(key: str, values: list[Any]) -> Callable[[random.Random], Change]:
    """A change setting one tensor's ``key`` to a value drawn from ``values``."""
    return lambda rng: (lambda value: lambda d: _offsets(d, lambda h: _first(h).update({key: value})))(
        rng.choice(values)
    )


def _length(rng: random.Random) -> Change:
    """The header's length field rewritten (the header and data kept)."""
    value = rng.choice([0, 1, 2**64 - 1, 2**63, 17 * inputs.MIB, rng.randrange(2, 4000)])

    def change(directory: Path) -> None:
        data = bytearray((directory / WEIGHTS).read_bytes())
        data[:8] = struct.pack("<Q", value)
        (directory / WEIGHTS).write_bytes(bytes(data))

    return change


def _cut(rng: random.Random) -> Change:
    """The file cut by 1-2,000 bytes (into the header too), or 1-64 bytes appended."""
    cut, extra = rng.randint(1, 2000), b"\0" * rng.randint(1, 64)
    padded = rng.random() < 0.3

    def change(directory: Path) -> None:
        data = (directory / WEIGHTS).read_bytes()
        (directory / WEIGHTS).write_bytes(data + extra if padded else data[:-cut])

    return change


def _not_an_object(rng: random.Random) -> Change:
    """A tensor's entry another JSON type."""
    value = rng.choice([[1], 5, "x", None])
    return lambda d: _offsets(d, lambda h: h.update({next(k for k in h if k != "__metadata__"): value}))


HEADERS: list[tuple[str, Callable[[random.Random], Change]]] = [
    ("the header's length", _length),
    ("a tensor's dtype", _entry("dtype", DTYPES)),
    ("a tensor's shape", _entry("shape", SHAPES)),
    ("a tensor's data_offsets", _entry("data_offsets", OFFSETS)),
    ("a tensor not a JSON object", _not_an_object),
    ("a header of another JSON", lambda rng: (lambda text: lambda d: _header(d, text))(rng.choice([
        b"[1, 2]", b"5", b"null", b"{}", b'{"__metadata__": 5}', b"[" * 100_000 + b"]" * 100_000,
        b'{"a": ' * 40 + b"1" + b"}" * 40, b"\xff\xfe", b"{" * 10]))),
    ("a tensor renamed", lambda rng: lambda d: _offsets(d, lambda h: h.update(
        {rng.choice(["x", "base_model.model.lm_head.lora_A.weight", "model.layers.0.q.lora_A.weight",
                     "base_model.model.model.layers.99.self_attn.q_proj.lora_A.weight"]):
         h.pop(next(k for k in h if k != "__metadata__"))}))),
    ("a tensor dropped", lambda rng: lambda d: _offsets(d, lambda h: h.pop(max(k for k in h if k != "__metadata__")))),
    ("cut or padded", _cut),
    ("a NaN weight", lambda rng: lambda d: _weights_with(d, rng.choice([np.nan, np.inf, -np.inf]))),
    ("an infinite F16 weight", lambda rng: lambda d: _weights_with(d, np.inf, np.float16)),
]  # fmt: skip
WEIGHT_FILES: list[tuple[str, Change]] = [  # the weights replaced by another kind of file, or none
    ("weights a directory", _a_directory),
    ("weights a FIFO", lambda d: _replaced(d / WEIGHTS, os.mkfifo)),
    ("weights a symlink out of the directory", lambda d: _outside_link(d, WEIGHTS)),
    ("weights missing", lambda d: (d / WEIGHTS).unlink()),
]


def _weights_mutation(rng: random.Random) -> Mutation:
    """The safetensors file broken in its header or data, or replaced (a 400 naming lora_path)."""
    if rng.random() < 0.25:
        label, change = rng.choice(WEIGHT_FILES)
        return label, change, frozenset({"lora_path"}), True
    label, make = rng.choice(HEADERS)
    return label, make(rng), frozenset({"lora_path"}), False


# ---- lora_path as sent ----


def _path(rng: random.Random, allowed: Path) -> tuple[str, Any, frozenset[str]]:
    """A lora_path naming the good adapter in a hostile way (label, value, fields of its 400; empty: it loads)."""
    good = "good"
    at = rng.randint(0, len(good))
    outside = rng.choice(["/", "/etc", "/proc/self", "/dev/zero", "/dev/stdin", "..", "../..", "good/../..",
                          str(allowed.parent), "/tmp", "~nobody-here/x", "nope", "good/nope"])  # fmt: skip
    made: list[tuple[str, Any, frozenset[str]]] = [
        ("a NUL", good[:at] + "\x00" + good[at:], frozenset({"lora_path"})),
        ("past 4,096 bytes", "a/" * rng.randint(2049, 4000), frozenset({"lora_path"})),
        ("a name past 255 bytes", "a" * rng.randint(256, 4000), frozenset({"lora_path"})),
        ("multibyte past 4,096 bytes", "\u00e9" * 2100, frozenset({"lora_path"})),
        ("not under the directory", outside, frozenset({"lora_path"})),
        ("empty", "", frozenset({"lora_path"})),
        ("another JSON type", rng.choice([5, [], {}, True, ["good"]]), frozenset({"lora_path"})),
        ("a symlink out of the directory", "escape", frozenset({"lora_path"})),
        (
            "the same directory, spelled otherwise",
            rng.choice(["./good", "good/", "good//", str(allowed / good), "good/../good"]),
            frozenset(),
        ),
    ]
    return made[rng.randrange(len(made))] if rng.random() < 0.9 else made[-1]


def load_case(rng: random.Random, index: int, allowed: Path) -> inputs.HttpCase:
    """The storm's ``index``-th request: a load of a broken adapter (files, config or lora_path), a body broken as
    JSON, a bad name, or an unload of an odd name."""
    name = f"fuzz-{index}"
    roll = rng.random()
    if roll < 0.05:
        body: Any = {"lora_name": rng.choice(["nope", "", "tiny-chat", "\x00", "n" * 100_000, 5, None])}
        return inputs.json_case("lora", f"unload {str(body['lora_name'])[:20]!r}", UNLOAD, body)
    if roll < 0.15:
        raw, parsed = mutated_body({"lora_name": name, "lora_path": "good", "load_inplace": False}, rng)
        return inputs.HttpCase("lora", "generic mutation", "POST", LOAD, raw, inputs.JSON_TYPE, parsed)
    if roll < 0.2:
        label, bad = rng.choice(list(BAD_NAMES.items()))
        return inputs.json_case("lora", f"lora_name {label}", LOAD, {"lora_name": bad, "lora_path": "good"},
                                inputs.refused("lora_name"))  # fmt: skip
    if roll < 0.4:
        label, path, fields = _path(rng, allowed)
        expect = inputs.refused(*fields) if fields else inputs.OK
        return inputs.json_case("lora", f"lora_path {label}", LOAD, {"lora_name": name, "lora_path": path}, expect)
    directory = write_adapter(allowed / name / "adapter", index)
    mutations = [_config_mutation(rng) if rng.random() < 0.5 else _weights_mutation(rng)
                 for _ in range(rng.choice([1, 1, 1, 2, 3]))]  # fmt: skip
    for _, change, _, _ in sorted(mutations, key=lambda mutation: mutation[3]):  # the replacing ones last
        # A change that cannot apply to what an earlier one left (a header no longer JSON or no longer an object, a
        # file gone) is left out: the adapter is broken already.
        with suppress(Exception):
            change(directory)
    fields = frozenset().union(*(fields for _, _, fields, _ in mutations))
    expect = inputs.refused(*fields) if fields else inputs.OK if len(mutations) == 1 else None
    label = " + ".join(label for label, _, _, _ in mutations)
    body = {"lora_name": name, "lora_path": f"{name}/adapter", **({"load_inplace": True} if rng.random() < 0.1 else {})}
    return inputs.json_case("lora", label, LOAD, body, expect)


def lora_cases(rng: random.Random, allowed: Path) -> Iterator[inputs.HttpCase]:
    """REQUESTS cases in the seed's order, each adapter written as its case is made."""
    for index in range(REQUESTS):
        yield load_case(rng, index, allowed)


def served_adapters(running: RunningBridge) -> list[str]:
    with OvserveClient(running.server.target) as client:
        return [model.id for model in client.list_models() if model.id != "tiny-chat"]


def test_lora_fuzz(running: RunningBridge, allowed: Path) -> None:
    write_adapter(allowed / "good", 1)
    write_adapter(allowed.parent / f"outside-{allowed.name}", 2)
    (allowed / "escape").symlink_to(allowed.parent / f"outside-{allowed.name}")
    tally = Tally()
    fifos: list[Path] = []
    try:
        http_storm(running.port, lora_cases(random.Random(SEED), allowed), tally)
    finally:
        fifos = [path for path in allowed.rglob("*") if path.is_fifo()]
        for fifo in fifos:  # a reader still waiting on one gets its end of file
            with suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    loaded = served_adapters(running)  # the valid ones (spelled otherwise, mutations that stayed valid)
    FUZZ_REPORT.append(
        f"LoRA fuzz: {sum(tally.tried.values())} requests; statuses {dict(sorted(tally.statuses.items()))}; answers "
        f"known beforehand {dict(tally.expected)}; slowest {tally.slowest.get('lora', 0):.2f} s; adapters loaded "
        f"{len(loaded)}; FIFOs {len(fifos)}; faults {len(tally.faults)}"
    )
    assert not tally.faults, "\n".join(tally.faults)
    for name in loaded:
        assert unload(running, name) == 200, name
    assert sum(tally.tried.values()) == REQUESTS, tally.tried
    # No read ran into the loader's bound (a FIFO opened, a file read for ever): each was refused from what it is.
    assert tally.slowest["lora"] < lora.LOAD_TIMEOUT_SECONDS, tally.slowest
    assert tally.statuses[200] > 0 and tally.statuses[400] > 0 and fifos  # the storm reached both sides, and FIFOs
    # A good adapter still loads, answers and unloads.
    shutil.copytree(allowed / "good", allowed / "after")
    assert load(running, "after", "after")[0] == 200
    chat = {"model": "after", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    reply = http_request(running.port, "POST", "/v3/chat/completions", chat)
    assert reply.status == 200, reply.body
    assert unload(running, "after") == 200 and served_adapters(running) == []


def test_the_lora_inputs_are_deterministic(tmp_path: Path) -> None:
    """The same seed, the same requests and files; and the storm reaches many kinds of breakage."""

    def made(root: Path) -> tuple[list[str], dict[str, bytes]]:
        labels = [case.label for case in lora_cases(random.Random(5), root)]
        files = {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()}
        return labels, files

    first, again = made(tmp_path / "a"), made(tmp_path / "b")
    assert first == again and len(set(first[0])) > 30 and first[1]


# ---- faults the storm found, one regression case each ----


@pytest.mark.parametrize("dtype", [["F32"], {"F32": 1}], ids=["list", "object"])
def test_a_dtype_of_another_json_type_is_a_400(running: RunningBridge, allowed: Path, dtype: Any) -> None:
    """A tensor whose dtype is a JSON list or object: a 500 before (TypeError: unhashable type, looking it up
    among the served types), now a 400 naming lora_path."""
    name = f"dtype-{type(dtype).__name__}"
    _offsets(write_adapter(allowed / name, 1), lambda header: _first(header).update(dtype=dtype))
    status, error = load(running, name, name)
    assert status == 400 and isinstance(error, dict) and error["param"] == "lora_path", (status, error)
