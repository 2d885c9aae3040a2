"""The OpenVINO GenAI engine: one continuous-batching pipeline per served model, in its own process.

It knows token ids, text and GenerationConfig; it knows nothing of protobuf or HTTP.
"""

from service.engine.engine import Engine, EngineSettings, Generation
from service.engine.types import EngineError, EngineOverloaded, EngineStats, FinishReason, SequenceDelta, Update

__all__ = [
    "Engine",
    "EngineError",
    "EngineOverloaded",
    "EngineSettings",
    "EngineStats",
    "FinishReason",
    "Generation",
    "SequenceDelta",
    "Update",
]
