"""The ``ovserve`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import metadata


def _build_models(argv: Sequence[str]) -> int:
    # Imported lazily: the builder needs the `export` extra (torch, optimum-intel),
    # which the serving runtime never installs.
    from service.model_builder.__main__ import main as build_main

    return build_main(list(argv))


# subcommand -> (help, handler taking the remaining argv). The handlers parse
# their own options so each subcommand's --help is complete.
SUBCOMMANDS: dict[str, tuple[str, Callable[[Sequence[str]], int]]] = {
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
