"""GLM-4-9B-chat's and ChatGLM3's calls: a message whose first line names the function, no tag around it.

These models write every message of a reply as ``METADATA\\nBODY`` after the role token: a text message has an
empty metadata line (the text starts after a line break), a call names its function there::

    GLM-4-9B-chat, GLM-4-0414   get_weather\\n{"city": "Paris", "days": 3}
    ChatGLM3-6B                 get_weather\\n```python\\ntool_call(city="Paris", days=3)\\n```

A second message of the same reply (text, then a call; or a second call) follows ``<|assistant|>`` again, and
the model stops at ``<|observation|>``, its stop token, where the tool's result goes. The decoders return None
on anything that is not exactly such calls, so the caller keeps it as content; they only split and partition
the text (linear, no regular expressions) and read the bodies with the JSON and Python-syntax readers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from ovserve.service.parsing.calls import Call, json_object
from ovserve.service.parsing.calls_python import python_call_lines
from ovserve.service.parsing.pieces import Piece
from ovserve.service.parsing.tools import CallIds, Decoder, TrailingCallParser

GLM_MESSAGE = "<|assistant|>"  # opens each further message of the reply (a special token the engine keeps)
GLM_RESULT_ROLE = "observation"  # the role of a tool's result message: <|observation|>, where the model stops
CHATGLM3_FENCE, CHATGLM3_FENCE_END = "```python", "```"  # ChatGLM3 fences its call's Python code
CHATGLM3_CALL = "tool_call"  # the function ChatGLM3's fenced code calls, its keywords the arguments
MAX_NAME_CHARS = 256  # a first line longer than this is text: what is held back at the reply's start is bounded
# What a function's name is made of (OpenAI's letters, digits, "_" and "-", and "."): a first line with anything
# else (a colon, a fence's backticks) is text.
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
BodyReader = Callable[[str], str | None]  # a call's body -> its arguments' JSON text; None when it holds none


def glm4_calls(text: str, names: Collection[str] = ()) -> list[Call] | None:
    """GLM-4's calls: each ``NAME\n{JSON arguments}``, several a message each after ``<|assistant|>``; with
    ``names`` (the offered tools'), only calls of those."""
    return _messages(text, json_object, names)


def chatglm3_calls(text: str, names: Collection[str] = ()) -> list[Call] | None:
    """ChatGLM3's calls: each ``NAME\n```python\ntool_call(key=value, ...)\n````` , a message each."""
    return _messages(text, _tool_call_keywords, names)


def _messages(text: str, arguments: BodyReader, names: Collection[str]) -> list[Call] | None:
    """The calls of messages that all name a function on their first line (one of ``names``, when given), their
    bodies read by ``arguments``."""
    calls: list[Call] = []
    for message in text.strip().removeprefix(GLM_MESSAGE).split(GLM_MESSAGE):
        name, newline, body = message.strip().partition("\n")
        try:
            read = arguments(body) if newline and is_name(name, names) else None
        except RecursionError:  # JSON nested past the decoder's stack: a model's output is untrusted text
            return None
        if read is None:
            return None
        calls.append((name, read))
    return calls or None


def _tool_call_keywords(body: str) -> str | None:
    """The arguments of ChatGLM3's fenced ``tool_call(...)`` as JSON text; None for any other body."""
    code = body.strip()
    if not (code.startswith(CHATGLM3_FENCE) and code.endswith(CHATGLM3_FENCE_END)):
        return None
    calls = python_call_lines(code[len(CHATGLM3_FENCE) : len(code) - len(CHATGLM3_FENCE_END)])
    if calls is None or len(calls) != 1 or calls[0][0] != CHATGLM3_CALL:
        return None
    return calls[0][1]


def is_name(line: str, names: Collection[str] = ()) -> bool:
    """Whether a message's first line names a function: one of ``names`` when given, else any name."""
    if names:
        return line in names
    return 0 < len(line) <= MAX_NAME_CHARS and all(char in NAME_CHARS for char in line)


def opens_call(head: str, bodies: tuple[str, ...], names: Collection[str] = ()) -> bool | None:
    """Whether a reply starting with ``head`` (leading whitespace aside) is a call: a name (one of ``names``, when
    given) alone on its first line, then a body opening with one of ``bodies``. None while ``head`` may still
    become one either way."""
    stripped = head.lstrip()
    if len(head) - len(stripped) > MAX_NAME_CHARS:
        return False
    line, newline, rest = stripped.partition("\n")
    if not line:
        return None
    if not newline:  # a name's start, if any
        return None if is_name(line) and (not names or any(name.startswith(line) for name in names)) else False
    if not is_name(line, names):
        return False
    body = rest.lstrip()
    if any(body.startswith(opening) for opening in bodies):
        return True
    return None if any(opening.startswith(body) for opening in bodies) and len(rest) <= MAX_NAME_CHARS else False


class NamedMessageParser(TrailingCallParser):
    """A GLM reply: calls from its start (a name on the first line, then the body) or from an ``<|assistant|>``
    after its text, to the end of the output. A text reply's leading line break (its empty metadata line) is not
    content; only the first word is held back while the start is unknown. ``names``: the offered tools' (as
    GLM's own server reads a call only of an offered tool); none given, any name."""

    def __init__(self, decode: Decoder, ids: CallIds, bodies: tuple[str, ...], names: Collection[str] = ()) -> None:
        super().__init__(decode, ids, (), (GLM_MESSAGE,))
        self._bodies, self._names = bodies, names
        self._head: str | None = ""  # the reply so far while it may still open with a call; None after

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta of content text."""
        if self._head is None:
            return super().feed(text)
        self._head += text
        opened = opens_call(self._head, self._bodies, self._names)
        if opened is None:
            return []
        held, self._head = self._head.lstrip(), None
        if opened:
            self._state = "calls"  # TrailingCallParser's: held to the end and decoded whole
        return super().feed(held)

    def finish(self) -> list[Piece]:
        """Decode the held calls (or return them as text), at the end of the output."""
        if self._head is not None:  # a reply that ended while its start was unknown: text
            held, self._head = self._head.lstrip(), None
            return super().feed(held) + super().finish()
        return super().finish()
