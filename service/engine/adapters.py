"""LoRA adapters in PEFT's layout, read and checked against their base model before OpenVINO GenAI sees them.

OpenVINO GenAI (2026.4) applies an adapter's ``lora_A``/``lora_B`` pairs to the base model's matching layers, but
only warns about tensors that match no layer and checks shapes only when a step runs: an adapter for another base
model would load silently and do nothing, or fail every later step. So each adapter is checked here first, from
the safetensors header alone (no tensor is read): every tensor named as PEFT names them, each layer with both
matrices of one rank, the shapes those of the base model's layer (from its config.json), a float type, and no
DoRA. GenAI takes only the alpha it is given (not the file's): PEFT's scaling, ``lora_alpha / r`` (``/ sqrt(r)``
with rsLoRA), is read from ``adapter_config.json`` and passed along.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service import model_files

#: PEFT's tensor names: base_model.model.<module path>.lora_A|lora_B.weight.
_TENSOR = re.compile(r"base_model\.model\.(?P<module>.+)\.lora_(?P<matrix>[AB])\.weight")
_FLOATS = {"F32", "F16", "BF16"}
#: The header of a safetensors file is a little-endian u64 length, then that much JSON.
MAX_HEADER_BYTES = 16 * 1024 * 1024
#: The largest rank served (vLLM's --max-lora-rank default is 16; PEFT adapters seldom pass 256).
MAX_RANK = 256
ADAPTER_FILE = "adapter_model.safetensors"


class AdapterError(ValueError):
    """The adapter cannot be served on its base model; the message says why."""


@dataclass(frozen=True)
class LoraAdapter:
    """A checked adapter: its name, its safetensors file, the alpha GenAI applies, and its rank."""

    name: str
    path: Path  # the .safetensors file
    alpha: float
    rank: int


def read_adapter(name: str, source: Path, base_dir: Path) -> LoraAdapter:
    """The adapter at ``source`` (a PEFT directory, or its .safetensors file beside adapter_config.json), checked
    against the base model in ``base_dir``; AdapterError naming what is wrong."""
    directory, weights = (source, source / ADAPTER_FILE) if source.is_dir() else (source.parent, source)
    if not weights.is_file():
        raise AdapterError(f"adapter {name!r}: no {weights.name} at {directory}")
    config = _json(directory / "adapter_config.json", name)
    if config.get("use_dora"):
        raise AdapterError(f"adapter {name!r} is a DoRA adapter: OpenVINO GenAI applies LoRA only")
    shapes = _tensor_shapes(weights, name)
    depth = int(model_files.config(base_dir)["num_hidden_layers"])
    rank = _checked_rank(shapes, _layer_shapes(base_dir), depth, name)
    r = int(config.get("r") or rank)
    lora_alpha = float(config.get("lora_alpha") or r)
    scale = lora_alpha / (math.sqrt(r) if config.get("use_rslora") else r)
    return LoraAdapter(name, weights, scale, rank)


def _json(path: Path, name: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AdapterError(f"adapter {name!r}: no adapter_config.json beside its weights ({path.parent})") from None
    except (OSError, ValueError) as error:
        raise AdapterError(f"adapter {name!r}: adapter_config.json is not readable JSON: {error}") from None
    if not isinstance(data, dict):
        raise AdapterError(f"adapter {name!r}: adapter_config.json is not a JSON object")
    return data


def _tensor_shapes(weights: Path, name: str) -> dict[str, tuple[str, list[int]]]:
    """Each tensor's dtype and shape, from the safetensors header (a corrupt or truncated file is refused)."""
    try:
        with weights.open("rb") as file:
            (length,) = struct.unpack("<Q", file.read(8))
            if not 2 <= length <= MAX_HEADER_BYTES:
                raise ValueError(f"a header of {length} bytes")
            header = json.loads(file.read(length))
            size = weights.stat().st_size
        tensors = {key: value for key, value in header.items() if key != "__metadata__"}
        end = max((int(value["data_offsets"][1]) for value in tensors.values()), default=0)
        if 8 + length + end > size:
            raise ValueError("the file is shorter than its header says (truncated)")
        return {key: (str(value["dtype"]), [int(n) for n in value["shape"]]) for key, value in tensors.items()}
    except (OSError, ValueError, KeyError, TypeError, struct.error) as error:
        raise AdapterError(f"adapter {name!r}: {weights.name} is not a readable safetensors file: {error}") from None


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


def _checked_rank(
    shapes: dict[str, tuple[str, list[int]]], layers: dict[str, tuple[int, int]], depth: int, name: str
) -> int:
    """The adapter's rank, once every tensor is a known layer's A or B of the right shape and type."""
    pairs: dict[str, dict[str, list[int]]] = {}
    for tensor, (dtype, shape) in shapes.items():
        found = _TENSOR.fullmatch(tensor)
        if found is None:
            raise AdapterError(f"adapter {name!r}: tensor {tensor!r} is not a LoRA matrix in PEFT's naming")
        if dtype not in _FLOATS:
            raise AdapterError(f"adapter {name!r}: tensor {tensor!r} is {dtype}; LoRA matrices are F32, F16 or BF16")
        pairs.setdefault(found["module"], {})[found["matrix"]] = shape
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
