"""Tool formats of GLM-4-9B-chat (and GLM-4-0414) and ChatGLM3-6B: a call is a message whose first line names
the function (ovserve.service.parsing.calls_glm), where GLM-4.5 and later write ``<tool_call>`` blocks (glm45).

Each table here is merged into ovserve.service.parsing.formats' own (TOOL_PARSERS, REASONING_PARSERS, ALIASES and the
template markup tables), so a format is written once, here, and named on the command line like any other.
Their published templates write a past call from the message's ``metadata`` (the name) and content (the
arguments), not from OpenAI's ``tool_calls``: a call is found in them by the tool prompt they write, and past
calls reach them in their content (``OutputFormat.calls_in_content``), written as the model writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from ovserve.service.parsing.calls import Call
from ovserve.service.parsing.calls_glm import (
    CHATGLM3_CALL,
    CHATGLM3_FENCE,
    CHATGLM3_FENCE_END,
    GLM_MESSAGE,
    GLM_RESULT_ROLE,
    NamedMessageParser,
    chatglm3_calls,
    glm4_calls,
)
from ovserve.service.parsing.markup import CallMarkup, ThinkMarkup
from ovserve.service.parsing.tool_format import ToolFormat

# GLM-4-9B-chat: a message of its own per call, the name, a line break, the JSON arguments. The list opens with
# the message's role token as it does after text; at the reply's start (the prompt's own <|assistant|> before it)
# the parser reads a call without it too, as the model writes it there.
GLM4 = CallMarkup(GLM_MESSAGE, "{name}\n", "", GLM_MESSAGE, "", name="bare")
# ChatGLM3-6B: the same messages, the name, then a fenced Python call of tool_call with the arguments as keywords.
CHATGLM3 = CallMarkup(
    GLM_MESSAGE,
    f"{{name}}\n{CHATGLM3_FENCE}\n{CHATGLM3_CALL}(",
    f")\n{CHATGLM3_FENCE_END}",
    GLM_MESSAGE,
    "",
    "python",
)


def _named_messages(decode: Callable[[str, Collection[str]], list[Call] | None], markup: CallMarkup) -> ToolFormat:
    """Calls a message each, named on its first line, reading only the offered tools' names (as GLM's own
    server does: a first line naming none is text); a tool's result comes back in an observation turn
    (<|observation|>, the role their templates render it under)."""
    bodies = (CHATGLM3_FENCE,) if markup.arguments == "python" else ("{",)
    return ToolFormat(
        lambda ids, schemas: NamedMessageParser(lambda text: decode(text, schemas), ids, bodies, schemas),
        markup,
        typed=True,  # it reads the schemas: their names
        result_role=GLM_RESULT_ROLE,
    )


# --tool-parser name -> its format.
TOOL_FORMATS: dict[str, ToolFormat] = {
    "glm4": _named_messages(glm4_calls, GLM4),
    "chatglm3": _named_messages(chatglm3_calls, CHATGLM3),
}
REASONING_FORMATS: dict[str, ThinkMarkup] = {}
# Format name -> the families it serves (README's table of formats: ovserve.service.parsing.formats_table).
TOOL_FAMILIES: dict[str, str] = {
    "glm4": "GLM-4-9B-chat (and -hf, -1m), GLM-4-0414, GLM-Z1 (the name on the message's first line, then JSON)",
    "chatglm3": "ChatGLM3-6B (by name: its template shows no tools)",
}
REASONING_FAMILIES: dict[str, str] = {}
# Other servers' names for these formats (vLLM and SGLang read neither; their "glm4*" parsers are GLM-4.5's).
ALIASES: dict[str, dict[str, str]] = {"tool": {}, "reasoning": {}}
# Template markup (a string, or several that must all appear) -> the parser it calls for (checked after
# formats.py's own entries). GLM-4's tool prompt, in every published copy, ends each tool with this sentence
# ("when calling the function above, write its arguments as JSON").
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = [("请使用 Json 格式表示调用的参数", "glm4")]
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = []
