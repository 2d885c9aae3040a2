"""The tools the family matrix (test_family_matrix) and the family probe (tools/family_probe.py) offer, and the
question they ask: one definition for both, so the probe measures what the matrix tests.

Kept apart from the test module so tools/family_probe.py imports data only (importing the test module made mypy
check it as part of the tool).
"""

from __future__ import annotations

from typing import Any

ASK = [{"role": "user", "content": "What is the weather like in Paris?"}]
# Bounded arguments, so a random model's call closes within max_tokens.
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city", "unit"]}  # fmt: skip
ALARM = {"type": "object", "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23}},
         "required": ["hour"], "additionalProperties": False}  # fmt: skip
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather in a city.", "parameters": WEATHER},
    },
    {"type": "function", "function": {"name": "set_alarm", "description": "Set an alarm.", "parameters": ALARM}},
]
# Function name -> its parameters' schema.
SCHEMAS: dict[str, Any] = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
