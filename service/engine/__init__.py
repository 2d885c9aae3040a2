"""The OpenVINO GenAI engine: one continuous-batching pipeline per served model, in its own process.

It knows token ids, text and SamplingParams (its own request type; only the engine
process builds openvino_genai's GenerationConfig from it); it knows nothing of protobuf, HTTP or metrics
(a Meter is handed to it). Its process runs on the shared runtime of ovserve.service.workers, whose errors it
re-exports.
"""

from ovserve.service.engine.chat_template import ChatTemplate, TemplateError
from ovserve.service.engine.engine import Engine
from ovserve.service.engine.generation import Generation, Meter, MeterFactory
from ovserve.service.engine.sampling import OutputConstraint, SamplingParams
from ovserve.service.engine.scoring import MAX_ALTERNATIVES, Scoring
from ovserve.service.engine.seam import GenerationEngine, GenerationStream
from ovserve.service.engine.settings import EngineSettings
from ovserve.service.engine.types import (
    Alternatives,
    EngineStats,
    FinishReason,
    PromptImages,
    SequenceDelta,
    TokenScores,
    Update,
)
from ovserve.service.workers.errors import EngineError, EngineOverloaded, EngineRejected, EngineUnavailable

__all__ = [
    "MAX_ALTERNATIVES",
    "Alternatives",
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
    "GenerationEngine",
    "GenerationStream",
    "Meter",
    "MeterFactory",
    "OutputConstraint",
    "PromptImages",
    "SamplingParams",
    "Scoring",
    "SequenceDelta",
    "TemplateError",
    "TokenScores",
    "Update",
]
