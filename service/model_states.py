"""Where each model the server knows stands: available, loading, loaded, unloading or failed (issue 45).

The ModelRegistry holds one ModelStates: every model the configuration names (the file's, ``--model``'s, the
bundled ones) with its state and, when it is not loaded, why. Servicers, health, /metrics and /v1/loads read the
registry; only service/server/model_admin.py (and the start-up load) change a state.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ovserve.service.errors import Unavailable, quote


class ModelState(enum.Enum):
    """A known model's state; its value is what ListModels and GET /v3/models show (llama.cpp's words where it has
    one: loaded, loading)."""

    AVAILABLE = "available"  # known, no process: LoadModel loads it
    LOADING = "loading"
    LOADED = "loaded"  # serving
    UNLOADING = "unloading"  # refused to new requests; its running ones end, then its process
    FAILED = "failed"  # its last load failed (reason: the signal or exception, and its settings)


@dataclass(frozen=True)
class ModelStatus:
    """A model's state and, when it is not loaded, why (empty when nothing needs saying)."""

    state: ModelState
    reason: str = ""


# What a request naming a model in each state that is not LOADED is told, after "model 'x' is ...".
_REFUSALS = {
    ModelState.AVAILABLE: "not loaded (an admin's LoadModel, POST /v3/models/{name}/load, loads it)",
    ModelState.LOADING: "loading; retry shortly",
    ModelState.UNLOADING: "being unloaded",
    ModelState.FAILED: "not loaded: its last load failed",
}


class ModelStates:
    """The state of every model the server knows, by name, in configuration order."""

    def __init__(self) -> None:
        self._states: dict[str, ModelStatus] = {}
        self._tasks: dict[str, str] = {}  # what each serves ("generate", "embed"...), for the list while unloaded
        self._bases: dict[str, str] = {}  # a configured LoRA adapter's name -> the known model it runs on

    def know(self, names: Iterable[str], tasks: Mapping[str, str] | None = None) -> None:
        """Models the configuration names: AVAILABLE until a load starts (known ones keep their state); ``tasks``:
        what each serves, when known."""
        for name in names:
            self._states.setdefault(name, ModelStatus(ModelState.AVAILABLE))
        self._tasks.update(tasks or {})

    def know_adapters(self, base: str, adapters: Iterable[str]) -> None:
        """The LoRA adapters configured on the known model ``base`` (they are served while it is loaded)."""
        self._bases = {adapter: owner for adapter, owner in self._bases.items() if owner != base}
        self._bases.update(dict.fromkeys(adapters, base))

    def base(self, name: str) -> str | None:
        """The known model ``name`` runs on: itself, or a configured adapter's base; None if unknown."""
        return name if name in self._states else self._bases.get(name)

    def task(self, name: str) -> str:
        """What the known model ``name`` serves ("" when not known)."""
        return self._tasks.get(name, "")

    def set(self, name: str, state: ModelState, reason: str = "") -> None:
        """``name`` is in ``state`` now (a name not known before becomes known)."""
        self._states[name] = ModelStatus(state, reason)

    def forget(self, name: str) -> None:
        """``name`` is no longer known (a model a configuration reload removed)."""
        self._states.pop(name, None)
        self._tasks.pop(name, None)
        self.know_adapters(name, ())

    def get(self, name: str) -> ModelStatus | None:
        """The known model's status; None for a name the server does not know."""
        return self._states.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._states

    @property
    def names(self) -> list[str]:
        """Every known model's name, in configuration order."""
        return list(self._states)

    def refusal(self, name: str) -> Unavailable:
        """The error for a request naming the known model ``name`` (or an adapter on it) while it is not loaded.

        UNAVAILABLE (503), not NOT_FOUND: the model exists, and the same request succeeds once it is loaded; the
        message names the model and its state, and the ErrorInfo's reason MODEL_NOT_LOADED lets a program tell it
        from a server that is starting or stopping.
        """
        base = self.base(name) or name
        status = self._states[base]
        why = f" ({status.reason})" if status.reason else ""
        if base == name:
            subject = f"model {quote(name)}"
        else:
            subject = f"LoRA adapter {quote(name)} runs on model {quote(base)}, which"
        return Unavailable(
            f"{subject} is {_REFUSALS.get(status.state, status.state.value)}{why}",
            reason="MODEL_NOT_LOADED",
            param="model",
        )
