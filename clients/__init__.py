"""What callers import: typed Python clients of ovserve, and the generated ovserve.v1 stubs (``ovserve.clients.v1``)."""

from ovserve.clients.client import AsyncOvserveClient, OvserveClient
from ovserve.clients.errors import OvserveError, field_violations

__all__ = ["AsyncOvserveClient", "OvserveClient", "OvserveError", "field_violations"]
