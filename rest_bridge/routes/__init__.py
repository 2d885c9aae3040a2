"""The bridge's routes, one module per OpenAI resource; each holds its handlers and its ``ROUTES`` (paths under
each of ``app.PREFIXES``), which ``app`` puts together."""
