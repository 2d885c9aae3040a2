"""What this machine's CPU can do, as far as the engine's defaults depend on it."""

from __future__ import annotations

import functools
import os
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


# OpenVINO 2026.4's CPU plugin dies of SIGFPE compiling a model in bf16 with one inference thread on a CPU with AMX
# (an Intel Xeon: `ov.Core().compile_model(tiny-chat, "CPU", {"INFERENCE_NUM_THREADS": 1})`, bf16 being the
# default there). A CPU with AVX-512 BF16 but no AMX (AMD EPYC Zen 4) compiles the same in bf16 on one thread.
AMX_BF16_FLAG = "amx_bf16"


def crash_free_precision(
    device: str, precision: str | None, threads: int | None, flags: frozenset[str] | None = None
) -> str | None:
    """The inference precision to compile with: ``precision``, unless the settings meet the SIGFPE above (CPU
    with AMX, bf16 given or OpenVINO's default there, one inference thread, or none given and one CPU to run on).

    Then f32 where the precision was left to OpenVINO: one thread is what was asked for (to leave cores to the
    server and the other models), and on an AMX CPU f32 decodes int8 models faster anyway (bf16 prefills faster:
    docs/benchmarks/engine-settings.md, "Precision on a CPU with AMX"). Where bf16 was asked for, ValueError saying
    why: both settings were
    chosen, and neither is ours to change. ``flags``: the CPU's (None: this machine's; unknown flags change
    nothing).
    """
    known = cpu_flags() if flags is None else flags
    if device.upper() != "CPU" or known is None or AMX_BF16_FLAG not in known:
        return precision
    if not (threads == 1 or (threads is None and len(os.sched_getaffinity(0)) == 1)):  # AMX: Linux's flags
        return precision
    if precision is None:
        return "f32"
    if precision == "bf16":
        raise ValueError(
            "bf16 on one inference thread crashes OpenVINO 2026.4 on this CPU (SIGFPE compiling the model on AMX); "
            "give --inference-threads 2 or more, or --inference-precision f32"
        )
    return precision
