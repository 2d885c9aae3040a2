"""OpenVINO GenAI's other pipelines: text embeddings, reranking and speech-to-text, each in its own process.

Unlike the LLM engine these pipelines are not continuous-batching: a worker process
runs one call at a time, and batches the embedding inputs of whatever requests wait
together into one call. The server side (``Pipeline``) bounds the queue, runs the
process on the engine's runtime (ovserve.service.workers: supervised, replaced when it dies),
and never blocks the event loop.
"""

from ovserve.service.pipelines.kinds import PipelineKind, kind_of
from ovserve.service.pipelines.pipeline import Pipeline, PipelineSettings

__all__ = ["Pipeline", "PipelineKind", "PipelineSettings", "kind_of"]
