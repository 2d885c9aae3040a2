"""Documents in requests: PDFs' text layers and UTF-8 text files become text; every other kind of file, and
every unreadable one, is refused naming the part (ovserve.service.media.documents, ovserve.service.api.media_parts)."""

from __future__ import annotations

import asyncio
import base64

import pytest

from ovserve.service.api.media_parts import MediaParts
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.media import MediaError, MediaPolicy, documents
from ovserve.service.media.documents import document_text
from tests.documents import data_url, deep, encrypted, inflating, pdf

FIELD = "messages[0].content_parts[0].file"
POLICY = MediaPolicy(max_file_pages=3, max_file_bytes=50_000)


def test_a_pdf_gives_its_pages_text_and_text_files_their_utf8() -> None:
    text = document_text(FIELD, pdf(["Page one says plum.", "Page two says pear."]), "", "a.pdf", POLICY)
    assert text == "Page one says plum.\n\nPage two says pear."
    assert document_text(FIELD, "naïve ☃".encode(), "text/plain", "", POLICY) == "naïve ☃"
    assert document_text(FIELD, b'{"a": 1}', "", "data.json", POLICY) == '{"a": 1}'
    assert document_text(FIELD, b"\xef\xbb\xbfwith BOM", "", "x.md", POLICY) == "with BOM"


BAD = {
    "not a document": (b"\x89PNG\r\n\x1a\n0000", "image/png", "", "unsupported file type (image/png)"),
    "unknown extension": (b"\x00\x01", "", "a.bin", "unsupported file type (.bin)"),
    "not utf-8": (b"caf\xe9", "text/plain", "", "not UTF-8"),
    "corrupt pdf": (b"%PDF-1.4\nnothing here", "", "a.pdf", "could not be read"),
    "truncated pdf": (pdf(["Hello"])[:120], "", "a.pdf", "could not be read"),
    "encrypted pdf": (encrypted(pdf(["Hello"])), "", "a.pdf", "encrypted"),
    "too many pages": (pdf(["a", "b", "c", "d"]), "", "a.pdf", "4 pages; at most 3"),
    "a stream inflating to 40 MB": (inflating(40_000_000), "", "a.pdf", "Limit reached while decompressing"),
    "a page tree 5,000 levels deep": (deep(5000), "", "a.pdf", "Maximum page tree depth reached"),
}


@pytest.mark.parametrize("kind", BAD)
def test_bad_documents_are_refused(kind: str) -> None:
    data, media_type, name, expected = BAD[kind]
    with pytest.raises(MediaError) as raised:
        document_text(FIELD, data, media_type, name, POLICY)
    assert raised.value.field == FIELD and expected in raised.value.message


def test_a_pdf_is_read_within_its_characters_time_and_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bound ends the read with its own message; the server process never holds the document's pages."""
    two_kb = inflating(2_000)
    assert len(document_text(FIELD, two_kb, "", "a.pdf", POLICY)) == 2_000
    with pytest.raises(MediaError, match=r"longer than 1999 characters \(--max-file-chars\)"):
        document_text(FIELD, two_kb, "", "a.pdf", MediaPolicy(max_file_chars=1_999))
    with pytest.raises(MediaError, match=r"took longer than 0.001 s to read \(--file-read-seconds\)"):
        document_text(FIELD, two_kb, "", "a.pdf", MediaPolicy(file_read_seconds=0.001))  # killed before it starts
    monkeypatch.setattr(documents, "PDF_READER_MEMORY_BYTES", 64 * 1024 * 1024)  # 20 MB of text needs more than this
    with pytest.raises(MediaError, match="needs more memory to read than a document may take"):
        document_text(FIELD, inflating(20_000_000), "", "a.pdf", MediaPolicy(max_file_chars=10**9))


def read(**part: str) -> str | list[FieldViolation]:
    """The message text one file part becomes, or the violations it raised."""
    parts, violations = MediaParts(None), []
    fields = {"data": "", "url": "", "file_id": "", "filename": "", **part}
    placeholder = parts.add_file(
        FIELD, fields["data"], fields["url"], fields["file_id"], fields["filename"], violations
    )
    if violations:
        return violations
    messages = asyncio.run(parts.with_files([{"role": "user", "content": f"Read this.\n{placeholder}"}], POLICY))
    return str(messages[0]["content"])


def test_file_parts_become_named_text_in_their_message() -> None:
    content = read(data=data_url(b"The word is plum.", "text/plain"), filename="note.txt")
    assert content == "Read this.\n[file note.txt]\nThe word is plum.\n[end of file]"
    bare = base64.b64encode(pdf(["From a PDF."])).decode()  # bare base64: the type from the bytes
    assert read(data=bare, filename="doc.pdf") == "Read this.\n[file doc.pdf]\nFrom a PDF.\n[end of file]"


def test_file_part_mistakes_name_the_field() -> None:
    with pytest.raises(InvalidArgument) as raised:
        read(file_id="file-abc")  # no Files API given (the server gives its own: tests/rest_bridge/test_files_api.py)
    assert raised.value.param == f"{FIELD}.file_id" and "not served here" in str(raised.value)
    assert read() == [FieldViolation(FIELD, "give exactly one of file_data, file_url and file_id")]
    assert read(data="data:text/plain;base64,aGk=", url="http://x/y") == read()
    assert read(data="data:text/plain;base64,aGk=", file_id="file-abc") == read()
    with pytest.raises(InvalidArgument) as raised:
        read(data=data_url(b"x" * 60_000, "text/plain"))
    assert raised.value.param == FIELD and "over 50000 bytes" in str(raised.value)
    with pytest.raises(InvalidArgument) as raised:
        read(url="http://example.com/a.pdf")
    assert raised.value.param == FIELD and "not accepted here" in str(raised.value)


def test_a_client_cannot_forge_a_placeholder() -> None:
    parts, violations = MediaParts(None), []
    placeholder = parts.add_file(FIELD, data_url(b"real", "text/plain"), "", "", "", violations)
    forged = placeholder.replace(placeholder.split("-")[2], "0" * 16)  # another nonce
    messages = asyncio.run(parts.with_files([{"role": "user", "content": forged}], POLICY))
    assert messages[0]["content"] == forged  # left as written: only this request's own placeholders are replaced
