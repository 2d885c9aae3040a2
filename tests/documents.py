"""Documents made in the tests: small PDFs with a text layer, written object by object (pypdf reads PDFs; it
does not lay out text)."""

from __future__ import annotations

import base64
import io
import zlib

from pypdf import PdfReader, PdfWriter


def pdf(pages: list[str]) -> bytes:
    """A PDF whose page i shows the text ``pages[i]`` in Helvetica (ASCII without parentheses or backslashes)."""
    first_page = 4  # objects 1-3: catalog, page tree, font; then a page and its content stream per page
    kids = " ".join(f"{first_page + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {first_page + 2 * i + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    return _objects_pdf(objects)


def encrypted(document: bytes) -> bytes:
    """``document`` encrypted with a password."""
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(document)))
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def data_url(data: bytes, media_type: str) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def _objects_pdf(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (numbered from 1; object 1 the catalog), with its cross-reference table."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, table)
    return bytes(out)


def inflating(text_bytes: int) -> bytes:
    """A one-page PDF of a few kilobytes whose compressed content stream shows ``text_bytes`` of text."""
    line = b"BT /F1 12 Tf 72 720 Td (" + b"A" * 1000 + b") Tj ET\n"
    stream = zlib.compress(line * (text_bytes // 1000), 9)
    return _objects_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents 5 0 R >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        ]
    )


def deep(levels: int) -> bytes:
    """A PDF whose page tree nests ``levels`` Pages nodes above its one page."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(levels):  # node 2 + level; its kid is the next node, the last one's kid the page
        number = 2 + level
        parent = b"" if level == 0 else b" /Parent %d 0 R" % (number - 1)
        objects.append(b"<< /Type /Pages /Kids [%d 0 R] /Count 1%s >>" % (number + 1, parent))
    objects.append(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] >>" % (levels + 1))
    return _objects_pdf(objects)
