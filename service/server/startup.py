"""What can stop ``ovserve serve`` before it serves, as one line each: taken ports, an unusable store.

Checked in the order that costs least: the response store and the ports come
before any model loads, so a mistake costs no minutes of loading, and the
message names the cause (``cannot listen on 127.0.0.1:8000 (REST): address
already in use``) instead of a traceback after a misleading "listening" line.
"""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ovserve.service.store.database import StoreSchemaError

T = TypeVar("T")


class StartupError(Exception):
    """Serving cannot start; the message is one line for the operator."""


def listen_failure(host: str, port: int, what: str, error: OSError) -> StartupError:
    """The one-line error for a port that cannot be bound."""
    reason = os.strerror(error.errno).lower() if error.errno else str(error)
    return StartupError(f"cannot listen on {host}:{port} ({what}): {reason}")


def check_port_free(host: str, port: int, what: str) -> None:
    """Raise StartupError if ``host:port`` cannot be bound now (port 0 is always free).

    For servers that only report a taken port after they have started other
    things (grpc.aio logs its own lines, then raises): the same bind, tried first.
    """
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: TIME_WAIT is no conflict
        try:
            probe.bind((host.strip("[]") or "0.0.0.0", port))
        except OSError as error:
            if error.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
                raise listen_failure(host, port, what, error) from None
            raise


def opening_store(path: str | Path | None, open_store: Callable[[], T]) -> T:
    """``open_store()``, with a store file that cannot be used turned into one StartupError line."""
    try:
        return open_store()
    except (sqlite3.Error, StoreSchemaError, OSError) as error:
        raise StartupError(f"cannot use the response store {path}: {error}") from None
