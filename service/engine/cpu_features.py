"""What this machine's CPU can do, as far as the engine's defaults depend on it."""

from __future__ import annotations

import functools
from pathlib import Path

# Instruction sets that multiply int8 by int8 in one instruction. Without one, OpenVINO's int8 matmuls run at
# float speed and a prompt token costs several times more (measured: ~10 ms a prompt token for a 0.5B model on
# 2 AVX2 cores), which sets how many prompt tokens a step can take before it stalls the running streams.
INT8_DOT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


@functools.cache
def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The CPU's feature flags (Linux's /proc/cpuinfo), or None where they cannot be read."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return None


def int8_dot_product(flags: frozenset[str] | None = None) -> bool | None:
    """Whether the CPU has an int8 dot-product instruction (VNNI or AMX); None if its flags are unknown."""
    known = cpu_flags() if flags is None else flags
    return None if known is None else bool(known & INT8_DOT_FLAGS)
