"""Log setup for the CLI: one line per event, with the request id of the call being served."""

from __future__ import annotations

import logging

from service.interceptors import RequestIdFilter

FORMAT = "%(asctime)s %(levelname)s %(name)s request_id=%(request_id)s %(message)s"


def configure(level: str) -> None:
    """Log to stderr at ``level`` (DEBUG, INFO, WARNING, ERROR), each line carrying ``request_id=``."""
    logging.basicConfig(level=level.upper(), format=FORMAT)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RequestIdFilter())
