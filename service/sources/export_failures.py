"""The converter's known failures, each told in one line with its fix.

optimum-cli fails with a traceback whose last line names a symptom far from its cause: a torchvision built for
another torch (PyPI's CUDA build beside the CPU torch that ``ovserve[convert]`` installs) fails to load, and
transformers then reports only ``Could not import module 'PreTrainedModel'``. The cause is a line earlier in the
output; ``diagnose`` reads each line for one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import metadata


def installed(distribution: str) -> str:
    """``name version`` of an installed distribution, or its name alone when its metadata is not found."""
    try:
        return f"{distribution} {metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return distribution


def _torchvision_mismatch(symptom: str) -> str:
    return (
        f"{installed('torchvision')} does not load beside {installed('torch')} ({symptom}), so transformers cannot "
        "import its models; fix: pip uninstall torchvision (converting does not need it), or install the "
        "torchvision build made for that torch"
    )


# A line of the exporter's output -> the one-line account of what is wrong and the fix (the matched text is the
# symptom quoted in it). torchvision's own words for a build that does not match the torch beside it: its
# operators missing from torch's registry, its extension refusing to load, or its library's symbols unresolved.
KNOWN_FAILURES: tuple[tuple[re.Pattern[str], Callable[[str], str]], ...] = (
    (
        re.compile(
            r"operator torchvision::\w+ does not exist|Couldn't load custom C\+\+ ops"
            r"|torchvision/_C\.so: undefined symbol"
        ),
        _torchvision_mismatch,
    ),
)


def diagnose(line: str) -> str | None:
    """What a line of the exporter's output says is wrong, with the fix, in one line; None for any other line."""
    for pattern, account in KNOWN_FAILURES:
        if found := pattern.search(line):
            return account(found.group(0))
    return None
