"""What a served model was built from, and the precision of its weights as its IR stores them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from ovserve.service.model_files import LANGUAGE_IRS

# Written into every directory the model cache makes; read back on the next start.
PROVENANCE_FILE = "ovserve_source.json"
# An IR constant's element type -> the precision it stores weights in, and its bits per element.
PRECISIONS = {
    "u4": ("int4", 4), "i4": ("int4", 4), "nf4": ("int4", 4), "f4e2m1": ("int4", 4),
    "u8": ("int8", 8), "i8": ("int8", 8), "f8e4m3": ("fp8", 8), "f8e5m2": ("fp8", 8),
    "f16": ("fp16", 16), "bf16": ("bf16", 16), "f32": ("fp32", 32),
}  # fmt: skip
# IRs whose weights say what a model's precision is, in the order looked for.
WEIGHT_IRS = (*LANGUAGE_IRS, "openvino_decoder_model.xml")


@dataclass(frozen=True)
class Provenance:
    """Where a served model came from (``ListModels``, ``GET /v3/models/{id}``).

    ``source``: what the user named; ``source_kind``: openvino, huggingface, gguf (a hub id reports the form
    its repository holds, with ``revision`` the commit); ``weight_format``: what the conversion was asked for
    ("" when none ran or the exporter chose); ``precision``: what most weights are stored as in the served IR.
    """

    source: str
    source_kind: str
    revision: str = ""
    weight_format: str = ""
    precision: str = ""

    def write(self, directory: Path) -> None:
        """Record it in a converted model's directory."""
        (directory / PROVENANCE_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, directory: Path) -> Provenance | None:
        """What a converted directory records, or None."""
        try:
            return cls(**json.loads((directory / PROVENANCE_FILE).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None


def weight_precision(model_dir: Path) -> str:
    """The precision most of the model's weights are stored in ("int4", "int8", "fp16", ...; "" if unknown).

    Counted in parameters over the IR's constants of two or more dimensions (weights, not scales or shapes).
    """
    ir = next((model_dir / name for name in WEIGHT_IRS if (model_dir / name).is_file()), None)
    if ir is None:
        return ""
    counts: Counter[str] = Counter()
    for _, element in ElementTree.iterparse(ir):
        if element.tag == "data" and (shape := element.get("shape")) and "," in shape:
            precision = PRECISIONS.get(element.get("element_type", ""))
            if precision is not None and element.get("size"):
                counts[precision[0]] += int(element.get("size", "0")) * 8 // precision[1]
        element.clear()
    return counts.most_common(1)[0][0] if counts else ""
