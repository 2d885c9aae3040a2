"""The composition root: ``ovserve serve`` and ``ovserve bridge`` put the gRPC server and the REST bridge together.

This is the only module that imports both ``service`` and ``rest_bridge``
(``tests/test_layers.py`` checks it): the bridge never imports the service,
it reaches it over gRPC, so it runs the same in front of a local or a remote
server. ``ovserve.service.cli`` parses the subcommand and hands over to ``serve_main``
or ``bridge_main`` here.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

import grpc

from ovserve.clients.defaults import MESSAGE_SIZE_OPTIONS
from ovserve.clients.flags import add_flags, with_default
from ovserve.clients.tls import channel_credentials
from ovserve.rest_bridge import config as bridge_config
from ovserve.rest_bridge.batch_lines import BatchLines
from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.server import Bridge, serve_bridge
from ovserve.service.observability import logs, tracing
from ovserve.service.server import startup
from ovserve.service.server.tls import TlsError
from ovserve.service.sources import SourceError
from ovserve.service.workers.errors import EngineError

if TYPE_CHECKING:
    from ovserve.service.config import ServeConfig
    from ovserve.service.server.grpc_server import Server

LOG_LEVEL_HELP = with_default(
    "DEBUG, INFO, WARNING or ERROR: one line per event, each with request_id= (from x-request-id metadata, or "
    "generated), and one rpc=... status=... ms=... line per call",
    "INFO",
)


def serve_parser() -> argparse.ArgumentParser:
    """The options of ``ovserve serve``: the server's, the bridge's (prefixed ``--rest-``) and the log level."""
    # Imported here, not at the top: ovserve.service.config loads OpenVINO, which ``ovserve bridge`` never needs.
    from ovserve.service import config

    parser = argparse.ArgumentParser(
        prog="ovserve serve", description="Serve models over gRPC, and over OpenAI-compatible REST."
    )
    config.add_arguments(parser)
    rest = parser.add_argument_group("REST bridge (OpenAI JSON and SSE on /v3 and /v1)")
    rest.add_argument("--no-rest", action="store_true", help="serve gRPC only, without the REST bridge")
    add_flags(rest, bridge_config.BridgeAddress, prefix="rest-", only=("host", "port"))
    bridge_config.add_arguments(rest, prefix="rest-")
    parser.add_argument("--log-level", default="INFO", metavar="LEVEL", help=LOG_LEVEL_HELP)
    return parser


def serve_main(argv: Sequence[str]) -> int:
    """``ovserve serve``: the gRPC server and, unless --no-rest, the REST bridge, until SIGINT or SIGTERM."""
    from ovserve.service import config

    parser = serve_parser()
    args = parser.parse_args(argv)
    logs.configure(args.log_level)
    tracing.configure()
    try:
        serve_config = config.from_arguments(args)
    except SourceError as error:  # one line, before anything listens
        print(f"ovserve serve: {error}", file=sys.stderr)
        return 1
    except (config.ConfigError, OSError) as error:
        parser.error(str(error))
    bridge = None
    if not args.no_rest:
        address = bridge_config.address_from_arguments(args, "rest-")
        bridge = (address.host, address.port, bridge_config.from_arguments(args, "rest-"))
    try:
        asyncio.run(serve_with_bridge(serve_config, bridge, args))
    except (startup.StartupError, EngineError) as error:  # EngineError: a model failed to load (its cause named)
        print(f"ovserve serve: {error}", file=sys.stderr)
        return 1
    return 0


async def serve_with_bridge(
    serve_config: ServeConfig,
    bridge: tuple[str, int, bridge_config.BridgeSettings] | None,
    arguments: argparse.Namespace | None = None,
) -> None:
    """The gRPC server and, unless ``bridge`` is None, the REST bridge on the same event loop, until a signal.
    ``arguments``: the command line ``serve_config`` came from (a configuration reload reads the file again with
    it; None: nothing to reload).

    The bridge starts listening as soon as gRPC does (its /health is 503 while
    the models load), talking to the server over a grpc.aio channel on a
    private unix socket, so it runs exactly as it would in front of a remote
    service.
    """
    from ovserve.service.server.grpc_server import Server  # loads OpenVINO: see serve_parser

    # Everything that can refuse to start is tried before anything listens or loads.
    try:
        server = startup.opening_store(serve_config.response_store, lambda: Server(serve_config))
    except TlsError as error:
        raise startup.StartupError(str(error)) from None
    rest = None
    if bridge is not None:
        host, port, settings = bridge
        try:  # its gRPC target is known once gRPC listens; its /metrics are this process's
            rest = Bridge("", host, port, settings, figures=server)
        except (OSError, ValueError) as error:
            raise startup.StartupError(f"cannot serve HTTPS: {error}") from None
        bind_rest(rest)
    # The bridge and the batch runner reach gRPC through an owner-only unix socket: under TLS they need no
    # certificate for their own server, and each message costs less than over TCP loopback (grpc.aio, 2 cores:
    # ~7 % less client CPU per streamed message).
    server.reloader.arguments = arguments
    private = tempfile.TemporaryDirectory(prefix="ovserve-")  # mode 0700
    server.local_socket = os.path.join(private.name, "grpc.sock")
    startup.check_port_free(serve_config.host, serve_config.port, "gRPC")
    try:
        await server.start()
    except RuntimeError as error:  # grpc.aio's bind failure, if the port was taken after the check
        where = f"{serve_config.host}:{serve_config.port}"
        raise startup.StartupError(f"cannot listen on {where} (gRPC): {str(error).split(';')[0]}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, server.on_hangup)  # the key files, and the configuration file
    try:
        server.batch_lines = batch_lines(server, f"unix:{server.local_socket}")
        if rest is not None:
            rest.target = f"unix:{server.local_socket}"
            await rest.start()
        loading = asyncio.create_task(server.load_models())
        await asyncio.wait([loading, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        if loading.done():
            loading.result()  # a model that failed to load ends the server
            await stop.wait()
    finally:
        logging.getLogger("ovserve.service.server.grpc_server").info("shutting down")
        if rest is not None:
            await rest.stop_listening()
        await server.stop()  # in-flight RPCs, REST ones included, finish within the grace period
        if rest is not None:
            await rest.stop()
        private.cleanup()


def batch_lines(server: Server, target: str) -> BatchLines:
    """How the server's batch runner runs a line: as the REST API runs the same request (the bridge's translation
    and rendering), over a channel of its own to the started ``server`` at ``target``."""
    channel = grpc.aio.insecure_channel(target, options=list(MESSAGE_SIZE_OPTIONS))
    return BatchLines(channel, server.policy.internal_token, deadline_seconds=BridgeSettings().deadline_seconds)


def bridge_parser() -> argparse.ArgumentParser:
    """The options of ``ovserve bridge``."""
    parser = argparse.ArgumentParser(
        prog="ovserve bridge", description="Serve OpenAI-compatible REST in front of a remote ovserve gRPC service."
    )
    add_flags(parser, bridge_config.BridgeAddress)
    bridge_config.add_arguments(parser)
    parser.add_argument("--log-level", default="INFO", metavar="LEVEL", help=LOG_LEVEL_HELP)
    return parser


def bridge_main(argv: Sequence[str]) -> int:
    """``ovserve bridge``: the REST bridge alone, in front of a remote gRPC service, until SIGINT or SIGTERM."""
    args = bridge_parser().parse_args(argv)
    logs.configure(args.log_level)
    tracing.configure()
    address = bridge_config.address_from_arguments(args)
    try:
        credentials = None
        if address.target_ca is not None or address.target_cert is not None:
            credentials = channel_credentials(address.target_ca, address.target_cert, address.target_key)
        bridge = Bridge(
            address.target, address.host, address.port, bridge_config.from_arguments(args),
            target_credentials=credentials,
        )  # fmt: skip
    except (OSError, ValueError) as error:
        print(f"ovserve bridge: cannot use the TLS files: {error}", file=sys.stderr)
        return 1
    try:
        bind_rest(bridge)
    except startup.StartupError as error:
        print(f"ovserve bridge: {error}", file=sys.stderr)
        return 1
    asyncio.run(serve_bridge(bridge))
    return 0


def bind_rest(bridge: Bridge) -> None:
    """Take the bridge's port now; a taken one is a StartupError."""
    try:
        bridge.bind()
    except OSError as error:
        raise startup.listen_failure(bridge.host, bridge.port, "REST", error) from None
