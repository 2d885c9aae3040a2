"""ovserve.v1 replies -> OpenAI JSON objects (plain dicts, ready for one ``json.dumps``), one module per API.

Written by hand rather than with ``json_format.MessageToDict``: proto JSON prints int64 as strings and enums as
their names, leaves out empty fields OpenAI always has (``logprobs: null``, ``finish_reason: null``), and is
slow; stream chunks and events are rendered once per SSE event, so each renderer does only the work it needs.
"""
