"""Documents in requests (chat ``file`` parts, Responses ``input_file``): their bytes -> the text the model reads.

PDF: the text layer of at most ``max_file_pages`` pages and ``max_file_chars`` characters, read with pypdf in a
child process bounded in time and memory (pdf_reader.py); text files: UTF-8. Anything else, an
encrypted or unreadable PDF, or text that is not UTF-8 is a MediaError naming the part. Callers run it off the
event loop.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path, PurePosixPath

from ovserve.clients.defaults import MIB
from ovserve.service.media.policy import MediaPolicy
from ovserve.service.media.sources import MediaError

PDF_MAGIC = b"%PDF-"
# Types read as UTF-8 text, by media type and by file extension (for bare base64 named by its filename).
TEXT_MEDIA_TYPES = ("text/", "application/json", "application/xml", "application/x-yaml", "application/yaml")
TEXT_EXTENSIONS = {
    ".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".jsonl", ".xml", ".yaml", ".yml", ".html", ".htm",
    ".py", ".js", ".ts", ".java", ".c", ".h", ".cpp", ".go", ".rs", ".rb", ".sh", ".sql", ".toml", ".ini", ".log",
}  # fmt: skip

log = logging.getLogger(__name__)
_READER = Path(__file__).with_name("pdf_reader.py")
_READERS = threading.BoundedSemaphore(2)  # PDFs read at once; more wait (each reader is a process)
PDF_READER_MEMORY_BYTES = 1024 * MIB  # address space of one reader: pypdf and its largest page
PDF_STREAM_BYTES = 32 * MIB  # what one stream of a PDF may inflate to (a page's content is far less)


def document_text(field: str, data: bytes, media_type: str, filename: str, policy: MediaPolicy) -> str:
    """The text of a document given as ``data``; its type from ``media_type`` (a data URL's), else its content
    and ``filename``."""
    extension = PurePosixPath(filename).suffix.lower()
    if data.startswith(PDF_MAGIC) or media_type == "application/pdf" or (not media_type and extension == ".pdf"):
        return _pdf_text(field, data, policy)
    if media_type.startswith(TEXT_MEDIA_TYPES) or (not media_type and extension in TEXT_EXTENSIONS):
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise MediaError(field, f"the text file is not UTF-8: {error}") from error
    described = media_type or extension or "unknown"
    raise MediaError(field, f"unsupported file type ({described}); PDF and UTF-8 text files are read")


def _pdf_text(field: str, data: bytes, policy: MediaPolicy) -> str:
    """The PDF's text, read in a child process (pdf_reader.py) killed past ``policy.file_read_seconds``."""
    limits = {
        "max_pages": policy.max_file_pages,
        "max_chars": policy.max_file_chars,
        "memory_bytes": PDF_READER_MEMORY_BYTES,
        "stream_bytes": PDF_STREAM_BYTES,
    }
    with _READERS:  # a few at a time: each is a process of its own
        try:
            done = subprocess.run(
                [sys.executable, "-I", str(_READER)],
                input=json.dumps(limits).encode() + b"\n" + data,
                capture_output=True,
                timeout=policy.file_read_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired as error:  # run() has killed it
            raise MediaError(
                field, f"the PDF took longer than {policy.file_read_seconds:g} s to read (--file-read-seconds)"
            ) from error
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = {}
    if isinstance(answer.get("text"), str):
        return str(answer["text"])
    if done.returncode < 0 or not answer:  # killed by a signal, or died (its stderr is not the client's business)
        reason = done.stderr[-2000:].decode(errors="replace")
        log.warning("the PDF reader ended with status %d: %s", done.returncode, reason)
        raise MediaError(field, "the PDF could not be read: its reader ran out of resources")
    raise MediaError(field, str(answer.get("error", "the PDF could not be read")))
