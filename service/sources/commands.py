"""``ovserve convert`` and ``ovserve pull``: what ``serve --model NAME=SOURCE`` does to a source, ahead of time."""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ovserve.service.pipelines import PipelineKind
from ovserve.service.sources.errors import SourceError
from ovserve.service.sources.locate import HUB_ID
from ovserve.service.sources.resolve import WEIGHT_FORMATS, default_cache_dir, resolve


def _parser(prog: str, description: str, source_help: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("source", metavar="SOURCE", help=source_help)
    parser.add_argument("--weight-format", choices=WEIGHT_FORMATS,
                        help="weights of a converted checkpoint (default: optimum-intel's choice: int8 from a "
                             "billion parameters up)")  # fmt: skip
    parser.add_argument("--task", choices=[kind.value for kind in PipelineKind],
                        help="what the model serves (default: from its config.json)")  # fmt: skip
    parser.add_argument("--model-cache", type=Path, metavar="DIR",
                        help="where conversions are kept (default $XDG_CACHE_HOME/ovserve/models)")  # fmt: skip
    return parser


def _resolve(prog: str, args: argparse.Namespace, copy_to: Path | None = None) -> int:
    """Make ``args.source`` served (and copy it to ``copy_to``), print where it is, 0; or print the one-line
    error, 1."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        directory, provenance = resolve(
            args.source,
            cache_dir=(args.model_cache or default_cache_dir()).expanduser(),
            weight_format=args.weight_format,
            task=PipelineKind(args.task) if args.task else None,
        )
    except SourceError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    logging.info("%s: %s, weights %s", args.source, provenance.source_kind, provenance.precision or "unknown")
    if copy_to is not None:
        directory = Path(shutil.copytree(directory, copy_to))
    print(directory)
    return 0


def convert_main(argv: Sequence[str]) -> int:
    """``ovserve convert SOURCE OUT``: the OpenVINO directory ``serve`` would load, copied to OUT."""
    parser = _parser(
        "ovserve convert",
        "Convert a Hugging Face model directory or repository id, or a GGUF file, into an OpenVINO GenAI "
        "directory (through the model cache, as serve --model does), and copy it to OUT.",
        "a Hugging Face model directory, repository id (org/name[@revision]) or .gguf file",
    )
    parser.add_argument("out", metavar="OUT", type=Path, help="the directory to write (must not exist)")
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"{args.out} exists; name a new directory")
    return _resolve("ovserve convert", args, args.out)


def pull_main(argv: Sequence[str]) -> int:
    """``ovserve pull ID``: download a hub repository and convert it into the model cache; prints the directory."""
    parser = _parser(
        "ovserve pull",
        "Download a Hugging Face repository into the hub cache and convert it into the model cache, so that "
        "serve --model NAME=ID starts at once (also offline, with HF_HUB_OFFLINE=1).",
        "a Hugging Face repository id, org/name[@revision]",
    )
    args = parser.parse_args(argv)
    if not HUB_ID.match(args.source):
        parser.error(f"{args.source!r} is not a repository id (org/name[@revision])")
    return _resolve("ovserve pull", args)
