"""A JSON Schema ``pattern`` -> the XGrammar EBNF expression of the JSON string contents it fully matches.

Our own small parser for the regular subset structured outputs document: literals, escaped
punctuation and ``\\t \\n \\r \\f \\v \\xhh \\uhhhh``, classes (``[a-z_]``, ``[^,]``, with ``\\d \\w \\s``
inside positive ones), ``\\d \\w \\s``, ``.``, groups (``(...)``, ``(?:...)``, named), alternation,
the quantifiers ``* + ? {m} {m,} {m,n}`` (lazy forms too: a full match does not care), and ``^`` /
``$`` (or ``\\A`` / ``\\Z``) at the very start and end. Anything else (lookarounds, backreferences,
word boundaries, flags, possessive quantifiers, ``\\D \\W \\S``, anchors inside) raises
:class:`PatternError`: a construct we do not translate is refused, never approximated.

Semantics are Python's ``re.fullmatch`` for the subset (JSON Schema patterns are unanchored searches;
a full match is a valid subset). Everything is written in the alphabet JSON strings hold unescaped
(no quotes, backslashes or control characters): classes are narrowed to it, and a literal control
character in the pattern is written as its JSON escape. ``\\s`` is a space for the same reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from ovserve.service.structured.limits import MAX_PATTERN_LENGTH, MAX_PATTERN_REPEAT

# What a JSON string may hold unescaped; "." and negated classes are written in that alphabet.
SAFE = '^"\\\\\\x00-\\x1f'
CATEGORIES = {  # \d \w \s as code point ranges (ASCII: what JSON Schema's ECMA-262 regexes mean)
    "d": [(48, 57)],
    "w": [(48, 57), (65, 90), (97, 122), (95, 95)],
    "s": [(32, 32)],
}
ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v"}  # single-character escapes
HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}  # \xhh, \uhhhh, \Uhhhhhhhh: the number of hex digits
QUANTIFIERS = {"*": (0, None), "+": (1, None), "?": (0, 1)}
REFUSED_ESCAPES = {  # letters with a meaning outside the subset: refused with the reason
    "b": "word boundaries", "B": "word boundaries", "A": "anchors inside a pattern",
    "Z": "anchors inside a pattern", "z": "anchors inside a pattern", "D": "negated categories",
    "W": "negated categories", "S": "negated categories", "N": "named characters", "p": "Unicode properties",
    "P": "Unicode properties", "k": "backreferences",
}  # fmt: skip


class PatternError(ValueError):
    """A pattern outside the subset, or not a valid regular expression; the message says which."""


@dataclass
class _Reader:
    """The pattern and a position in it."""

    text: str
    at: int = 0

    def peek(self, ahead: int = 0) -> str:
        index = self.at + ahead
        return self.text[index] if index < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise PatternError("unexpected end of pattern")
        self.at += 1
        return char

    def fail(self, message: str) -> PatternError:
        return PatternError(f"{message} at position {self.at}")


def regex_expression(pattern: str) -> str:
    """The EBNF expression for the JSON string contents that fully match ``pattern`` (see the module doc)."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"{len(pattern)} characters; at most {MAX_PATTERN_LENGTH} are accepted")
    reader = _Reader(pattern)
    expression, _weight = _alternation(reader, top=True)
    if reader.peek():  # only an unmatched ")" stops the top level early
        raise reader.fail("unbalanced parenthesis")
    return expression or '""'


# Each part returns its expression and its weight: the largest product of nested repeat bounds in it,
# which is what the engine's grammar compiler may expand (see MAX_PATTERN_REPEAT).
Part = tuple[str, int]


def _alternation(reader: _Reader, top: bool = False) -> Part:
    """Branches separated by "|", up to ")" or the end; at the ``top`` level, branches may be anchored."""
    branches = [_sequence(reader, top)]
    while reader.peek() == "|":
        reader.take()
        branches.append(_sequence(reader, top))
    weight = max(w for _, w in branches)
    if len(branches) == 1:
        return branches[0][0], weight
    return "(" + " | ".join(branch or '""' for branch, _ in branches) + ")", weight


def _sequence(reader: _Reader, top: bool) -> Part:
    parts: list[str] = []
    text = ""  # consecutive plain characters, written as one literal
    weight = 1
    start = reader.at
    while reader.peek() not in ("", "|", ")"):
        if top and _anchor(reader, start):  # a full match is anchored anyway
            continue
        atom, char, inner = _atom(reader)
        bounds = _quantifier(reader)
        if bounds is None and char is not None:
            text += char
            continue
        if text:
            parts.append(_literal(text))
            text = ""
        if bounds is not None:
            atom, inner = _repeat(atom, inner, *bounds, reader)
        weight = max(weight, inner)
        if atom:
            parts.append(atom)
    if text:
        parts.append(_literal(text))
    return " ".join(parts), weight


def _anchor(reader: _Reader, start: int) -> bool:
    """Skip "^" / "\\A" at the start of a top-level branch or "$" / "\\Z" at its end; whether one was there."""
    for anchor, at_start in (("^", True), ("\\A", True), ("$", False), ("\\Z", False)):
        if not reader.text.startswith(anchor, reader.at):
            continue
        after = reader.peek(len(anchor))
        if (reader.at == start) if at_start else after in ("", "|"):
            reader.at += len(anchor)
            return True
    return False


def _atom(reader: _Reader) -> tuple[str, str | None, int]:
    """One atom: its expression, its character when it is one plain character (literals merge), its weight."""
    char = reader.take()
    if char == "(":
        expression, weight = _group(reader)
        return expression, None, weight
    if char == "[":
        return _class(reader), None, 1
    if char == ".":
        return f"[{SAFE}]", None, 1
    if char in "*+?":
        raise reader.fail(f"nothing to repeat before {char!r}")
    if char in "^$":
        raise reader.fail("anchors are supported only at the start and end of a pattern")
    if _bounds_ahead(reader, reader.at - 1) is not None:
        raise reader.fail("nothing to repeat before '{'")
    if char != "\\":
        return _literal(char), char, 1
    escape = reader.take()
    if escape in CATEGORIES:
        return _ranges(CATEGORIES[escape], reader), None, 1
    single = _escape_char(escape, reader)
    return _literal(single), single, 1


def _escape_char(escape: str, reader: _Reader) -> str:
    """The character an escape (after its backslash) stands for, where it stands for one."""
    if escape in ESCAPES:
        return ESCAPES[escape]
    if escape in HEX_ESCAPES:
        digits = "".join(reader.take() for _ in range(HEX_ESCAPES[escape]))
        if not all(digit in "0123456789abcdefABCDEF" for digit in digits) or int(digits, 16) > 0x10FFFF:
            raise reader.fail(f"bad escape \\{escape}{digits}")
        return chr(int(digits, 16))
    if escape in REFUSED_ESCAPES:
        raise reader.fail(f"\\{escape}: {REFUSED_ESCAPES[escape]} are not supported in patterns")
    if escape.isdigit():
        raise reader.fail("backreferences and octal escapes are not supported in patterns")
    if escape.isascii() and escape.isalpha():
        raise reader.fail(f"bad escape \\{escape}")
    return escape  # escaped punctuation (or any other non-letter) is itself


def _group(reader: _Reader) -> Part:
    """A group's expression, after its "(" (capturing or not: the same full matches)."""
    if reader.peek() == "?":
        reader.take()
        kind = reader.take()
        if kind == "P" and reader.peek() == "<":
            reader.take()
            _group_name(reader)
        elif kind == "<" and reader.peek() not in ("=", "!"):
            _group_name(reader)
        elif kind != ":":
            raise reader.fail(
                "only (?:...) and named groups are supported in patterns, "
                "not lookarounds, backreferences, flags or conditionals"
            )
    body, weight = _alternation(reader)
    if reader.peek() != ")":
        raise reader.fail("missing ), unterminated subpattern")
    reader.take()
    return "(" + (body or '""') + ")", weight


def _group_name(reader: _Reader) -> None:
    name = ""
    while reader.peek() not in ("", ">"):
        name += reader.take()
    if not name.isidentifier() or reader.take() != ">":
        raise reader.fail("bad group name")


def _class(reader: _Reader) -> str:
    """A class's expression, after its "[": narrowed to what JSON writes unescaped."""
    negate = reader.peek() == "^"
    if negate:
        reader.take()
    ranges: list[tuple[int, int]] = []
    first = True  # "]" first is a member, as in Python
    while first or reader.peek() != "]":
        if not reader.peek():
            raise reader.fail("unterminated character set")
        first = False
        low = _class_item(reader, ranges, negate)
        ranged = reader.peek() == "-" and reader.peek(1) not in ("]", "")
        if ranged and low is None:
            raise reader.fail("bad character range: a category cannot start a range")
        if low is None:
            continue
        if ranged:
            reader.take()
            high = _class_item(reader, ranges, negate)
            if high is None or high < low:
                raise reader.fail("bad character range")
            ranges.append((low, high))
        else:
            ranges.append((low, low))
    reader.take()
    if negate:
        return f"[{SAFE}{''.join(_class_range(span) for span in ranges)}]"
    return _ranges(ranges, reader)


def _class_item(reader: _Reader, ranges: list[tuple[int, int]], negate: bool) -> int | None:
    """One class member: its code point, or None for a category (added to ``ranges`` directly)."""
    char = reader.take()
    if char != "\\":
        return ord(char)
    escape = reader.take()
    if escape in CATEGORIES:
        if negate:
            raise reader.fail(f"\\{escape} in a negated class is not supported in patterns")
        ranges += CATEGORIES[escape]
        return None
    if escape == "b":
        return 8  # backspace inside a class, as in Python
    return ord(_escape_char(escape, reader))


def _ranges(ranges: list[tuple[int, int]], reader: _Reader) -> str:
    safe = [piece for span in ranges for piece in _json_safe(span)]
    if not safe:
        raise reader.fail("a character class holds only characters JSON must escape")
    return f"[{''.join(_class_range(span) for span in safe)}]"


def _quantifier(reader: _Reader) -> tuple[int, int | None] | None:
    """The bounds of the quantifier after an atom, if there is one (a lazy "?" after it is read too)."""
    char = reader.peek()
    bounds = QUANTIFIERS.get(char) or _bounds_ahead(reader, reader.at)
    if bounds is None:
        return None
    reader.at = reader.text.index("}", reader.at) + 1 if char == "{" else reader.at + 1
    if reader.peek() == "?":  # lazy: the same full matches
        reader.take()
    elif reader.peek() == "+":
        raise reader.fail("possessive quantifiers are not supported in patterns")
    if QUANTIFIERS.get(reader.peek()) or _bounds_ahead(reader, reader.at):
        raise reader.fail("multiple repeat")
    return bounds


def _bounds_ahead(reader: _Reader, at: int) -> tuple[int, int | None] | None:
    """``{m}``, ``{m,}``, ``{,n}`` or ``{m,n}`` at ``at`` (not consumed); None where "{" is a plain character."""
    end = reader.text.find("}", at)
    if reader.text[at : at + 1] != "{" or end < 0:
        return None
    low, comma, high = reader.text[at + 1 : end].partition(",")
    if not (low.isdecimal() or (comma and not low)) or not (high.isdecimal() or not high) or not (low or high):
        return None  # "{x}", "{}" and "{,}" are plain text, as in Python
    lower = int(low) if low else 0
    upper = (int(high) if high else None) if comma else lower
    if upper is not None and upper < lower:
        raise reader.fail("min repeat greater than max repeat")
    return lower, upper


def _repeat(atom: str, inner: int, low: int, high: int | None, reader: _Reader) -> Part:
    """``atom`` repeated, and its weight: bounds multiplied through nested repeats, at most MAX_PATTERN_REPEAT."""
    weight = max(low, high or 0, 1) * inner
    if weight > MAX_PATTERN_REPEAT:
        raise reader.fail(f"repeat bounds multiply to {weight} (nested ones included); at most {MAX_PATTERN_REPEAT}")
    if not atom:
        return "", weight
    if high is None:
        return (f"{atom}{{{low},}}" if low > 1 else f"{atom}{'+' if low else '*'}"), weight
    if high == low:
        return (f"{atom}{{{low}}}" if low else ""), weight
    return (f"{atom}?" if (low, high) == (0, 1) else f"{atom}{{{low},{high}}}"), weight


def _literal(text: str) -> str:
    """An EBNF literal for ``text`` as JSON writes it inside a string (control characters escaped)."""
    return json.dumps(json.dumps(text, ensure_ascii=False)[1:-1], ensure_ascii=False)


def _json_safe(span: tuple[int, int]) -> Iterator[tuple[int, int]]:
    """The part of a code point range JSON writes unescaped (no controls, '"' or '\\')."""
    low, high = max(span[0], 0x20), span[1]
    for cut in (0x22, 0x5C):
        if low <= cut <= high:
            if low < cut:
                yield (low, cut - 1)
            low = cut + 1
    if low <= high:
        yield (low, high)


def _class_range(span: tuple[int, int]) -> str:
    low, high = span
    return _class_char(low) if low == high else f"{_class_char(low)}-{_class_char(high)}"


def _class_char(code: int) -> str:
    char = chr(code)
    if char.isascii() and char.isalnum():
        return char
    return f"\\u{code:04x}" if code <= 0xFFFF else char
