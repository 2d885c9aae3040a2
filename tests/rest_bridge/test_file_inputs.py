"""Documents through the openai client on the real pipeline: a chat ``file`` part and a Responses
``input_file`` reach the model as their extracted text, exactly: the prompt counts the same tokens as the same
text sent inline. A bad file is a 400 naming its part, and the server goes on serving."""

from __future__ import annotations

import openai
import pytest

from tests.documents import data_url, deep, inflating, pdf

NOTE = "The secret word is plum. Say it back."
PAGES = ["Chapter one: the plum.", "Chapter two: the pear."]


def inline(name: str, text: str) -> str:
    """How the server shows a file to the model (ovserve.service.api.media_parts)."""
    return f"[file {name}]\n{text}\n[end of file]"


def chat_prompt_tokens(client: openai.OpenAI, content: object) -> int:
    reply = client.chat.completions.create(
        model="tiny-chat", messages=[{"role": "user", "content": content}], max_tokens=2, temperature=0
    )  # type: ignore[call-overload]
    assert reply.usage is not None
    return reply.usage.prompt_tokens


def test_a_chat_file_part_is_its_text(client: openai.OpenAI) -> None:
    part = {"type": "file", "file": {"file_data": data_url(NOTE.encode(), "text/plain"), "filename": "note.txt"}}
    with_file = chat_prompt_tokens(client, [{"type": "text", "text": "Read:"}, part])
    as_text = chat_prompt_tokens(
        client, [{"type": "text", "text": "Read:"}, {"type": "text", "text": inline("note.txt", NOTE)}]
    )
    assert with_file == as_text


def test_a_responses_input_file_pdf_is_its_pages_text(client: openai.OpenAI) -> None:
    document = {"type": "input_file", "filename": "book.pdf", "file_data": data_url(pdf(PAGES), "application/pdf")}
    reply = client.responses.create(
        model="tiny-chat", input=[{"role": "user", "content": [document]}], max_output_tokens=4, temperature=0
    )  # type: ignore[call-overload]
    assert reply.status in ("completed", "incomplete") and reply.usage is not None
    text = inline("book.pdf", "\n\n".join(PAGES))
    same = client.responses.create(
        model="tiny-chat", input=[{"role": "user", "content": [{"type": "input_text", "text": text}]}],
        max_output_tokens=4, temperature=0,
    )  # fmt: skip
    assert same.usage is not None and reply.usage.input_tokens == same.usage.input_tokens
    items = client.responses.input_items.list(reply.id)
    [echoed] = items.data[0].content  # type: ignore[union-attr]
    assert echoed.type == "input_file" and echoed.filename == "book.pdf"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("file", "message"),
    [({"file_data": data_url(b"\x89PNG\r\n\x1a\n", "image/png"), "filename": "x.png"}, "unsupported file type"),
     ({"file_data": data_url(b"%PDF-1.4 broken", "application/pdf")}, "could not be read"),
     ({"file_data": data_url(inflating(40_000_000), "application/pdf")}, "past the limits of what is read"),
     ({"file_data": data_url(deep(5000), "application/pdf")}, "page tree depth"),
     ({"file_id": "file-123"}, "no file 'file-123'")],
)  # fmt: skip
def test_a_bad_file_is_a_400_naming_its_part(client: openai.OpenAI, file: dict[str, str], message: str) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        chat_prompt_tokens(client, [{"type": "file", "file": file}])
    error = raised.value.body
    assert isinstance(error, dict) and message in error["message"]
    assert str(error["param"]).startswith("messages[0].content[0].file")
    assert chat_prompt_tokens(client, "still serving?") > 0
