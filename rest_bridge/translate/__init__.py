"""OpenAI request bodies -> ovserve.v1 request messages, one flow for every route.

``body``: bytes -> a JSON object (content type, syntax, values the service can take);
``proto_json``: OpenAI's polymorphic fields in the proto's form, every key and JSON type checked (400s name the
field in OpenAI's terms); ``message``: the checked proto JSON -> the request message, and the two flows routes
call (``message_from_body``, and ``streamable_from_body`` for bodies with ``stream``); ``query``: the query strings
of list and get routes. ``completions`` and ``responses`` hold what is particular to those bodies.
"""
