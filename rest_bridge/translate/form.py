"""OpenAI's multipart uploads (audio transcriptions and translations, image edits): the form read under bounds, its
text fields decoded. A hostile body costs little to refuse."""

from __future__ import annotations

import tornado.httputil

from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.translate.body import bad_request

# A part's headers carry its name and filename: 4 KiB is far above any real filename (255 bytes on most file
# systems). A text field longer than 64 KiB is no model name, language or prompt the service takes.
MAX_PART_HEADER_BYTES = 4 * 1024
MAX_FIELD_BYTES = 64 * 1024
# What tornado's HTTPInputError says (a piece of it) -> what the client is told; anything else is "malformed".
_ERRORS = {
    "boundary not found": "the Content-Type has no multipart boundary",
    "no final boundary": "the body does not end with its boundary (a truncated body, or another boundary)",
    "too many parts": "the form has more than {max_parts} parts",
    "header too large": f"a part's headers (its name and filename) are longer than {MAX_PART_HEADER_BYTES} bytes",
}

Fields = dict[str, list[bytes]]
Files = dict[str, list[tornado.httputil.HTTPFile]]


def read_form(body: bytes, content_type: str | None, *, max_parts: int, blamed: str) -> tuple[Fields, Files]:
    """The form's text fields and files; 415 unless it is multipart/form-data, a 400 naming ``blamed`` (the one
    required upload, the part a broken body most likely broke) when it cannot be read."""
    if not (content_type or "").lower().startswith("multipart/form-data"):
        raise BridgeError(415, "Content-Type must be multipart/form-data", code="unsupported_media_type")
    limits = tornado.httputil.ParseMultipartConfig(max_parts=max_parts, max_part_header_size=MAX_PART_HEADER_BYTES)
    fields: Fields = {}
    files: Files = {}
    try:
        tornado.httputil.parse_body_arguments(
            content_type or "", body, fields, files, config=tornado.httputil.ParseBodyConfig(multipart=limits)
        )
    except tornado.httputil.HTTPInputError as error:
        reason = next((told for said, told in _ERRORS.items() if said in str(error)), "malformed")
        reason = reason.format(max_parts=max_parts)
        raise bad_request(blamed, f"{blamed}: not a readable multipart/form-data body: {reason}") from None
    return fields, files


def field_text(name: str, values: list[bytes]) -> str:
    """A text field given once: its UTF-8 text, at most MAX_FIELD_BYTES; else a 400 naming it."""
    if len(values) > 1:
        raise bad_request(name, f"{name}: give it once")
    if len(values[0]) > MAX_FIELD_BYTES:
        raise bad_request(name, f"{name}: longer than {MAX_FIELD_BYTES} bytes")
    try:
        return values[0].decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request(name, f"{name}: not UTF-8 text") from None
