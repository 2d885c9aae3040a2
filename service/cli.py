"""The ``ovserve`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import metadata


def _serve(argv: Sequence[str]) -> int:
    import asyncio
    import logging

    from service import config, server

    parser = argparse.ArgumentParser(prog="ovserve serve", description="Serve models over gRPC.")
    config.add_arguments(parser)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        serve_config = config.from_arguments(args)
    except (config.ConfigError, OSError) as error:
        parser.error(str(error))
    asyncio.run(server.serve(serve_config))
    return 0


def _build_models(argv: Sequence[str]) -> int:
    # Imported lazily: the builder needs the `export` extra (torch, optimum-intel),
    # which the serving runtime never installs.
    from service.model_builder.__main__ import main as build_main

    return build_main(list(argv))


# subcommand -> (help, handler taking the remaining argv). The handlers parse
# their own options so each subcommand's --help is complete.
SUBCOMMANDS: dict[str, tuple[str, Callable[[Sequence[str]], int]]] = {
    "serve": ("serve models over gRPC (default: the bundled tiny-chat)", _serve),
    "build-models": ("rebuild the bundled test models (needs the 'export' extra)", _build_models),
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
