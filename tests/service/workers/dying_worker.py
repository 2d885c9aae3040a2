"""``python -m tests.service.workers.dying_worker FD``: a worker process that dies as its spec says while
"loading" (killed by a signal, or exiting with a status), for the tests of how a failed load is reported."""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass, field
from multiprocessing.connection import Connection


@dataclass(frozen=True)
class DyingSpec:
    """A spec as a load failure reads it (device, properties), and how the process ends."""

    device: str = "CPU"
    properties: dict[str, object] = field(default_factory=dict)
    signal: int = 0  # killed by this signal; 0: exits with ``status``
    status: int = 0


def main() -> None:
    """Read the spec, then die as it says, before any answer."""
    spec: DyingSpec = Connection(int(sys.argv[1])).recv()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file from SIGFPE or SIGSEGV
    if spec.signal:
        os.kill(os.getpid(), spec.signal)
    os._exit(spec.status)


if __name__ == "__main__":
    main()
