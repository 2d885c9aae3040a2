"""Builds the bundled test models (tiny-chat, tiny-chat-draft).

Export-time only: needs the ``export`` extra (torch, transformers, optimum-intel)
and is never imported by the service. Entry point: ``python -m tools.model_builder``.
"""
