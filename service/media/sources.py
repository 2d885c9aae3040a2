"""A media reference (a ``data:`` URL, an ``http(s)`` URL, a ``file://`` URL, or raw bytes) -> its bytes (an
encoded image, a document), within the MediaPolicy: allowed hosts and directories, no private addresses unless
allowed, bounded size, time and redirects.

Fetching uses tornado's HTTP client (already the bridge's web framework) with a resolver that checks every host
it is asked for, so a redirect to a disallowed host or a name that resolves to a private address is refused at
connection time, hop by hop, not just for the first URL.
"""

from __future__ import annotations

import asyncio
import binascii
import ipaddress
import socket
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tornado import httpclient, netutil, simple_httpclient

from ovserve.service.media.policy import MediaPolicy


class MediaError(Exception):
    """An image reference that cannot be served; ``field`` names the request part."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class ImageSource:
    """One image of a request: where it sits in the request (``field``) and its URL or raw bytes."""

    field: str
    url: str = ""
    data: bytes = b""


async def image_bytes(source: ImageSource, policy: MediaPolicy) -> bytes:
    """The encoded image ``source`` refers to; MediaError naming ``source.field`` if it is not allowed or fails."""
    return await media_bytes(source, policy, limit=policy.max_image_bytes, media_prefix="image/")


async def media_bytes(source: ImageSource, policy: MediaPolicy, *, limit: int, media_prefix: str = "") -> bytes:
    """The bytes ``source`` refers to, at most ``limit`` of them; a data: URL's type must start with
    ``media_prefix``. MediaError naming ``source.field`` if it is not allowed or fails."""
    if source.data:
        if source.url:
            raise MediaError(source.field, "set either url or data, not both")
        return _bounded(source.field, source.data, limit)
    if not source.url:
        raise MediaError(source.field, "needs a url (data:, http(s): or file:) or raw bytes")
    scheme = source.url.split(":", 1)[0].lower() if ":" in source.url else ""
    if scheme == "data":
        # base64 of a large file takes milliseconds: off the event loop
        return await asyncio.to_thread(_data_url, source.field, source.url, limit, media_prefix)
    if scheme in ("http", "https"):
        return _bounded(source.field, await _fetch(source.field, source.url, policy, limit), limit)
    if scheme == "file":
        return await asyncio.to_thread(_local_file, source.field, source.url, policy, limit)
    raise MediaError(source.field, f"unsupported URL scheme {scheme!r}; expected data:, http(s): or file:")


def _bounded(field: str, data: bytes, limit: int) -> bytes:
    if len(data) > limit:
        raise MediaError(field, f"{len(data)} bytes; at most {limit} allowed")
    return data


def _data_url(field: str, url: str, limit: int, media_prefix: str) -> bytes:
    header, comma, payload = url.partition(",")
    if not comma:
        raise MediaError(field, "a data: URL needs a comma before its data")
    media_type, *parameters = header[len("data:") :].split(";")
    if media_type and not media_type.lower().startswith(media_prefix):
        raise MediaError(field, f"a data: URL of type {media_type!r} is not {media_prefix.rstrip('/')} data")
    if "base64" not in (parameter.lower() for parameter in parameters):
        raise MediaError(field, "the data: URL must be base64 (data:TYPE;base64,...)")
    return decode_base64(field, payload, limit)


def decode_base64(field: str, payload: str, limit: int) -> bytes:
    """Strict base64 of at most ``limit`` bytes (refused by its length before anything is decoded)."""
    if len(payload) * 3 // 4 > limit:
        raise MediaError(field, f"over {limit} bytes")
    try:
        return _bounded(field, binascii.a2b_base64(payload.strip(), strict_mode=True), limit)
    except binascii.Error as error:
        raise MediaError(field, f"not valid base64: {error}") from error


def _local_file(field: str, url: str, policy: MediaPolicy, limit: int) -> bytes:
    root = policy.allowed_local_media_path
    if root is None:
        raise MediaError(field, "file: URLs are not accepted here (the server sets --allowed-local-media-path)")
    parsed = urllib.parse.urlparse(url)
    if parsed.netloc not in ("", "localhost"):
        raise MediaError(field, "a file: URL names a local path (file:///path)")
    path = Path(urllib.parse.unquote(parsed.path)).resolve()
    if not path.is_relative_to(root.resolve()):
        raise MediaError(field, "the file is outside the directory images may be read from")
    if not path.is_file():
        raise MediaError(field, "no such file")
    if path.stat().st_size > limit:
        raise MediaError(field, f"{path.stat().st_size} bytes; at most {limit} allowed")
    return path.read_bytes()


class _Refused(Exception):
    """A host or address the policy does not let a fetch reach."""


def _host_allowed(host: str, policy: MediaPolicy) -> bool:
    allowed = policy.allowed_media_domains
    return "*" in allowed or host.lower().rstrip(".") in (domain.lower().rstrip(".") for domain in allowed)


class _CheckedResolver(netutil.Resolver):
    """The default resolver, refusing hosts off the allow-list and (unless allowed) non-public addresses."""

    def initialize(self, policy: MediaPolicy) -> None:  # type: ignore[override]  # tornado's Configurable
        self.policy = policy
        self.inner = netutil.DefaultLoopResolver()

    async def resolve(  # type: ignore[override]
        self, host: str, port: int, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[tuple[int, Any]]:
        if not _host_allowed(host, self.policy):
            raise _Refused(f"host {host!r} is not among the hosts images may be fetched from")
        addresses = await self.inner.resolve(host, port, family)
        if not self.policy.allow_private_media_hosts:
            addresses = [entry for entry in addresses if ipaddress.ip_address(entry[1][0]).is_global]
            if not addresses:
                raise _Refused(f"host {host!r} resolves to private addresses only, which images may not come from")
        return addresses


async def _fetch(field: str, url: str, policy: MediaPolicy, limit: int) -> bytes:
    if not policy.allowed_media_domains:
        raise MediaError(field, "http(s) URLs are not accepted here; send a data: URL (or raw bytes over gRPC)")
    host = urllib.parse.urlparse(url).hostname or ""
    if not _host_allowed(host, policy):
        raise MediaError(field, f"host {host!r} is not among the hosts images may be fetched from")
    client = simple_httpclient.SimpleAsyncHTTPClient(
        force_instance=True,
        resolver=_CheckedResolver(policy=policy),
        max_body_size=limit,
        max_buffer_size=limit,
    )
    timeout = policy.media_fetch_timeout_seconds
    request = httpclient.HTTPRequest(
        url, follow_redirects=True, max_redirects=policy.max_media_redirects,
        connect_timeout=timeout, request_timeout=timeout, decompress_response=False,
    )  # fmt: skip
    try:
        reply = await asyncio.wait_for(client.fetch(request), timeout)  # all hops together
    except _Refused as error:
        raise MediaError(field, str(error)) from error
    except TimeoutError as error:
        raise MediaError(field, f"fetching it took more than {timeout:g} s") from error
    except httpclient.HTTPClientError as error:
        if error.code == 599 and "timeout" in str(error.message).lower():  # tornado's own time limit
            raise MediaError(field, f"fetching it took more than {timeout:g} s") from error
        if error.code == 599:  # tornado's code for a closed connection
            raise MediaError(field, f"fetching it failed: {error.message}") from error
        raise MediaError(field, f"fetching it failed: HTTP {error.code}") from error
    except (OSError, ValueError) as error:  # refused connection, bad URL, body over max_body_size
        raise MediaError(field, f"fetching it failed: {error}") from error
    finally:
        client.close()
    return bytes(reply.body)
