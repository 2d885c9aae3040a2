"""LoRA adapters in PEFT's layout, read and checked against their base model before OpenVINO GenAI sees them.

OpenVINO GenAI (2026.4) applies an adapter's ``lora_A``/``lora_B`` pairs to the base model's matching layers, but
only warns about tensors that match no layer and checks shapes only when a step runs: an adapter for another base
model would load silently and do nothing, or fail every later step. So each adapter is checked here first: every
tensor named as PEFT names them, each layer with both matrices of one rank, the shapes those of the base model's
layer (from its config.json), a float type, no DoRA, the safetensors header's offsets those of the tensors' types
and shapes, laid end to end over the whole file, and every weight finite. GenAI takes only the alpha it is given
(not the file's): PEFT's scaling, ``lora_alpha / r`` (``/ sqrt(r)`` with rsLoRA), is read from
``adapter_config.json`` and passed along.

Adapters loaded at run time come from a directory the server was given (``root``): every file is read only where
its path resolves under it (symlinks included), and only a regular file (a FIFO or a device would block the read),
opened without blocking and of a bounded size.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ovserve.clients.defaults import MIB
from ovserve.service import model_files

#: PEFT's tensor names: base_model.model.<module path>.lora_A|lora_B.weight.
_TENSOR = re.compile(r"base_model\.model\.(?P<module>.+)\.lora_(?P<matrix>[AB])\.weight")
#: The float types served: each one's bytes per item, and the unsigned view and exponent mask that find NaN/Inf.
_FLOATS: dict[str, tuple[int, np.dtype[Any], int]] = {
    "F32": (4, np.dtype("<u4"), 0x7F800000),
    "F16": (2, np.dtype("<u2"), 0x7C00),
    "BF16": (2, np.dtype("<u2"), 0x7F80),
}
#: The header of a safetensors file is a little-endian u64 length, then that much JSON.
MAX_HEADER_BYTES = 16 * MIB
#: adapter_config.json is a few hundred bytes; PEFT's largest fields (target module lists) stay far below this.
MAX_CONFIG_BYTES = MIB
#: Nesting deeper than PEFT's files have (a safetensors header is 3 deep, adapter_config.json at most 4).
MAX_JSON_DEPTH = 16
#: The largest rank served (vLLM's --max-lora-rank default is 16; PEFT adapters seldom pass 256).
MAX_RANK = 256
#: The scaling (``lora_alpha / r``) served: above any PEFT practice (16 / 8 = 2 is usual), and at least float32's
#: smallest normal number (GenAI takes alpha as a float32).
SCALE_RANGE = (float(np.finfo(np.float32).tiny), 1024.0)
#: How much of the tensor data is read at once when checking that every weight is finite.
_CHUNK_BYTES = 4 * 1024 * 1024
ADAPTER_FILE = "adapter_model.safetensors"
CONFIG_FILE = "adapter_config.json"


class AdapterError(ValueError):
    """The adapter cannot be served on its base model; the message says why, ``field`` what: ``lora_path`` for
    a path or a file, else the adapter_config.json field."""

    def __init__(self, message: str, field: str = "lora_path") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class LoraAdapter:
    """A checked adapter: its name, its safetensors file, the alpha GenAI applies, and its rank."""

    name: str
    path: Path  # the .safetensors file
    alpha: float
    rank: int


@dataclass(frozen=True)
class _Tensor:
    """One tensor of a safetensors header: its name, dtype, shape and data offsets (from the end of the header)."""

    name: str
    dtype: str
    shape: list[int]
    begin: int
    end: int


def read_adapter(name: str, source: Path, base_dir: Path, root: Path | None = None) -> LoraAdapter:
    """The adapter at ``source`` (a PEFT directory, or its .safetensors file beside adapter_config.json), checked
    against the base model in ``base_dir``; AdapterError naming what is wrong. With ``root`` (a resolved
    directory), every file read must resolve under it."""
    try:
        directory, weights = (source, source / ADAPTER_FILE) if source.is_dir() else (source.parent, source)
    except (OSError, ValueError) as error:  # (a name too long, a NUL)
        raise AdapterError(f"adapter {name!r}: {source} cannot be read: {error}") from None
    config = _config(_located(directory / CONFIG_FILE, name, root), name)
    if config.get("use_dora"):
        raise AdapterError(f"adapter {name!r} is a DoRA adapter: OpenVINO GenAI applies LoRA only")
    weights = _located(weights, name, root)
    # (No size limit of its own: the header must describe every byte of the file, and the shapes it gives are
    # checked against the base model's, at most rank MAX_RANK, before any tensor data is read.)
    with _open_regular(weights, name, None) as file:
        tensors = _tensors(file, weights, name)
        depth = int(model_files.config(base_dir)["num_hidden_layers"])
        rank = _checked_rank(tensors, _layer_shapes(base_dir), depth, name)
        scale = _scale(config, rank, name)
        _check_finite(file, tensors, name)
    return LoraAdapter(name, weights, scale, rank)


def _located(path: Path, name: str, root: Path | None) -> Path:
    """``path`` with every symlink resolved, refused unless it is a file under ``root`` (when given)."""
    try:
        real = Path(os.path.realpath(path))
        present = os.path.exists(real)  # (False for a path too long too, where Path.exists raises)
    except (OSError, ValueError) as error:
        raise AdapterError(f"adapter {name!r}: {path.name} cannot be resolved: {error}") from None
    if root is not None and not real.is_relative_to(root):
        raise AdapterError(f"adapter {name!r}: {path.name} resolves outside the server's adapter directory")
    if not present:
        where = f" beside its weights ({path.parent})" if path.name == CONFIG_FILE else f" at {path.parent}"
        raise AdapterError(f"adapter {name!r}: no {path.name}{where}")
    return real


def _open_regular(path: Path, name: str, limit: int | None) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (of at most ``limit`` bytes): checked before opening
    (opening a FIFO waits for a writer) and after (the file may have been swapped), opened without blocking and
    without following a symlink put there meanwhile."""

    def check(info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise AdapterError(f"adapter {name!r}: {path.name} is not a regular file")
        if limit is not None and info.st_size > limit:
            raise AdapterError(f"adapter {name!r}: {path.name} holds {info.st_size} bytes; at most {limit} are read")

    try:
        check(os.stat(path))
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise AdapterError(f"adapter {name!r}: {path.name} cannot be opened: {error.strerror}") from None
    try:
        check(os.fstat(descriptor))
    except AdapterError:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def _json(data: bytes, what: str) -> Any:
    """``data`` parsed as JSON, its nesting bounded (the numbers read are checked where they are read)."""
    try:
        parsed = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply") from None
    except ValueError as error:  # (UnicodeDecodeError, JSONDecodeError, an integer of too many digits)
        raise ValueError(f"{what} is not JSON: {error}") from None
    if any(depth > MAX_JSON_DEPTH for _, depth in _walk(parsed)):
        raise ValueError(f"{what} is nested deeper than {MAX_JSON_DEPTH}")
    return parsed


def _walk(value: Any) -> Iterator[tuple[Any, int]]:
    """Every value within ``value`` with its depth, without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        yield item, depth
        if depth > MAX_JSON_DEPTH:
            continue
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)


def _config(path: Path, name: str) -> dict[str, Any]:
    with _open_regular(path, name, MAX_CONFIG_BYTES) as file:
        try:
            data = _json(file.read(MAX_CONFIG_BYTES + 1), CONFIG_FILE)
        except OSError as error:
            raise AdapterError(f"adapter {name!r}: {CONFIG_FILE} cannot be read: {error.strerror}") from None
        except ValueError as error:
            raise AdapterError(f"adapter {name!r}: {error}") from None
    if not isinstance(data, dict):
        raise AdapterError(f"adapter {name!r}: {CONFIG_FILE} is not a JSON object")
    for field, kind in _CONFIG_TYPES.items():
        value = data.get(field)
        if value is not None and not (isinstance(value, kind) and (kind is bool or not isinstance(value, bool))):
            raise AdapterError(f"adapter {name!r}: {CONFIG_FILE}'s {field} is {value!r}; {_KIND_NAMES[kind]}", field)
    return data


#: The adapter_config.json fields read here, and the JSON type each must have when given (null: absent).
_CONFIG_TYPES: dict[str, type | tuple[type, ...]] = {
    "r": int,
    "lora_alpha": (int, float),
    "use_rslora": bool,
    "use_dora": bool,
}
_KIND_NAMES: dict[type | tuple[type, ...], str] = {int: "an integer", (int, float): "a number", bool: "true or false"}


def _scale(config: dict[str, Any], rank: int, name: str) -> float:
    """PEFT's scaling from adapter_config.json: ``lora_alpha / r`` (``/ sqrt(r)`` with rsLoRA), each checked."""
    r = rank if config.get("r") is None else config["r"]
    if r != rank:
        raise AdapterError(f"adapter {name!r}: {CONFIG_FILE}'s r is {r}; its matrices have rank {rank}", "r")
    lora_alpha = r if config.get("lora_alpha") is None else config["lora_alpha"]
    try:
        scale = lora_alpha / (math.sqrt(r) if config.get("use_rslora") else r)
    except OverflowError:  # (an integer past float's range)
        scale = math.inf
    low, high = SCALE_RANGE
    if not low <= scale <= high:  # (NaN, infinities and a negative alpha too)
        raise AdapterError(
            f"adapter {name!r}: {CONFIG_FILE}'s lora_alpha {lora_alpha} makes a scaling of {scale:g}; "
            f"from {low:g} to {high:g} is served",
            "lora_alpha",
        )
    return float(scale)


def _tensors(file: BinaryIO, weights: Path, name: str) -> list[_Tensor]:
    """The tensors of a safetensors file, from its header, in the order of their data; refused unless the header
    is well formed and the tensors' data lies end to end over the rest of the file, each of its type and shape."""
    size = os.fstat(file.fileno()).st_size
    try:
        head = file.read(8)
        if len(head) < 8:
            raise ValueError("shorter than a header (truncated)")
        (length,) = struct.unpack("<Q", head)
        if not 2 <= length <= min(MAX_HEADER_BYTES, size - 8):
            raise ValueError(f"a header of {length} bytes in a file of {size} (truncated?)")
        header = _json(file.read(length), "its header")
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        tensors = sorted(
            (_tensor(key, value) for key, value in header.items() if key != "__metadata__"),
            key=lambda tensor: (tensor.begin, tensor.end),
        )
        if not isinstance(header.get("__metadata__", {}), dict):
            raise ValueError("__metadata__ is not a JSON object")
        _check_offsets(tensors, size - 8 - length)
        return tensors
    except OSError as error:
        raise AdapterError(f"adapter {name!r}: {weights.name} cannot be read: {error.strerror}") from None
    except ValueError as error:
        raise AdapterError(f"adapter {name!r}: {weights.name} is not a readable safetensors file: {error}") from None


def _tensor(key: str, value: Any) -> _Tensor:
    """One header entry, its fields of the right JSON types and its dtype served."""
    if not isinstance(value, dict):
        raise ValueError(f"tensor {key!r} is not a JSON object")
    dtype, shape, offsets = value.get("dtype"), value.get("shape"), value.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in _FLOATS:  # (a list or an object is no key of _FLOATS at all)
        raise ValueError(f"tensor {key!r} is {dtype!r}; LoRA matrices are F32, F16 or BF16")
    if not isinstance(shape, list) or not all(_natural(n) for n in shape):
        raise ValueError(f"tensor {key!r}: its shape is not a list of sizes")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_natural(n) for n in offsets):
        raise ValueError(f"tensor {key!r}: its data_offsets are not [begin, end]")
    return _Tensor(key, dtype, shape, *offsets)


def _natural(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_offsets(tensors: list[_Tensor], data_bytes: int) -> None:
    """Each tensor's data as long as its type and shape say, the tensors end to end (no overlap, no gap, as
    safetensors writes them) over exactly the ``data_bytes`` after the header."""
    end = 0
    for tensor in tensors:
        expected = math.prod(tensor.shape) * _FLOATS[tensor.dtype][0]
        if tensor.end - tensor.begin != expected:
            raise ValueError(
                f"tensor {tensor.name!r}: data_offsets [{tensor.begin}, {tensor.end}] hold {tensor.end - tensor.begin}"
                f" bytes; a {tensor.dtype} tensor of shape {tensor.shape} takes {expected}"
            )
        if tensor.begin != end:
            raise ValueError(f"tensor {tensor.name!r}: its data begins at {tensor.begin}, not {end} (overlap or gap)")
        end = tensor.end
    if end != data_bytes:
        problem = "the file is shorter than its header says (truncated)" if end > data_bytes else "trailing bytes"
        raise ValueError(f"{problem}: the tensors hold {end} bytes of data, the file {data_bytes}")


def _check_finite(file: BinaryIO, tensors: list[_Tensor], name: str) -> None:
    """Every weight finite (a NaN or an infinity would spread through every later token): the data read in
    chunks, right after the header (``_tensors`` read it), tensor by tensor in order."""
    try:
        for tensor in tensors:
            itemsize, unsigned, exponent = _FLOATS[tensor.dtype]
            left = tensor.end - tensor.begin
            while left:
                chunk = file.read(min(left, _CHUNK_BYTES - _CHUNK_BYTES % itemsize))
                if not chunk or len(chunk) % itemsize:
                    raise AdapterError(f"adapter {name!r}: the file is shorter than its header says (truncated)")
                left -= len(chunk)
                if np.any((np.frombuffer(chunk, dtype=unsigned) & exponent) == exponent):
                    raise AdapterError(f"adapter {name!r}: tensor {tensor.name!r} holds NaN or infinite weights")
    except OSError as error:
        raise AdapterError(f"adapter {name!r}: the weights cannot be read: {error.strerror}") from None


def _layer_shapes(base_dir: Path) -> dict[str, tuple[int, int]]:
    """(in, out) features of each linear layer an adapter may target, by its name within a decoder layer."""
    config = model_files.config(base_dir)
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = int(config.get("head_dim") or hidden // heads)
    kv = int(config.get("num_key_value_heads") or heads) * head_dim
    inter = int(config["intermediate_size"])
    return {
        "self_attn.q_proj": (hidden, heads * head_dim),
        "self_attn.k_proj": (hidden, kv),
        "self_attn.v_proj": (hidden, kv),
        "self_attn.o_proj": (heads * head_dim, hidden),
        "mlp.gate_proj": (hidden, inter),
        "mlp.up_proj": (hidden, inter),
        "mlp.down_proj": (inter, hidden),
    }


def _checked_rank(tensors: list[_Tensor], layers: dict[str, tuple[int, int]], depth: int, name: str) -> int:
    """The adapter's rank, once every tensor is a known layer's A or B of the right shape."""
    pairs: dict[str, dict[str, list[int]]] = {}
    for tensor in tensors:
        found = _TENSOR.fullmatch(tensor.name)
        if found is None:
            raise AdapterError(f"adapter {name!r}: tensor {tensor.name!r} is not a LoRA matrix in PEFT's naming")
        pairs.setdefault(found["module"], {})[found["matrix"]] = tensor.shape
    if not pairs:
        raise AdapterError(f"adapter {name!r} holds no LoRA matrix")
    ranks = set()
    for module, matrices in pairs.items():
        layer = re.fullmatch(r"model\.layers\.(\d+)\.(.+)", module)
        if layer is None or layer[2] not in layers or int(layer[1]) >= depth:
            raise AdapterError(f"adapter {name!r}: {module!r} is not a linear layer of the base model")
        if set(matrices) != {"A", "B"}:
            raise AdapterError(f"adapter {name!r}: {module!r} has lora_{'A' if 'A' in matrices else 'B'} only")
        features_in, features_out = layers[layer[2]]
        a, b = matrices["A"], matrices["B"]
        if len(a) != 2 or len(b) != 2 or a[1] != features_in or b[0] != features_out or a[0] != b[1]:
            raise AdapterError(
                f"adapter {name!r}: {module!r} has lora_A {a} and lora_B {b}; the base model's layer takes "
                f"[rank, {features_in}] and [{features_out}, rank] (an adapter of another base model?)"
            )
        ranks.add(a[0])
    if len(ranks) != 1:
        raise AdapterError(f"adapter {name!r} mixes ranks {sorted(ranks)}; one rank per adapter is served")
    rank = ranks.pop()
    if not 0 < rank <= MAX_RANK:
        raise AdapterError(f"adapter {name!r} has rank {rank}; ranks from 1 to {MAX_RANK} are served")
    return rank
