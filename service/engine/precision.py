"""The precision a generating model computes in when none is given: chosen by measurement, per CPU and weights.

OpenVINO computes in bf16 on a CPU with AMX or AVX-512 BF16 unless told, in f32 elsewhere. For a model whose
weights are compressed (int8 or int4: what ovserve converts to, and what a GGUF's quantised weights become), that
default reads prompts fast and writes answers slowly: in f32 the CPU plugin quantises each matmul's activations
to int8 (DYNAMIC_QUANTIZATION_GROUP_SIZE, 32 by default) and multiplies int8 by int8; in bf16 it does not.
Measured engine alone (benchmarks/precision_defaults.py; docs/benchmarks/engine-settings.md) on a 2-core Xeon
with AMX, Qwen2.5 shapes 0.5B, 1.5B and 3B, int8 and int4: f32 decodes 1.4-1.8x faster than bf16, and f32 with
that quantisation off decodes at bf16's speed (the cause); bf16 reads a prompt about twice as fast. A 128-token
prompt and its answer end 1.2-1.7x sooner in f32 on every shape, at one stream and at eight; a 2,048-token prompt
with a 16-token answer ends 1.5-1.9x sooner in bf16 (f32 wins until a request reads some 8-24 uncached prompt
tokens per answer token). Chat and agents' turns (prompts that prefix caching mostly spares) are the first kind,
so ``--optimize-for decode`` (the default) computes such models in f32 there; ``--optimize-for prefill`` keeps
OpenVINO's bf16 (long documents, short answers).
Uncompressed weights (fp16/bf16) and CPUs without bf16 keep OpenVINO's default.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ovserve.service.engine.cpu_features import cpu_flags

#: What --optimize-for takes: what the default precision favours.
OPTIMIZE_FOR = ("decode", "prefill")
#: CPU flags with which OpenVINO computes in bf16 by default.
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
#: Element types of compressed weights in an OpenVINO IR.
_COMPRESSED = frozenset({"u8", "i8", "u4", "i4", "nf4", "f4e2m1"})
_CONSTANT = re.compile(rb'<data element_type="(?P<type>\w+)" shape="[^"]*" offset="\d+" size="(?P<size>\d+)"')


@functools.cache
def weights_compressed(model_dir: Path) -> bool:
    """Whether most of the model's constant bytes (its weights) are 8- or 4-bit integers (openvino_model.xml, or
    the language model's IR of a vision model); False where no IR is found."""
    for name in ("openvino_model.xml", "openvino_language_model.xml"):
        path = model_dir / name
        if path.is_file():
            sizes: dict[bool, int] = {True: 0, False: 0}
            for match in _CONSTANT.finditer(path.read_bytes()):
                sizes[match["type"].decode() in _COMPRESSED] += int(match["size"])
            return sizes[True] > sizes[False]
    return False


def default_precision(
    device: str, model_dir: Path, optimize_for: str, flags: frozenset[str] | None = None
) -> str | None:
    """The inference precision for a model given none: f32 for compressed weights on a CPU that would compute in
    bf16, unless optimising for prefill; None (OpenVINO's default) otherwise. ``flags``: the CPU's (None: this
    machine's)."""
    known = cpu_flags() if flags is None else flags
    if device.upper() != "CPU" or not known or not known & BF16_FLAGS or optimize_for != "decode":
        return None
    return "f32" if weights_compressed(model_dir) else None
