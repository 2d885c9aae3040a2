"""Stop strings over one output sequence's text: the same text whether streamed or not.

The pipeline runs with the stop strings kept in its output (it cannot take
back text that already went out), and this filter makes the text OpenAI's:
text that may be the start of a stop string waits until the next tokens say
whether it is; at the first stop string the text ends (the stop string itself
kept only with include_stop_str_in_output), and anything the last token
carried past it is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

# Plain text scanning, shared with the tool-call parsers (which hold back tags the same way).
from ovserve.service.parsing.text import find_first, partial_tag_length


@dataclass
class StopText:
    """One sequence's stop-string state."""

    stops: tuple[str, ...]
    keep: bool = False  # include the stop string in the output
    held: str = ""  # text that may be the start of a stop string
    stopped: bool = False  # a stop string was found: nothing more goes out

    def feed(self, text: str, final: bool) -> str:
        """The part of ``held + text`` that can go out now (everything, at the end)."""
        if self.stopped:
            return ""
        text, self.held = self.held + text, ""
        position, stop = find_first(text, self.stops)
        if stop:
            self.stopped = True
            return text[: position + (len(stop) if self.keep else 0)]
        if final:
            return text
        hold = partial_tag_length(text, self.stops)
        self.held = text[len(text) - hold :]
        return text[: len(text) - hold]
