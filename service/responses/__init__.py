"""The Responses API: conversations built from items, semantic stream events, and a response store."""
