"""The composition root: ``ovserve serve`` and ``ovserve bridge`` put the gRPC server and the REST bridge together.

This is the only module that imports both ``service`` and ``rest_bridge``
(``tests/test_layers.py`` checks it): the bridge never imports the service,
it reaches it over gRPC, so it runs the same in front of a local or a remote
server. ``service.cli`` parses the subcommand and hands over to ``serve_main``
or ``bridge_main`` here.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clients.defaults import LOOPBACK
from clients.flags import add_flags, with_default
from rest_bridge import config as bridge_config
from rest_bridge.server import Bridge, serve_bridge
from service import logs

if TYPE_CHECKING:
    from service.config import ServeConfig

LOG_LEVEL_HELP = with_default(
    "DEBUG, INFO, WARNING or ERROR: one line per event, each with request_id= (from x-request-id metadata, or "
    "generated), and one rpc=... status=... ms=... line per call",
    "INFO",
)


def serve_parser() -> argparse.ArgumentParser:
    """The options of ``ovserve serve``: the server's, the bridge's (prefixed ``--rest-``) and the log level."""
    # Imported here, not at the top: service.config loads OpenVINO, which ``ovserve bridge`` never needs.
    from service import config

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
    from service import config

    parser = serve_parser()
    args = parser.parse_args(argv)
    logs.configure(args.log_level)
    try:
        serve_config = config.from_arguments(args)
    except (config.ConfigError, OSError) as error:
        parser.error(str(error))
    bridge = None
    if not args.no_rest:
        address = bridge_config.address_from_arguments(args, "rest-")
        bridge = (address.host, address.port, bridge_config.from_arguments(args, "rest-"))
    asyncio.run(serve_with_bridge(serve_config, bridge))
    return 0


async def serve_with_bridge(
    serve_config: ServeConfig, bridge: tuple[str, int, bridge_config.BridgeSettings] | None
) -> None:
    """The gRPC server and, unless ``bridge`` is None, the REST bridge on the same event loop, until a signal.

    The bridge starts listening as soon as gRPC does (its /health is 503 while
    the models load), talking to the local gRPC port over a grpc.aio channel,
    so it runs exactly as it would in front of a remote service.
    """
    from service.server import Server  # loads OpenVINO: see serve_parser

    server = Server(serve_config)
    await server.start()
    rest = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        if bridge is not None:
            host, port, settings = bridge
            rest = Bridge(loopback_target(serve_config.host, server.port), host, port, settings)
            await rest.start()
        loading = asyncio.create_task(server.load_models())
        await asyncio.wait([loading, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        if loading.done():
            loading.result()  # a model that failed to load ends the server
            await stop.wait()
    finally:
        logging.getLogger("service.server").info("shutting down")
        if rest is not None:
            await rest.stop_listening()
        await server.stop()  # in-flight RPCs, REST ones included, finish within the grace period
        if rest is not None:
            await rest.stop()


def loopback_target(host: str, port: int) -> str:
    """host:port the bridge dials to reach a gRPC server listening on ``host`` (any-address -> loopback)."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = LOOPBACK
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6 literal
    return f"{host}:{port}"


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
    address = bridge_config.address_from_arguments(args)
    asyncio.run(serve_bridge(address.target, address.host, address.port, bridge_config.from_arguments(args)))
    return 0
