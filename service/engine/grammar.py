"""GrammarChecker: compiles a request's output constraint before the engine runs it, off the event loop.

Why check at all: a grammar the engine cannot compile fails the engine step
it is compiled in, and with it every request of that batch. Why here: the
check compiles with the served model's own tokenizer (see grammar_worker.py)
in a process of its own, started on the first check, so a compile that takes
long blocks neither the event loop nor the engine's steps, and one that
crashes or runs away costs only that process: past ``timeout`` seconds it is
killed (and started again for the next check) and the constraint refused.

Verdicts (not timeouts) are cached by constraint text: clients send the same schema again
and again. Checks run one at a time (a compile uses the cores it can get); see service/workers/helper.py.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from pathlib import Path

from ovserve.service.engine.sampling import OutputConstraint
from ovserve.service.workers.helper import HelperDied, HelperProcess, HelperStartError, HelperTimeout

CACHE_SIZE = 512  # verdicts kept, least recently used dropped first


class GrammarChecker:
    """Compile checks for one model's constraints, in a helper process started on first use."""

    def __init__(self, model_dir: Path, *, timeout: float) -> None:
        self._model_dir = model_dir
        self._timeout = timeout
        self._cache: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        self._cache_lock = threading.Lock()  # held for dictionary operations only
        self._compile_lock = threading.Lock()  # held for a whole compile: one grammar is not compiled twice
        self._helper = HelperProcess("ovserve.service.engine.grammar_worker", model_dir)

    @property
    def restarts(self) -> int:
        """Processes killed for running past the timeout or dying."""
        return self._helper.restarts

    async def check(self, constraint: OutputConstraint) -> str | None:
        """Why the engine cannot run ``constraint`` (the compiler's words), or None if it compiles."""
        key = (constraint.kind, constraint.value)
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        return await asyncio.to_thread(self._verdict, key)

    def close(self) -> None:
        """End the checker process, if it runs (waits for a compile under way)."""
        self._helper.close()

    def _verdict(self, key: tuple[str, str]) -> str | None:
        """Blocking (a worker thread runs this): a compile's verdict, cached when final.

        A timeout is not final: on a busy machine the same grammar may compile in time later.
        """
        with self._compile_lock:
            with self._cache_lock:
                if key in self._cache:  # another caller checked it meanwhile
                    return self._cache[key]
            try:
                verdict: str | None = self._helper.ask(key, self._timeout)
            except HelperTimeout:
                return f"compiling it took longer than {self._timeout:g} s"
            except HelperDied:
                verdict = "the grammar compiler failed on it"  # a grammar it cannot handle
            except HelperStartError as error:
                raise RuntimeError(f"the grammar checker could not start: {error}") from error
            with self._cache_lock:
                self._cache[key] = verdict
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
            return verdict
