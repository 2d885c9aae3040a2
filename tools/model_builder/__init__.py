"""Builds the bundled test models (tiny-chat, tiny-chat-draft).

Export-time only: needs the ``export`` extra (torch, transformers, optimum-intel)
and is never imported by the service. Entry point: ``python -m tools.model_builder``.
"""

from pathlib import Path

# Where the bundled models live in the checkout (the builder's default output and the models it starts from).
BUNDLED_MODELS = Path(__file__).resolve().parents[2] / "service" / "bundled_models"
