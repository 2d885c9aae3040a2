"""POST /audio/speech: OpenAI's speech JSON -> SpeechService.StreamSpeech, answered as audio.

``stream_format`` "audio" (OpenAI's default): the audio itself as the body, written in pieces as they come (chunked
transfer), its Content-Type the format's. "sse": OpenAI's ``speech.audio.delta`` events (the pieces, base64) and a
``speech.audio.done`` with the usage. An error before the first piece is OpenAI's JSON error with its status.
"""

from __future__ import annotations

import base64
from typing import Any

from tornado.iostream import StreamClosedError

from ovserve.clients.v1 import speech_pb2
from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.sse import event
from ovserve.rest_bridge.translate.message import message_from_body
from ovserve.rest_bridge.translate.proto_json import normalise_forms, without_nulls


def _normalise(body: dict[str, Any]) -> dict[str, Any]:
    return normalise_forms(without_nulls(body), speech_pb2.StreamSpeechRequest.DESCRIPTOR)


def speech_request(body: dict[str, Any]) -> speech_pb2.StreamSpeechRequest:
    """The proto request for an OpenAI speech body."""
    return message_from_body(body, speech_pb2.StreamSpeechRequest, _normalise)


def speech_event(message: speech_pb2.StreamSpeechResponse) -> dict[str, Any]:
    """OpenAI's ``speech.audio.delta`` or ``speech.audio.done`` event for one streamed message.

    The usage's output tokens are 0: SpeechT5 makes spectrogram frames, not tokens."""
    if message.HasField("delta"):
        return {"type": "speech.audio.delta", "audio": base64.b64encode(message.delta.audio).decode("ascii")}
    tokens = message.done.input_tokens
    return {
        "type": "speech.audio.done",
        "usage": {"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens},
    }


class SpeechHandler(JsonBodyHandler):
    """POST /v3/audio/speech."""

    async def post(self) -> None:
        request = await self.translated(speech_request)
        self.call = self.backend.speech.StreamSpeech(request, **self.grpc_options())
        sse = request.stream_format == "sse"
        started = False
        async with self.call_errors():
            try:
                async for message in self.call:
                    if not started:  # headers wait for the first piece: an error before it is a JSON error
                        await self.send_rate_limits()
                        content_type = "text/event-stream" if sse else message.delta.content_type
                        self.set_header("Content-Type", content_type)
                        started = True
                    if sse:
                        self.write(event(speech_event(message)))
                    elif message.HasField("delta"):
                        self.write(message.delta.audio)
                    await self.flush()
            except StreamClosedError:  # the client left between two pieces
                self.client_gone = True
                return
        self.finish()


ROUTES = [("/audio/speech", SpeechHandler)]
