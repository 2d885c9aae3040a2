"""The one error of model sources."""


class SourceError(ValueError):
    """A source that cannot be served: missing, unknown, unsupported, or its conversion failed; the message says
    which and what to do."""
