"""The ``ovserve`` command line: one subcommand per entry of SUBCOMMANDS, each parsing its own options.

``serve`` and ``bridge`` live in ``ovserve.service.server.composition``, the one module that
puts the server and the REST bridge together.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ovserve.clients.defaults import DEFAULT_TARGET
from ovserve.service import __version__


def _serve(argv: Sequence[str]) -> int:
    # The composition root imports both the server and the bridge; loaded only for the subcommands that need it.
    from ovserve.service.server.composition import serve_main

    return serve_main(argv)


def _bridge(argv: Sequence[str]) -> int:
    from ovserve.service.server.composition import bridge_main

    return bridge_main(argv)


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


def _descriptor_set(argv: Sequence[str]) -> int:
    from ovserve.clients.descriptors import descriptor_set

    parser = argparse.ArgumentParser(
        prog="ovserve descriptor-set",
        description="Write the ovserve.v1 contract as a FileDescriptorSet with its imports and google.api.http "
        "annotations (Envoy's grpc_json_transcoder proto_descriptor, grpcurl -protoset, buf curl --schema).",
    )
    parser.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")
    args = parser.parse_args(argv)
    if args.output == "-":
        sys.stdout.buffer.write(descriptor_set())
    else:
        with open(args.output, "wb") as out:
            out.write(descriptor_set())
    return 0


def _bench(argv: Sequence[str]) -> int:
    from ovserve.service.bench.cli import main as bench_main

    return bench_main(argv)


def _convert(argv: Sequence[str]) -> int:
    from ovserve.service.sources.commands import convert_main

    return convert_main(argv)


def _pull(argv: Sequence[str]) -> int:
    from ovserve.service.sources.commands import pull_main

    return pull_main(argv)


# subcommand -> (help, handler taking the remaining argv). The handlers parse
# their own options so each subcommand's --help is complete.
SUBCOMMANDS: dict[str, tuple[str, Callable[[Sequence[str]], int]]] = {
    "serve": ("serve models over gRPC and REST (default: the bundled tiny-chat)", _serve),
    "bridge": ("serve the REST bridge alone, in front of a remote gRPC service", _bridge),
    "health": ("check a running service's gRPC health (exit 0 when SERVING)", _health),
    "descriptor-set": (
        "write the contract's FileDescriptorSet (for Envoy's JSON transcoder, grpcurl)",
        _descriptor_set,
    ),
    "convert": ("convert a Hugging Face model or GGUF file into an OpenVINO directory (needs 'convert')", _convert),
    "pull": ("download a Hugging Face repository and convert it into the model cache", _pull),
    "bench": ("streaming load against a running service, optionally against the engine alone", _bench),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ovserve`` command line and return its exit status."""
    parser = argparse.ArgumentParser(prog="ovserve", description="gRPC-first LLM serving on OpenVINO GenAI.")
    parser.add_argument("--version", action="version", version=f"ovserve {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, _) in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    args, rest = parser.parse_known_args(argv)
    _, handler = SUBCOMMANDS[args.command]
    return handler(rest)


if __name__ == "__main__":
    sys.exit(main())
