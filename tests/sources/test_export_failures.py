"""A conversion that fails for a known cause says what is wrong and the fix in one line.

The cause measured here: PyPI's torchvision (a CUDA build) beside the CPU torch that ``ovserve[convert]`` installs
fails to load ("operator torchvision::nms does not exist"), and optimum-cli's traceback then ends with
transformers' "Could not import module 'PreTrainedModel'", which says nothing of torchvision.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from ovserve.service.sources.errors import SourceError
from ovserve.service.sources.export import export_checkpoint
from ovserve.service.sources.export_failures import diagnose

# The lines of optimum-cli's output around the cause, as it printed them with torchvision 0.28.0 from PyPI beside
# torch 2.13.0+cpu (paths shortened); the last line is all the old message showed.
TORCHVISION_TRACEBACK = """\
  File "site-packages/transformers/image_utils.py", line 53, in <module>
    from torchvision.transforms import InterpolationMode
  File "site-packages/torchvision/_meta_registrations.py", line 163, in <module>
    @torch.library.register_fake("torchvision::nms")
RuntimeError: operator torchvision::nms does not exist

The above exception was the direct cause of the following exception:

ModuleNotFoundError: Could not import module 'PreTrainedModel'. Are this object's requirements defined correctly?
"""
FIX = "pip uninstall torchvision"


def test_the_torchvision_line_of_the_traceback_is_told_with_its_fix() -> None:
    found = [account for line in TORCHVISION_TRACEBACK.splitlines() if (account := diagnose(line))]
    assert len(found) == 1
    assert FIX in found[0] and "torchvision::nms does not exist" in found[0]
    assert f"torch {metadata.version('torch')}" in found[0] and "\n" not in found[0]


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions are "
        "incompatible",
        "OSError: site-packages/torchvision/_C.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev",
    ],
)
def test_torchvisions_other_words_for_a_build_of_another_torch(line: str) -> None:
    account = diagnose(line)
    assert account is not None and FIX in account


@pytest.mark.parametrize(
    "line",
    [
        "ModuleNotFoundError: Could not import module 'PreTrainedModel'. Are this object's requirements defined "
        "correctly?",
        "ValueError: Unrecognized configuration class <class 'MyConfig'>",
        "Exporting the model torchvision-like with task text-generation-with-past",
    ],
)
def test_other_lines_are_no_known_cause(line: str) -> None:
    assert diagnose(line) is None


def test_a_conversion_under_a_torchvision_that_cannot_load_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real exporter, run as the server runs it, finding a torchvision that fails as PyPI's does here."""
    fake = tmp_path / "site" / "torchvision"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))  # the exporter's process only: this one never imports it
    with pytest.raises(SourceError) as raised:
        export_checkpoint(tmp_path / "checkpoint", tmp_path / "out", "text-generation-with-past", None)
    message = str(raised.value)
    assert "\n" not in message
    assert "torchvision" in message and FIX in message and "PreTrainedModel" not in message
