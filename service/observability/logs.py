"""Log setup for the CLI: one line per event, with the request id of the call being served."""

from __future__ import annotations

import contextvars
import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s request_id=%(request_id)s %(message)s"

# The id of the request being served (the call policy sets it), for every log line written while serving it.
request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to every log record (use ``%(request_id)s`` in the format)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


def configure(level: str) -> None:
    """Log to stderr at ``level`` (DEBUG, INFO, WARNING, ERROR), each line carrying ``request_id=``."""
    logging.basicConfig(level=level.upper(), format=FORMAT)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RequestIdFilter())
