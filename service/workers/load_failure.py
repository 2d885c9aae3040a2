"""Why a model's process failed to load, in words a person can act on.

A process that dies while OpenVINO compiles its model (a signal from a plugin bug, the kernel's OOM killer) says
nothing on its pipe: the server reads only that the pipe closed. Its exit status names the signal, and the
settings that decide how OpenVINO compiles (device, precision, threads) are what a person changes to get past
it (issue 45: SIGFPE compiling in bf16 on one inference thread on an AMX CPU was reported as "ended while
loading ()").
"""

from __future__ import annotations

import signal
import subprocess
from typing import Protocol

# How long a process whose pipe closed gets to end before it is taken for alive (its exit status unknown).
EXIT_WAIT_S = 5.0
# The device properties that decide how a model is compiled, as a load failure names them (by OpenVINO's name),
# and how each reads when it is not given.
COMPILE_SETTINGS = {
    "INFERENCE_PRECISION_HINT": (
        "precision",
        "unset (OpenVINO's default: bf16 on CPUs with AMX or AVX-512 BF16, else f32)",
    ),
    "INFERENCE_NUM_THREADS": ("inference threads", "unset (OpenVINO's default: one per core)"),
}


class LoadSpec(Protocol):
    """What a worker process loads, as far as a load failure names it (a WorkerSpec, a PipelineSpec)."""

    @property
    def device(self) -> str:
        """The OpenVINO device."""

    @property
    def properties(self) -> dict[str, object]:
        """The device properties given (those not given are OpenVINO's defaults)."""


def how_it_ended(process: subprocess.Popen[bytes], wait_s: float = EXIT_WAIT_S) -> str:
    """How a process whose pipe closed ended: killed by a signal (named), its exit status, or still running."""
    try:
        status = process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        return "closed its pipe without ending"
    if status < 0:
        number = -status
        try:
            return f"was killed by {signal.Signals(number).name} ({signal.strsignal(number)})"
        except ValueError:  # a real-time signal has no name of its own
            return f"was killed by signal {number}"
    return f"exited with status {status}"  # a Python error's traceback went to the server's log (stderr)


def compile_settings(spec: LoadSpec) -> str:
    """The settings a load failure names, "settings: device CPU; precision bf16; ...": the device, the precision
    and threads (given or unset), then any other device property given."""
    properties = dict(spec.properties)
    named = [f"device {spec.device}"]
    for name, (label, default) in COMPILE_SETTINGS.items():
        named.append(f"{label} {properties.pop(name)}" if name in properties else f"{label} {default}")
    named += [f"{name} {value}" for name, value in sorted(properties.items())]
    return "settings: " + "; ".join(named)
