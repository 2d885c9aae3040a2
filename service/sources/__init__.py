"""Model sources: what ``--model NAME=SOURCE`` may name, made into an OpenVINO GenAI directory the server loads.

A SOURCE is an OpenVINO GenAI directory (served as it is), a Hugging Face model directory (config.json and
safetensors), a Hugging Face repository id (``org/name[@revision]``, through huggingface_hub's cache), or a
``.gguf`` file. Anything not already OpenVINO is converted once into the model cache (``--model-cache``) and
reused on the next start; see ``resolve``.
"""

from ovserve.service.sources.errors import SourceError
from ovserve.service.sources.provenance import Provenance
from ovserve.service.sources.resolve import WEIGHT_FORMATS, default_cache_dir, resolve

__all__ = ["WEIGHT_FORMATS", "Provenance", "SourceError", "default_cache_dir", "resolve"]
