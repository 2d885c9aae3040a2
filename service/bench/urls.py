"""Where an OpenAI-compatible server's routes are, from whatever base URL a user gives the bench.

``--url`` (and ``--peer``) may name the server (``127.0.0.1:8000``, ``http://host:8000``), its API base
(``http://host:8000/v3``, a peer's ``/v1``) or one of its routes (``.../v1/chat/completions``): every endpoint
is found from it the same way, so one URL serves chat, completions, embeddings, rerank and the model list. Before
any load, ``reachable`` asks the server for its models, so a wrong URL ends in one line naming it, not a traceback.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from tornado.httpclient import AsyncHTTPClient, HTTPClientError

# The API's own routes, as a URL may end with them (the longest first, so a route is never cut short).
_ROUTES = ("/chat/completions", "/completions", "/embeddings", "/rerank", "/models")
_VERSION = re.compile(r"/v\d+$")
ENDPOINT_PATHS = {
    "chat": "/chat/completions",
    "completions": "/completions",
    "embeddings": "/embeddings",
    "rerank": "/rerank",
}


class UnreachableServer(SystemExit):
    """A base URL with no OpenAI-compatible server behind it: the bench stops with this one line."""


@dataclass(frozen=True)
class ApiBase:
    """A server's API base: ``root`` (scheme, host, port) and ``prefix`` (``/v3``, ``/v1``)."""

    root: str
    prefix: str

    @classmethod
    def parse(cls, url: str, default_prefix: str = "/v3") -> ApiBase:
        """The API base ``url`` names; ``default_prefix`` when it names only the server."""
        base = url.strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            base = f"http://{base}"
        for route in _ROUTES:
            if base.endswith(route) and _VERSION.search(base.removesuffix(route)):
                base = base.removesuffix(route)
                break
        version = _VERSION.search(base)
        if version is None:
            return cls(base, default_prefix)
        return cls(base[: version.start()], version.group())

    @property
    def api(self) -> str:
        """``root`` + ``prefix``: where the routes hang."""
        return self.root + self.prefix

    def route(self, endpoint: str) -> str:
        """The URL of ``endpoint`` (chat, completions, embeddings, rerank) or of ``/models``."""
        return self.api + ENDPOINT_PATHS.get(endpoint, endpoint)

    @property
    def metrics(self) -> str:
        """``/metrics`` beside the API (``ovserve serve`` serves both on its HTTP port)."""
        return self.root + "/metrics"


def bearer(api_key: str | None) -> dict[str, str]:
    """The HTTP header carrying ``api_key`` (none without a key)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def first_model(base: ApiBase, api_key: str | None = None) -> str:
    """The first model the server lists; UnreachableServer (one line) if nothing OpenAI-compatible answers."""
    url = base.route("/models")
    client = AsyncHTTPClient(force_instance=True)
    try:
        reply = await client.fetch(url, request_timeout=30, headers=bearer(api_key))
        models = json.loads(reply.body)["data"]
        return str(models[0]["id"])
    except HTTPClientError as error:
        if error.code == 599:  # tornado's code for no answer at all (a timeout)
            raise UnreachableServer(f"ovserve bench: no answer from {url} ({error})") from None
        raise UnreachableServer(f"ovserve bench: {url} answered {error.code}: is the URL the server's?") from None
    except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
        reason = "no models listed" if isinstance(error, (KeyError, IndexError, TypeError)) else error
        raise UnreachableServer(f"ovserve bench: no OpenAI-compatible server at {url} ({reason})") from None
    finally:
        client.close()


async def first_grpc_model(target: str, api_key: str | None = None) -> str:
    """The first model an ovserve gRPC service lists; UnreachableServer (one line) if none answers at ``target``."""
    import grpc

    from ovserve.clients import AsyncOvserveClient

    try:
        async with AsyncOvserveClient(target, api_key=api_key, retries=0, timeout=30) as client:
            models = await client.list_models()
    except grpc.aio.AioRpcError as error:
        raise UnreachableServer(
            f"ovserve bench: no ovserve gRPC service at {target} ({error.code().name}: {error.details()})"
        ) from None
    if not models:
        raise UnreachableServer(f"ovserve bench: the gRPC service at {target} lists no models")
    return str(models[0].id)
