"""The PDF reader's child process: a PDF's bytes in, its text layer out, within bounds it cannot exceed.

pypdf runs here, not in the server: a small PDF can inflate into gigabytes of content streams, nest its page
tree thousands of levels deep, or make text extraction run for minutes, and all of that holds a GIL and heap
the server cannot get back from a thread. The parent (service/media/documents.py) starts one of these per
document, with a time limit it enforces by killing it; this process caps its own address space, pypdf's
decompression output, the pages read and the characters kept. Run as a script (``python -I pdf_reader.py``)
so it imports pypdf and the standard library only.

Protocol: stdin holds one JSON line of limits ({"max_pages", "max_chars", "memory_bytes", "stream_bytes"}),
then the PDF's bytes; stdout gets one JSON object, {"text": ...} or {"error": ...} (a message for the client).
"""

from __future__ import annotations

import io
import json
import logging
import resource
import sys
from typing import Any


def limit_memory(memory_bytes: int) -> None:
    """Cap this process's address space: past it allocations fail (MemoryError) instead of growing the box."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


_ALSO_BOUNDED = ("maximum_declared_stream_length", "image_maximum_buffer_size")


def limit_streams(stream_bytes: int) -> None:
    """Cap what pypdf inflates from one stream, for every filter (pypdf 7's Configuration bounds them all; its
    defaults, 75 MB a stream, let a 72 KB page decompress into 70 MB of text)."""
    import pypdf

    defaults = pypdf.get_configuration()
    pypdf.overwrite_configuration(
        **{
            name: min(getattr(defaults, name), stream_bytes)
            for name in vars(defaults)
            if name.endswith("_output_length") or name in _ALSO_BOUNDED
        }
    )


def read(data: bytes, max_pages: int, max_chars: int) -> dict[str, Any]:
    """{"text": the pages' text} or {"error": why it cannot be read}."""
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.CRITICAL)  # its warnings about odd PDFs are noise here
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            return {"error": "the PDF is encrypted"}
        pages = reader.pages
        if len(pages) > max_pages:
            return {"error": f"the PDF has {len(pages)} pages; at most {max_pages} are read"}
        texts, length = [], 0
        for page in pages:
            text = (page.extract_text() or "").strip()
            length += len(text)
            if length > max_chars:
                return {"error": f"the PDF's text is longer than {max_chars} characters (--max-file-chars)"}
            if text:
                texts.append(text)
    except MemoryError:
        return {"error": "the PDF needs more memory to read than a document may take"}
    except LimitReachedError as error:  # a bomb: a stream inflating past its bound, a page tree too deep
        return {"error": f"the PDF is past the limits of what is read: {error}"}
    except RecursionError:
        return {"error": "the PDF could not be read: its objects are nested too deeply"}
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as error:
        return {"error": f"the PDF could not be read: {error}"}
    return {"text": "\n\n".join(texts)}


def main() -> None:
    """Read the limits and the PDF from stdin, write the answer to stdout."""
    limits = json.loads(sys.stdin.buffer.readline())
    data = sys.stdin.buffer.read()
    limit_memory(limits["memory_bytes"])
    limit_streams(limits["stream_bytes"])
    try:
        answer = read(data, limits["max_pages"], limits["max_chars"])
    except MemoryError:
        answer = {"error": "the PDF needs more memory to read than a document may take"}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
