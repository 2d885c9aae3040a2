"""A request's keep-alive (Ollama's ``keep_alive``): how long its model stays loaded after it (issue 45).

Over gRPC a call carries it as metadata (``KEEP_ALIVE_KEY``); the REST bridge takes a body's ``keep_alive`` there.
Lives in ``clients`` because the server and the bridge both read it.
"""

from __future__ import annotations

import math
import re

#: gRPC metadata a call may carry: how long its model stays loaded after it, in seconds (Ollama's keep_alive: a
#: negative value keeps it loaded, 0 unloads it once idle). The REST bridge sends a body's ``keep_alive`` here.
KEEP_ALIVE_KEY = "ovserve-keep-alive"
#: The longest keep-alive taken as a time (a year); anything longer is "until unloaded", as a negative one is.
MAX_KEEP_ALIVE_S = 365 * 24 * 3600.0

# Go's time.Duration text as Ollama reads it ("5m", "1h30m", "90s", "-1m", "250ms"); a bare number is seconds.
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_KEEP_ALIVE_TEXT = 32


def keep_alive_seconds(value: object) -> float:
    """A keep-alive as seconds: a number (seconds) or Go duration text ("5m", "1h30m", "-1"); negative or beyond
    a year: kept until unloaded (``math.inf``). ValueError saying what is wrong otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError('expected a number of seconds or a duration such as "5m"')
    if isinstance(value, str):
        value = _duration(value)
    seconds = float(value)
    if math.isnan(seconds):
        raise ValueError("expected a number of seconds, not NaN")
    return math.inf if seconds < 0 or seconds > MAX_KEEP_ALIVE_S else seconds


def _duration(text: str) -> float:
    text = text.strip()
    if len(text) > MAX_KEEP_ALIVE_TEXT:
        raise ValueError(f'a duration of at most {MAX_KEEP_ALIVE_TEXT} characters, such as "5m"')
    try:
        return float(text)  # "300", "-1"
    except ValueError:
        pass
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    parts = _DURATION_PART.findall(body)
    if not body or "".join(number + unit for number, unit in parts) != body:
        raise ValueError(f'{text!r} is not a duration: a number of seconds, or such as "5m", "1h30m", "-1"')
    return sign * sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
