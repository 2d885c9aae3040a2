"""What callers import: typed Python clients of ovserve, and the generated ovserve.v1 stubs (``clients.v1``)."""

from clients.client import AsyncOvserveClient, OvserveClient
from clients.errors import OvserveError, field_violations

__all__ = ["AsyncOvserveClient", "OvserveClient", "OvserveError", "field_violations"]
