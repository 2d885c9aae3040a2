"""The OpenVINO GenAI engine: one continuous-batching pipeline per served model, in its own process.

It knows token ids, text and SamplingParams (its own request type; only the engine
process builds openvino_genai's GenerationConfig from it); it knows nothing of protobuf or HTTP.
"""

from service.engine.chat_template import ChatTemplate, TemplateError
from service.engine.engine import Engine, EngineSettings
from service.engine.generation import Generation
from service.engine.sampling import OutputConstraint, SamplingParams
from service.engine.types import (
    EngineError,
    EngineOverloaded,
    EngineRejected,
    EngineStats,
    EngineUnavailable,
    FinishReason,
    PromptImages,
    SequenceDelta,
    Update,
)

__all__ = [
    "ChatTemplate",
    "Engine",
    "EngineError",
    "EngineOverloaded",
    "EngineRejected",
    "EngineSettings",
    "EngineStats",
    "EngineUnavailable",
    "FinishReason",
    "Generation",
    "OutputConstraint",
    "PromptImages",
    "SamplingParams",
    "SequenceDelta",
    "TemplateError",
    "Update",
]
