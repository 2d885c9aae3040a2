"""The ``ovserve`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import TYPE_CHECKING

from clients.defaults import DEFAULT_TARGET, LOOPBACK

if TYPE_CHECKING:
    from rest_bridge.config import BridgeSettings
    from service.config import ServeConfig


def _serve(argv: Sequence[str]) -> int:
    import asyncio

    from rest_bridge import config as rest_config
    from service import config, logs

    parser = argparse.ArgumentParser(
        prog="ovserve serve", description="Serve models over gRPC, and over OpenAI-compatible REST."
    )
    config.add_arguments(parser)
    rest = parser.add_argument_group("REST bridge (OpenAI JSON and SSE on /v3 and /v1)")
    rest.add_argument("--no-rest", action="store_true", help="serve gRPC only")
    rest.add_argument("--rest-host", default=rest_config.DEFAULT_HOST,
                      help=f"REST address (default {rest_config.DEFAULT_HOST})")  # fmt: skip
    rest.add_argument("--rest-port", type=int, default=rest_config.DEFAULT_REST_PORT,
                      help=f"REST port (default {rest_config.DEFAULT_REST_PORT}; 0 picks a free one)")  # fmt: skip
    rest_config.add_arguments(rest, prefix="rest-")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    args = parser.parse_args(argv)
    logs.configure(args.log_level)
    try:
        serve_config = config.from_arguments(args)
    except (config.ConfigError, OSError) as error:
        parser.error(str(error))
    bridge = None if args.no_rest else (args.rest_host, args.rest_port, rest_config.from_arguments(args, "rest-"))
    asyncio.run(_serve_with_bridge(serve_config, bridge))
    return 0


async def _serve_with_bridge(serve_config: ServeConfig, bridge: tuple[str, int, BridgeSettings] | None) -> None:
    """The gRPC server and, unless ``bridge`` is None, the REST bridge on the same event loop, until a signal.

    The bridge starts listening as soon as gRPC does (its /health is 503 while
    the models load), talking to the local gRPC port over a grpc.aio channel,
    so it runs exactly as it would in front of a remote service.
    """
    import asyncio
    import logging
    import signal

    from rest_bridge.server import Bridge
    from service.server import Server

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
            rest = Bridge(_loopback_target(serve_config.host, server.port), host, port, settings)
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


def _loopback_target(host: str, port: int) -> str:
    """host:port the bridge dials to reach a gRPC server listening on ``host`` (any-address -> loopback)."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = LOOPBACK
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6 literal
    return f"{host}:{port}"


def _bridge(argv: Sequence[str]) -> int:
    import asyncio

    from rest_bridge import config as rest_config
    from rest_bridge.server import serve_bridge
    from service import logs

    parser = argparse.ArgumentParser(
        prog="ovserve bridge", description="Serve OpenAI-compatible REST in front of a remote ovserve gRPC service."
    )
    parser.add_argument("--target", default=rest_config.DEFAULT_TARGET,
                        help=f"HOST:PORT of the gRPC service (default {rest_config.DEFAULT_TARGET})")  # fmt: skip
    parser.add_argument("--host", default=rest_config.DEFAULT_HOST,
                        help=f"address to listen on (default {rest_config.DEFAULT_HOST})")  # fmt: skip
    parser.add_argument("--port", type=int, default=rest_config.DEFAULT_REST_PORT,
                        help=f"REST port (default {rest_config.DEFAULT_REST_PORT}; 0 picks a free one)")  # fmt: skip
    rest_config.add_arguments(parser)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    args = parser.parse_args(argv)
    logs.configure(args.log_level)
    asyncio.run(serve_bridge(args.target, args.host, args.port, rest_config.from_arguments(args)))
    return 0


def _health(argv: Sequence[str]) -> int:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    parser = argparse.ArgumentParser(
        prog="ovserve health", description="Exit 0 if the gRPC service reports SERVING (grpc.health.v1), else 1."
    )
    parser.add_argument("--target", default=DEFAULT_TARGET, help=f"HOST:PORT (default {DEFAULT_TARGET})")
    parser.add_argument("--service", default="", help="one service's status (default: the server's)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait (default 5)")
    args = parser.parse_args(argv)
    with grpc.insecure_channel(args.target) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=args.service), timeout=args.timeout
            )
        except grpc.RpcError as error:
            print(f"{args.target}: {error.code().name}", file=sys.stderr)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"{args.target}: {status}")
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


def _build_models(argv: Sequence[str]) -> int:
    # Imported lazily: the builder needs the `export` extra (torch, optimum-intel),
    # which the serving runtime never installs.
    from service.model_builder.__main__ import main as build_main

    return build_main(list(argv))


def _bench(argv: Sequence[str]) -> int:
    from service.bench.cli import main as bench_main

    return bench_main(argv)


def _build_real_size_model(argv: Sequence[str]) -> int:
    # Lazy for the same reason as _build_models (needs the `export` extra).
    from service.model_builder.real_size import main as real_size_main

    return real_size_main(list(argv))


# subcommand -> (help, handler taking the remaining argv). The handlers parse
# their own options so each subcommand's --help is complete.
SUBCOMMANDS: dict[str, tuple[str, Callable[[Sequence[str]], int]]] = {
    "serve": ("serve models over gRPC and REST (default: the bundled tiny-chat)", _serve),
    "bridge": ("serve the REST bridge alone, in front of a remote gRPC service", _bridge),
    "health": ("check a running service's gRPC health (exit 0 when SERVING)", _health),
    "bench": ("streaming load against a running service, optionally against the engine alone", _bench),
    "build-models": ("rebuild the bundled test models (needs the 'export' extra)", _build_models),
    "build-real-size-model": (
        "build a random-weight model shaped like a real one, for speed tests (needs the 'export' extra)",
        _build_real_size_model,
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ovserve`` command line and return its exit status."""
    parser = argparse.ArgumentParser(prog="ovserve", description="gRPC-first LLM serving on OpenVINO GenAI.")
    parser.add_argument("--version", action="version", version=f"ovserve {metadata.version('ovserve')}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, _) in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    args, rest = parser.parse_known_args(argv)
    _, handler = SUBCOMMANDS[args.command]
    return handler(rest)


if __name__ == "__main__":
    sys.exit(main())
