"""Which models stay in memory (issue 45): the settings of loads on request, idle unloads and the memory budget.

The policy itself runs in the server (service/server/model_keeper.py); a request's ``keep_alive`` is read by
clients/keep_alive.py (the REST bridge checks it too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ResidencySettings:
    """Which models are loaded when: on request, unloaded when idle or to make room (flags of their own)."""

    autoload: bool = field(
        default=True,
        metadata={
            "help": "do not load a model on request: a request naming a known model that is not loaded (one "
            "declared --load-on-request, unloaded when idle or by an admin, or evicted) gets 503 until an admin "
            "loads it (by default it loads it and waits, as llama.cpp's router and Ollama do)",
            "flag": "no-autoload",
        },
    )
    models_dir: Path | None = field(
        default=None,
        metadata={
            "help": "offer every model in DIR by its name, each loaded on its first request: an OpenVINO or Hugging "
            "Face model directory (its directory's name) or a .gguf file (its name without .gguf)",
            "metavar": "DIR",
            "default_text": "none",
        },
    )
    max_loaded_models: int | None = field(
        default=None,
        metadata={
            "help": "models loaded at once; loading one more first unloads the least recently used idle model "
            "(no request running or queued), or waits for one to become idle",
            "metavar": "N",
            "default_text": "no bound",
        },
    )
    models_memory_gb: float | None = field(
        default=None,
        metadata={
            "help": "memory the loaded models' processes may hold together (their resident size; a model not "
            "loaded yet is counted by its weights' files and KV cache size, or by what it held when last "
            "loaded); loading past it unloads the least recently used idle models first",
            "metavar": "GB",
            "default_text": "no bound",
        },
    )
    model_load_wait_s: float = field(
        default=300.0,
        metadata={
            "help": "how long a request waits for its model to load (and for room to be made for it) before 503; "
            "the load goes on",
            "metavar": "SECONDS",
        },
    )

    def problems(self) -> list[str]:
        """What is wrong with these settings (empty when they can be served)."""
        problems = []
        if self.max_loaded_models is not None and self.max_loaded_models < 1:
            problems.append(f"--max-loaded-models must be 1 or more; got {self.max_loaded_models}")
        if self.models_memory_gb is not None and not 0 < self.models_memory_gb < math.inf:
            problems.append(f"--models-memory-gb must be more than 0; got {self.models_memory_gb}")
        if not 0 < self.model_load_wait_s < math.inf:
            problems.append(f"--model-load-wait-s must be more than 0; got {self.model_load_wait_s}")
        if self.models_dir is not None and not self.models_dir.is_dir():
            problems.append(f"--models-dir {self.models_dir}: not a directory")
        return problems

    @property
    def budget_bytes(self) -> float:
        """The memory budget in bytes (infinite without one)."""
        return math.inf if self.models_memory_gb is None else self.models_memory_gb * 2**30
