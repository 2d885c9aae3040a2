"""Documents in requests (chat ``file`` parts, Responses ``input_file``): their bytes -> the text the model reads.

PDF: the text layer of at most ``max_file_pages`` pages, with pypdf; text files: UTF-8. Anything else, an
encrypted or unreadable PDF, or text that is not UTF-8 is a MediaError naming the part. Callers run it off the
event loop.
"""

from __future__ import annotations

import io
import logging
from pathlib import PurePosixPath

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from service.media.policy import MediaPolicy
from service.media.sources import MediaError

PDF_MAGIC = b"%PDF-"
# Types read as UTF-8 text, by media type and by file extension (for bare base64 named by its filename).
TEXT_MEDIA_TYPES = ("text/", "application/json", "application/xml", "application/x-yaml", "application/yaml")
TEXT_EXTENSIONS = {
    ".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".jsonl", ".xml", ".yaml", ".yml", ".html", ".htm",
    ".py", ".js", ".ts", ".java", ".c", ".h", ".cpp", ".go", ".rs", ".rb", ".sh", ".sql", ".toml", ".ini", ".log",
}  # fmt: skip

logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about odd PDFs are not the server's to log


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
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise MediaError(field, "the PDF is encrypted")
        pages = reader.pages
        if len(pages) > policy.max_file_pages:
            raise MediaError(field, f"the PDF has {len(pages)} pages; at most {policy.max_file_pages} are read")
        texts = [page.extract_text() or "" for page in pages]
    except MediaError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as error:
        raise MediaError(field, f"the PDF could not be read: {error}") from error
    return "\n\n".join(text.strip() for text in texts if text.strip())
