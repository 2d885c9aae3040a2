"""TLS on the gRPC port: server credentials from PEM files, with client certificates required when a CA is given.

The files are read and checked when the server is built (a key that does not match its certificate is one
clear error before anything listens), not when gRPC binds the port.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import grpc


class TlsError(ValueError):
    """A TLS file is missing, unreadable or does not fit (one line, naming the file)."""


def server_credentials(cert: Path | None, key: Path | None, client_ca: Path | None) -> grpc.ServerCredentials | None:
    """gRPC server credentials (mTLS when ``client_ca`` is set), or None when TLS is off (no cert and key)."""
    if cert is None and key is None:
        if client_ca is not None:
            raise TlsError("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if cert is None or key is None:
        raise TlsError("TLS needs both --tls-cert and --tls-key")
    check_pair(cert, key)
    chain, private = cert.read_bytes(), key.read_bytes()
    roots = _read(client_ca, "--tls-client-ca")
    return grpc.ssl_server_credentials(
        [(private, chain)], root_certificates=roots, require_client_auth=roots is not None
    )


def check_pair(cert: Path, key: Path) -> None:
    """The certificate and key can be read and belong together (TlsError otherwise)."""
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise TlsError(f"cannot use the TLS certificate {cert} with key {key}: {error}") from None


def _read(path: Path | None, flag: str) -> bytes | None:
    if path is None:
        return None
    try:
        ssl.create_default_context(cafile=str(path))
        return path.read_bytes()
    except (OSError, ssl.SSLError) as error:
        raise TlsError(f"cannot use {flag} {path}: {error}") from None
