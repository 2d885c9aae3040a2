"""Generate the Python stubs of the ovserve.v1 contract into ``clients/v1``.

Usage (from the repository root; needs the ``test`` or ``dev`` extra for
grpcio-tools)::

    python tools/generate_stubs.py          # regenerate clients/v1
    python tools/generate_stubs.py --check  # exit 1 if clients/v1 is stale

protoc writes absolute imports named after the proto package
(``from ovserve.v1 import common_pb2``), which would only resolve if the
generated tree were a top-level package. The stubs live inside ``clients``,
so those imports are rewritten to relative ones (``from . import
common_pb2``); that works from a wheel and from an editable install alike.
protoletariat does the same rewrite but pins protobuf<6, which ovserve cannot
use.
"""

from __future__ import annotations

import argparse
import filecmp
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "proto"
PROTO_PACKAGE_DIR = Path("ovserve") / "v1"
OUT_DIR = ROOT / "clients" / "v1"

# "from ovserve.v1 import chat_pb2 as ..." -> "from . import chat_pb2 as ..."
_ABSOLUTE_IMPORT = re.compile(r"^from ovserve\.v1 import ", re.MULTILINE)

_PACKAGE_INIT = '''"""Generated stubs of the ovserve.v1 contract (proto/ovserve/v1).

Do not edit: regenerate with ``python tools/generate_stubs.py``.
"""
'''


def generate(out_dir: Path) -> None:
    """Run protoc on every proto/ovserve/v1/*.proto and write fixed-up stubs to out_dir."""
    from grpc_tools import protoc  # codegen-only dependency (grpcio-tools)

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / PROTO_PACKAGE_DIR).glob("*.proto"))
    if not protos:
        sys.exit(f"no .proto files under {PROTO_ROOT / PROTO_PACKAGE_DIR}")
    well_known = Path(protoc.__file__).parent / "_proto"  # google/protobuf/*.proto
    with tempfile.TemporaryDirectory() as raw:
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={raw}",
            f"--pyi_out={raw}",
            f"--grpc_python_out={raw}",
            *protos,
        ]
        if protoc.main(args) != 0:
            sys.exit("protoc failed")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        for src in sorted((Path(raw) / PROTO_PACKAGE_DIR).iterdir()):
            text = _ABSOLUTE_IMPORT.sub("from . import ", src.read_text())
            (out_dir / src.name).write_text(text)
    (out_dir / "__init__.py").write_text(_PACKAGE_INIT)


def stale_files(expected: Path, actual: Path) -> list[str]:
    """Names of files that differ between two stub directories (missing ones included)."""
    cmp = filecmp.dircmp(expected, actual, ignore=["__pycache__"])
    _, mismatch, errors = filecmp.cmpfiles(expected, actual, cmp.common_files, shallow=False)
    return sorted(cmp.left_only + cmp.right_only + mismatch + errors)


def main() -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether clients/v1 is up to date")
    args = parser.parse_args()
    if not args.check:
        generate(OUT_DIR)
        print(f"wrote {OUT_DIR.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "v1"
        generate(fresh)
        stale = stale_files(fresh, OUT_DIR) if OUT_DIR.exists() else ["clients/v1 (missing)"]
    if stale:
        print("generated stubs are stale; run: python tools/generate_stubs.py", file=sys.stderr)
        for name in stale:
            print(f"  {name}", file=sys.stderr)
        return 1
    print("generated stubs are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
