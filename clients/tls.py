"""TLS from PEM files: channel credentials for a client (and the REST bridge) dialling an ovserve gRPC server.

``channel_credentials(ca=...)`` verifies the server against that CA (the system's roots when None);
``cert`` and ``key`` present a client certificate, for a server that requires one (mTLS).
"""

from __future__ import annotations

from pathlib import Path

import grpc


def channel_credentials(
    ca: str | Path | None = None, cert: str | Path | None = None, key: str | Path | None = None
) -> grpc.ChannelCredentials:
    """TLS credentials from PEM files (OSError if one cannot be read; ValueError for a cert without its key)."""
    if (cert is None) != (key is None):
        raise ValueError("a client certificate needs its key, and a key its certificate")
    return grpc.ssl_channel_credentials(
        root_certificates=_read(ca), private_key=_read(key), certificate_chain=_read(cert)
    )


def _read(path: str | Path | None) -> bytes | None:
    return None if path is None else Path(path).read_bytes()
