"""Cold starts (``ovserve bench --cold-starts ROUNDS``): how long the first request for a model that is not loaded
takes, beside a warm request, and how long LoadModel alone takes.

Each round, on each of ovserve's faces the bench drives (gRPC, REST): the model is unloaded through that face's
admin call (ModelService.UnloadModel, ``POST /v3/models/{id}/unload``); one request is sent, which loads it (the
server loads a model on request) and is timed whole: its time to first token and end-to-end latency are the cold
figures; a second request right after gives the warm ones, so each cold ÷ warm ratio is taken within its round
(the drift of a shared machine cancels, as in the bench's other ratios). Then the model is unloaded again and
LoadModel (``POST /v3/models/{id}/load``) is timed alone, no request: the load's own share of the cold figures.
The model is left loaded.

Off unless asked: an unload fails nothing (it drains), but every other client of the server waits for the loads
too, and with API keys only an admin key may unload: without one the bench stops in one line saying so, before
any load.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp
import grpc

from ovserve.clients import AsyncOvserveClient
from ovserve.service.bench.backends import Backend, http_session
from ovserve.service.bench.load import BenchRequest
from ovserve.service.bench.metrics import RequestResult
from ovserve.service.bench.urls import ApiBase, bearer

#: The longest an admin call may take (a real-size model compiles for a minute or more on a small CPU).
ADMIN_TIMEOUT_S = 900
#: Where the bench reads an admin key when ``--admin-key`` is not given.
ADMIN_KEY_ENV = "OVSERVE_ADMIN_KEY"
#: What a server answers a call whose key may not load or unload, on each face: no key, or a user's key.
KEY_REFUSALS = {grpc.StatusCode.UNAUTHENTICATED.name, grpc.StatusCode.PERMISSION_DENIED.name, "HTTP 401", "HTTP 403"}
#: The figures of one round, each from the cold or the warm request (or the admin load): name -> how to read it.
FIGURES: dict[str, Callable[[RequestResult, RequestResult, float], float]] = {
    "cold_ttft_ms": lambda cold, warm, load: cold.ttft * 1000,
    "warm_ttft_ms": lambda cold, warm, load: warm.ttft * 1000,
    "cold_e2e_ms": lambda cold, warm, load: cold.e2e * 1000,
    "warm_e2e_ms": lambda cold, warm, load: warm.e2e * 1000,
    "ttft_cold_over_warm": lambda cold, warm, load: cold.ttft / warm.ttft,
    "e2e_cold_over_warm": lambda cold, warm, load: cold.e2e / warm.e2e,
    "load_model_ms": lambda cold, warm, load: load * 1000,
}


class AdminRefused(Exception):
    """An admin call that failed; ``status`` is the gRPC code's name or ``HTTP <status>``."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class ColdStartsImpossible(SystemExit):
    """Cold starts cannot be measured on this server: the bench stops with this one line."""


class ModelAdmin(Protocol):
    """One face's admin calls."""

    async def unload(self, model: str) -> None:
        """Unload ``model`` (its running requests drain first); AdminRefused if the server refuses."""
        ...

    async def load(self, model: str) -> None:
        """Load ``model``, returning once it serves; AdminRefused if the server refuses or the load fails."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class GrpcAdmin:
    """ModelService.UnloadModel and LoadModel through the typed asyncio client."""

    def __init__(self, target: str, admin_key: str | None) -> None:
        self._client = AsyncOvserveClient(target, api_key=admin_key, timeout=ADMIN_TIMEOUT_S, retries=0)

    async def unload(self, model: str) -> None:
        """UnloadModel."""
        try:
            await self._client.unload_model(model)
        except grpc.aio.AioRpcError as error:
            raise AdminRefused(error.code().name, error.details() or "") from None

    async def load(self, model: str) -> None:
        """LoadModel, to its last event ("loaded")."""
        try:
            async for _ in self._client.load_model(model):
                pass
        except grpc.aio.AioRpcError as error:
            raise AdminRefused(error.code().name, error.details() or "") from None

    async def close(self) -> None:
        """Close the channel."""
        await self._client.close()


class HttpAdmin:
    """``POST /v3/models/{id}/unload`` and ``/load`` on ovserve's REST bridge."""

    def __init__(self, base: ApiBase, admin_key: str | None) -> None:
        self._models = base.route("/models")
        self._headers = bearer(admin_key)
        self._session: aiohttp.ClientSession | None = None

    async def unload(self, model: str) -> None:
        """POST .../unload."""
        await self._post(model, "unload")

    async def load(self, model: str) -> None:
        """POST .../load (answered once the model serves)."""
        await self._post(model, "load")

    async def _post(self, model: str, action: str) -> None:
        if self._session is None:
            self._session = http_session(1)
        url = f"{self._models}/{quote(model, safe='/')}/{action}"
        timeout = aiohttp.ClientTimeout(total=ADMIN_TIMEOUT_S)
        try:
            async with self._session.post(url, headers=self._headers, timeout=timeout) as response:
                if response.status >= 400:
                    raise AdminRefused(f"HTTP {response.status}", _error_message(await response.read()))
        except (aiohttp.ClientError, TimeoutError) as error:  # no answer: said in the same one line
            raise AdminRefused(type(error).__name__, str(error)) from None

    async def close(self) -> None:
        """Close the session."""
        if self._session is not None:
            await self._session.close()


@dataclass(frozen=True)
class Face:
    """A backend the bench streams through and the admin calls of the same face."""

    backend: Backend
    admin: ModelAdmin


async def measure(
    faces: Sequence[Face], model: str, rounds: int, requests: Callable[[int], list[BenchRequest]]
) -> dict[str, Any]:
    """``rounds`` cold starts of ``model`` on every face, faces in turn within a round; the report's
    ``cold_start``: each face's medians over rounds (ratios: the median of each round's) and every round's figures.

    ColdStartsImpossible (one line) when an admin call is refused or a request fails; the model is loaded again
    first when it can be.
    """
    per_round: dict[str, list[dict[str, float]]] = {face.backend.name: [] for face in faces}
    for _ in range(rounds):
        for face in faces:
            per_round[face.backend.name].append(await _one_round(face, model, requests))
    return {
        "model": model,
        "rounds": rounds,
        "by_backend": {
            name: {figure: statistics.median(found[figure] for found in measured) for figure in FIGURES}
            | {"per_round": measured}
            for name, measured in per_round.items()
        },
    }


async def _one_round(face: Face, model: str, requests: Callable[[int], list[BenchRequest]]) -> dict[str, float]:
    """Unload, a cold request, a warm one; unload again, then LoadModel timed alone."""
    name = face.backend.name
    await _admin(face, name, "unload", model)
    cold_request, warm_request = requests(2)  # fresh prompts: the warm one finds nothing of the cold one cached
    cold = await face.backend.stream(cold_request)
    warm = await face.backend.stream(warm_request) if cold.ok else cold
    for result, which in ((cold, "first (cold)"), (warm, "second (warm)")):
        if not result.ok:
            await _admin(face, name, "load", model)  # leave the model as it was found
            not_loaded = "not loaded" in (result.error or "")  # the server does not load models on request
            hint = " (a server started with --no-autoload does not load models on request)" if not_loaded else ""
            raise ColdStartsImpossible(
                f"ovserve bench: cannot measure cold starts: the {which} request for {model!r} over {name} "
                f"failed: {result.error}{hint}"
            )
    await _admin(face, name, "unload", model)
    started = time.perf_counter()
    await _admin(face, name, "load", model)
    load_s = time.perf_counter() - started
    return {figure: read(cold, warm, load_s) for figure, read in FIGURES.items()}


async def _admin(face: Face, name: str, action: str, model: str) -> None:
    """One admin call; ColdStartsImpossible naming what was refused, and why, if it fails."""
    try:
        await (face.admin.unload if action == "unload" else face.admin.load)(model)
    except AdminRefused as refused:
        key = refused.status in KEY_REFUSALS
        hint = f"; an admin key is needed (--admin-key or {ADMIN_KEY_ENV})" if key else ""
        raise ColdStartsImpossible(
            f"ovserve bench: cannot measure cold starts: the server refused to {action} {model!r} over {name} "
            f"({refused}){hint}"
        ) from None


def _error_message(body: bytes) -> str:
    """The message of an OpenAI error envelope, else the body's start."""
    try:
        return str(json.loads(body)["error"]["message"])[:300]
    except (ValueError, KeyError, TypeError):
        return body[:300].decode(errors="replace")
