"""OpenAI's polymorphic request fields and the proto's two names for each: one table.

OpenAI JSON lets some request fields be a string or something else: ``stop``
a string or a list of strings, ``prompt`` a string or lists of strings or
token ids, a message's ``content`` a string or a list of parts, Responses
``input`` a string or a list of items, ``tool_choice`` a string or an object.
The proto keeps the string under the OpenAI name and gives the other form a
typed alternative (``stop_sequences``, ``prompts``, ``content_parts``,
``input_items``, ``output_parts``, ``named_tool_choice``).

``POLYMORPHIC_FIELDS`` drives every place that knows this:

- the REST bridge's OpenAI JSON -> proto JSON normalisation (``ovserve.rest_bridge.translate.proto_json``,
  ``ovserve.rest_bridge.translate.responses``) and the typed clients' request building
  (``ovserve.clients._requests``), both through ``normalise``;
- the way back, for errors: the service names proto paths (``stop_sequences[1]``),
  which ``openai_param`` and ``openai_text`` turn into what the client wrote
  (``stop``, ``stop[1]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor


class FormError(TypeError, ValueError):
    """A polymorphic field's value is in neither of its forms.

    ``param`` is the field's OpenAI path (``messages[2].content``). Both a
    TypeError (a value of the wrong shape, as the typed clients raise for a bad
    ``prompt``) and a ValueError (a bad value, as they raise for bad fields).
    """

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


def json_type(value: Any) -> str:
    """How OpenAI's error messages name the JSON type of ``value`` ("a string", "an array", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list | tuple) else "an object"


def is_token(value: object) -> bool:
    """A token id: an integer, and not a boolean (JSON's true is not 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_list(value: object) -> bool:
    return isinstance(value, list | tuple)


def _is_object(value: object) -> bool:
    return isinstance(value, Mapping)


def _as_list(value: Sequence[Any], path: str) -> list[Any]:
    return list(value)


def _as_object(value: Mapping[str, Any], path: str) -> dict[str, Any]:
    return dict(value)


def _strings(value: Sequence[Any], path: str) -> list[str]:
    if not all(isinstance(item, str) for item in value):
        raise FormError(path, f"{path} must be a string or a list of strings")
    return list(value)


_PROMPT_FORMS = "a string, a list of strings, a list of token ids or a list of token-id lists"


def _prompts(value: Sequence[Any], path: str) -> list[dict[str, Any]]:
    """OpenAI's list forms of ``prompt`` as proto Prompt JSON: one Prompt per string or token-id list."""
    if all(isinstance(item, str) for item in value):
        return [{"text": item} for item in value]
    if all(is_token(item) for item in value):
        return [{"token_ids": {"ids": list(value)}}]
    if all(_is_list(item) and all(map(is_token, item)) for item in value):
        return [{"token_ids": {"ids": list(item)}} for item in value]
    raise FormError(path, f"{path} must be {_PROMPT_FORMS}")


# A Prompt list's element paths -> OpenAI's: prompts[0].token_ids.ids[3] -> prompt[0][3], prompts[1].text -> prompt[1].
_PROMPT_PATHS = ((r"(\[\d+\])\.token_ids\.ids(\[\d+\])", r"\1\2"), (r"(\[\d+\])\.(?:text|token_ids)\b", r"\1"))


@dataclass(frozen=True)
class PolymorphicField:
    """One OpenAI field that is a string or another form, and the proto field that holds the other form."""

    openai: str  # OpenAI's name; the proto holds the string form under it
    proto: str  # the typed alternative, which holds the other form
    forms: str  # both forms, as an error message names them: "a string or a list of strings"
    is_typed: Callable[[object], bool]  # is a value the other form (a list, an object)?
    convert: Callable[[Any, str], Any]  # the other form (and its OpenAI path) -> the alternative's proto JSON
    # An error's param: a field inside a Responses input item or a message's
    # content part is named by its whole path (input[2].content[0].type,
    # messages[0].content[1].image_url: the part at fault); every other field by
    # itself (stop, not stop[1]).
    whole_path_param: bool = False
    # Paths inside one element of the alternative -> OpenAI's (prompts[0].token_ids.ids[3] -> prompt[0][3]).
    element_paths: tuple[tuple[str, str], ...] = ()

    def path(self, where: str) -> str:
        """This field's OpenAI path inside the object at ``where`` ("" for the request itself)."""
        return f"{where}.{self.openai}" if where else self.openai

    def normalise(self, body: dict[str, Any], where: str = "") -> None:
        """Move this field's other form in ``body`` to the typed alternative; a string (or null) stays.

        Raises FormError when the value is in neither form.
        """
        value = body.get(self.openai)
        if value is None or isinstance(value, str):
            return
        path = self.path(where)
        if not self.is_typed(value):
            raise FormError(path, f"{path} must be {self.forms}, got {json_type(value)}")
        body[self.proto] = self.convert(body.pop(self.openai), path)


POLYMORPHIC_FIELDS: tuple[PolymorphicField, ...] = (
    PolymorphicField("stop", "stop_sequences", "a string or a list of strings", _is_list, _strings),
    PolymorphicField(
        "prompt", "prompts", _PROMPT_FORMS,
        _is_list, _prompts,
        element_paths=_PROMPT_PATHS,
    ),
    PolymorphicField("content", "content_parts", "a string or a list of content parts", _is_list, _as_list,
                     whole_path_param=True),
    PolymorphicField("input", "input_items", "a string or a list of input items", _is_list, _as_list,
                     whole_path_param=True),
    PolymorphicField(  # embeddings' input: the same forms as a completion's prompt
        "input", "input_prompts", _PROMPT_FORMS,
        _is_list, _prompts,
        element_paths=_PROMPT_PATHS,
    ),
    PolymorphicField("output", "output_parts", "a string or a list of content parts", _is_list, _as_list),
    PolymorphicField("tool_choice", "named_tool_choice", "a string or an object", _is_object, _as_object),
)  # fmt: skip

# By OpenAI name, the first field of each name (Responses' ``input`` before embeddings').
BY_OPENAI_NAME = {field.openai: field for field in reversed(POLYMORPHIC_FIELDS)}
BY_PROTO_NAME = {field.proto: field for field in POLYMORPHIC_FIELDS}
TYPED_ALTERNATIVES = frozenset(BY_PROTO_NAME)  # proto names a client never writes: the OpenAI name carries both forms


def fields_of(descriptor: Descriptor) -> tuple[PolymorphicField, ...]:
    """The polymorphic fields of a proto message: those whose OpenAI name and alternative are both its fields."""
    names = descriptor.fields_by_name
    return tuple(field for field in POLYMORPHIC_FIELDS if field.openai in names and field.proto in names)


def normalise(body: dict[str, Any], descriptor: Descriptor, where: str = "") -> dict[str, Any]:
    """``body`` (JSON of the message ``descriptor``, at OpenAI path ``where``) with every other form moved.

    Changes and returns ``body``; raises FormError naming the first field in neither form.
    """
    for field in fields_of(descriptor):
        field.normalise(body, where)
    return body


# ---- the way back: proto paths in errors -> OpenAI's ----

# Paths the contract nests where OpenAI's body is flat: a Responses custom tool's grammar format is
# {"type": "grammar", "syntax", "definition"}; the contract nests the two under ``grammar``, as chat's format does
# (chat's path, tools[i].custom.format.grammar..., is OpenAI's already).
_FLATTENED: list[tuple[re.Pattern[str], str]] = [(re.compile(r"\b(tools\[\d+\]\.format)\.grammar\b"), r"\1")]
_TEXT_REWRITES: list[tuple[re.Pattern[str], str]] = [
    *(
        (re.compile(rf"\b{field.proto}{pattern}"), field.openai + replacement)
        for field in POLYMORPHIC_FIELDS
        for pattern, replacement in field.element_paths
    ),
    *((re.compile(rf"\b{field.proto}\b"), field.openai) for field in POLYMORPHIC_FIELDS),
    *_FLATTENED,
]


def openai_text(text: str) -> str:
    """``text`` with proto field paths rewritten to the OpenAI JSON paths the client sent."""
    for pattern, replacement in _TEXT_REWRITES:
        text = pattern.sub(replacement, text)
    return text


def openai_param(path: str | None) -> str | None:
    """OpenAI's ``param`` for a proto field path: ``stop_sequences[2]`` -> ``stop``.

    The first typed alternative on the path decides: its OpenAI name ends the
    param, or, for a field whose param is the whole path, the whole path is
    rewritten. A path without one is OpenAI's already, but for a nested one OpenAI writes flat (``_FLATTENED``).
    """
    if not path:
        return None
    for pattern, replacement in _FLATTENED:
        path = pattern.sub(replacement, path)
    segments = path.split(".")
    for position, segment in enumerate(segments):
        field = BY_PROTO_NAME.get(segment.split("[", 1)[0])
        if field is None:
            continue
        if field.whole_path_param:
            return openai_text(path)
        return field.path(".".join(segments[:position]))
    return path
