"""How large an output constraint may be: every limit on schemas, patterns, choices and structural tags.

Each constraint becomes a grammar the engine compiles before the request runs, and a compile
blocks the engine step of every request in the batch; an unbounded schema is also work for
``jsonschema`` and the grammar builder. So each dimension a client controls has a limit, checked
before the expensive part, and a request beyond one is refused naming the field and the limit
(INVALID_ARGUMENT / HTTP 400). The values come from measurements on this kind of machine (2 cores,
the bundled tiny-chat; see the commit that set them) and from what OpenAI documents for strict
structured outputs (5,000 properties in all, 10 levels of nesting, 1,000 enum values): generous for
real agents' schemas, far below what hurts the engine.
"""

from __future__ import annotations

KIB = 1024

# A schema's compact JSON text (a tool's parameters, a response_format schema), descriptions included.
# Checked first, by a walk that stops where it is crossed (a 1.2 MB schema is refused in 3 ms), because
# the meta-schema check that follows costs ~1.1 ms per KiB (292 ms at 265 KiB): 128 KiB keeps it near
# 150 ms, and real tool schemas are a few KiB.
MAX_SCHEMA_BYTES = 128 * KIB
# JSON nesting of a schema document (objects and arrays; a nested object property takes 2 levels).
# The builder, the meta-schema check and canonical ordering all recurse. 24 levels is 12 nested
# objects, above OpenAI's 10; protobuf itself refuses a Struct past ~33 levels (its recursion limit
# of 100 messages), so this is the limit a gRPC or HTTP client meets, with the field named.
MAX_SCHEMA_DEPTH = 24
# Declared properties of one object. Measured on tiny-chat: 1,000 optional properties write 114 KB of
# grammar that compiles in 0.34 s, 2,000 write 232 KB in 0.72 s; so 1,000 (with room to 1,024) passes.
MAX_OBJECT_PROPERTIES = 1024
# Declared properties in one grammar (all objects, all tools of a forced tool call): ~0.7 s of compile.
MAX_TOTAL_PROPERTIES = 2048
# Alternatives of one enum, anyOf / oneOf, and guided_choice: OpenAI allows 1,000 enum values;
# 1,024 enum strings compile in 0.03 s.
MAX_ALTERNATIVES = 1024
# minItems / maxItems / minLength / maxLength: written as {m,n} over a rule, which XGrammar compiles
# without expanding (char{0,65536} in 0.04 s; arrays of 4,096 strings of 4,096 in 0.02 s). 65,536
# characters or items is past any output a request can produce.
MAX_REPEAT = 65536
# A pattern's {m,n} bounds multiplied through its nested repeats: XGrammar expands nested bounded
# repeats over character classes, ([a-z]{0,256} ","){0,256} took 9 s, ([a-z]{0,256} ","){0,16} 0.26 s.
MAX_PATTERN_REPEAT = 4096
# A pattern (JSON Schema ``pattern``) or a guided_regex, in characters: real ones are under 200.
MAX_PATTERN_LENGTH = 1024
# The EBNF text of one request's grammar (all tools together): compile time grows with it, ~0.3 s per
# 100 KiB on tiny-chat (more with a larger vocabulary), and a compile stalls the whole batch.
MAX_GRAMMAR_BYTES = 256 * KIB
# guided_choice: all choices' UTF-8 bytes together (their count is MAX_ALTERNATIVES).
MAX_CHOICE_BYTES = 64 * KIB
# response_format structural_tag: the serialized format / structures (each holding schemas and
# grammars, as a schema), and how many structures and triggers (each a tag the compiler dispatches on).
MAX_STRUCTURAL_TAG_BYTES = MAX_SCHEMA_BYTES
MAX_STRUCTURES = 128
