"""The scored requests' way out of the engine process: a thread scores their tokens, then sends their output.

A request that asks for alternatives or prompt logprobs (``Submission.scoring``) is claimed by the lane when it
arrives: its prompt is fed to a ScoredSequence at once (beside the pipeline's own prefill), and every outcome the
EngineCore flushes for it goes through the lane, which scores the new tokens of each sequence, puts the scores in
the update and sends it, in order. The pipeline's step loop never waits for scoring (OpenVINO lets go of the GIL
while it infers), so the requests that did not ask are not slowed but for the CPU the scoring takes.

Work is done in turns of at most one chunk (scoring.CHUNK_TOKENS) per request, round robin, so a long prompt
being scored delays another scored request's next update by one chunk, not by the whole prompt. A request with
``Scoring.output`` false (echo with max_tokens 0) never reaches the pipeline: the lane answers it alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ovserve.service.engine.core import Submission
from ovserve.service.engine.messages import HEARTBEAT_S, Alive, Outcome, Outcomes
from ovserve.service.engine.scoring import CHUNK_TOKENS, ScoredSequence, ScoringModel, ScoringUnavailable
from ovserve.service.engine.types import FinishReason, SequenceDelta, TokenScores, Update
from ovserve.service.workers.errors import EngineError, EngineRejected

log = logging.getLogger(__name__)
# Scored sequences held at once, over all requests: each is an infer request of the scoring copy with its own KV
# cache and buffers (~4 MB each on tiny-chat: 4 prompts x n 16, 64 at once, took the engine process 263 MB up; 64
# prompts x n 16 would have held GBs). A request whose sequences do not fit waits for others to end (the pipeline's
# outputs for it kept, scored when it starts); one that needs more alone starts when it is the only one.
MAX_SEQUENCES = 32
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def release_memory() -> None:
    """Hand the heap the lane's finished requests freed back to the system: glibc keeps freed chunks for reuse,
    so the engine process stayed ~80 MB larger after 12 prompts of 1,000 tokens with 20 alternatives each
    (their scores are ~250,000 Python tuples on the way out) until ``malloc_trim``."""
    if hasattr(_LIBC, "malloc_trim"):  # glibc's; musl has none
        _LIBC.malloc_trim(0)


@dataclass
class _Job:
    """One scored request: its sequences' scoring state and the outcomes waiting for their scores."""

    submission: Submission
    todo: deque[Update | EngineError] = field(default_factory=deque)
    prompt_fed: int = 0  # prompt tokens fed so far
    base: ScoredSequence | None = None  # the prompt, scored; choices fork from it (or take it, for one choice)
    sequences: dict[int, ScoredSequence] = field(default_factory=dict)  # choice index -> its scored sequence
    prompt_scores: TokenScores = field(default_factory=TokenScores)
    prompt_sent: bool = False
    progress: dict[int, int] = field(default_factory=dict)  # choice index -> tokens of the head update scored
    held: int = 0  # scored sequences reserved for it (see MAX_SEQUENCES)

    @property
    def choices(self) -> int:
        params = self.submission.params
        return params.num_return_sequences or 1

    @property
    def needs(self) -> int:
        """The scored sequences it holds at most: its prompt's, and a fork of it per choice when there are several."""
        scoring = self.submission.scoring
        if scoring is None or not (scoring.prompt or scoring.output):
            return 0
        return 1 + (self.choices if self.choices > 1 and scoring.output else 0)


class ScoringLane:
    """Scores and sends the outcomes of the requests it claims; thread-safe for the engine process's main loop."""

    def __init__(self, model: ScoringModel, send: Callable[[object], None]) -> None:
        self._model = model
        self._send = send
        self._changed = threading.Condition()
        self._jobs: dict[int, _Job] = {}
        self._turns: deque[int] = deque()  # request ids with work, in turn order
        self._dropped: set[int] = set()  # failed here: the pipeline's later outcomes for them are thrown away
        self._to_cancel: list[int] = []  # failed here while the pipeline still runs them
        self._held = 0  # scored sequences the jobs hold (reserved at their first turn)
        self._parked: deque[int] = deque()  # request ids waiting for sequences to be free
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def active(self) -> int:
        """Requests the lane holds."""
        with self._changed:
            return len(self._jobs)

    def claims(self, request_id: int) -> bool:
        """Whether the request's outcomes go through the lane."""
        with self._changed:
            return request_id in self._jobs or request_id in self._dropped

    def open(self, submission: Submission) -> None:
        """Claim a scored request: its prompt is scored from now on."""
        with self._changed:
            self._jobs[submission.request_id] = _Job(submission)
            self._turns.append(submission.request_id)
            self._changed.notify()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="scoring", daemon=True)
            self._thread.start()

    def put(self, outcome: Outcome) -> None:
        """An outcome of a claimed request: sent once its tokens are scored, after the ones before it."""
        request_id, item = outcome
        with self._changed:
            job = self._jobs.get(request_id)
            if job is None:  # failed here already; the pipeline's last word on it ends the matter
                if isinstance(item, EngineError) or item.finished:
                    self._dropped.discard(request_id)
                return
            if len(job.todo) >= 2 and isinstance(item, Update) and isinstance(job.todo[-1], Update):
                # Behind: outputs waiting (not the head, which may be being scored) are scored as one, so a
                # lane that falls behind feeds more tokens per forward pass instead of more passes.
                job.todo[-1].absorb(item)
            else:
                job.todo.append(item)
            if request_id not in self._turns:
                self._turns.append(request_id)
            self._changed.notify()

    def cancel(self, request_id: int) -> None:
        """The caller went away: forget the request."""
        with self._changed:
            job = self._jobs.pop(request_id, None)
            if job is not None:
                self._release(job)
            self._dropped.discard(request_id)

    def take_failed(self) -> list[int]:
        """Requests the lane failed that the pipeline may still be running (to cancel there)."""
        with self._changed:
            failed, self._to_cancel = self._to_cancel, []
            self._dropped.difference_update(failed)
            return failed

    def stop(self) -> list[int]:
        """Stop scoring; the ids of the requests it held (each to be failed by the caller)."""
        with self._changed:
            self._stopped = True
            held = list(self._jobs)
            self._jobs.clear()
            self._parked.clear()
            self._held = 0
            self._changed.notify()
        if self._thread is not None:
            self._thread.join()
        return held

    def _run(self) -> None:
        said = time.monotonic()
        while True:
            with self._changed:
                while not self._stopped and not self._turns:
                    self._changed.wait()
                if self._stopped:
                    return
                request_id = self._turns.popleft()
                job = self._jobs.get(request_id)
                if job is not None and not self._reserve(job):
                    if request_id not in self._parked:  # back in turn when sequences are released
                        self._parked.append(request_id)
                    job = None
            if job is None:
                continue
            try:
                sent, more = self._turn(job)
            except Exception as error:
                self._fail(job, error)
                sent, more = True, False
            with self._changed:
                if request_id in self._jobs and more and request_id not in self._turns:
                    self._turns.append(request_id)
                idle = not self._jobs
            if idle:  # its sequences and scores are gone now: hand their memory back
                del job
                release_memory()
            if sent:
                said = time.monotonic()
            elif time.monotonic() - said >= HEARTBEAT_S:  # a long prompt: still working (see messages.Alive)
                self._send(Alive())
                said = time.monotonic()

    def _reserve(self, job: _Job) -> bool:
        """Reserve the job's sequences at its first turn (under the lock); False: they do not fit yet."""
        if job.held or not job.needs:
            return True
        if self._held and self._held + job.needs > MAX_SEQUENCES:
            return False
        job.held = job.needs
        self._held += job.held
        return True

    def _release(self, job: _Job) -> None:
        """The job has left (under the lock): its sequences are free, and the parked jobs take their turns again."""
        self._held -= job.held
        job.held = 0
        if self._parked:
            self._turns.extend(request_id for request_id in set(self._parked) if request_id not in self._turns)
            self._parked.clear()
            self._changed.notify()

    def _turn(self, job: _Job) -> tuple[bool, bool]:
        """One chunk of the job's work, and the update it completes sent; (whether one was sent, more to do)."""
        prompt = job.submission.prompt_ids
        scoring = job.submission.scoring
        assert scoring is not None
        with self._changed:
            failed = bool(job.todo) and isinstance(job.todo[0], EngineError)
        if not (scoring.prompt or scoring.output):  # nothing to score: max_tokens 0 without logprobs
            job.prompt_fed = len(prompt)
        if job.prompt_fed < len(prompt) and not failed:
            if job.base is None:
                job.base = self._model.sequence()
            chunk = prompt[job.prompt_fed : job.prompt_fed + CHUNK_TOKENS]
            scores = job.base.feed(chunk, scoring.top if scoring.prompt else 0)
            job.prompt_fed += len(chunk)
            if scoring.prompt:
                for name in ("logprobs", "ranks", "top"):
                    getattr(job.prompt_scores, name).extend(getattr(scores, name))
            if job.prompt_fed < len(prompt):
                return False, True
        if not scoring.generate:  # the answer is the prompt's scores: every choice is empty
            ends = [SequenceDelta(index, finish_reason=FinishReason.LENGTH) for index in range(job.choices)]
            self._finish(job, Update(ends, finished=True))
            return True, False
        with self._changed:
            head = job.todo[0] if job.todo else None
        if head is None:
            return False, False
        if isinstance(head, Update) and scoring.output and not self._score(job, head, scoring.top):
            return False, True
        with self._changed:
            job.todo.popleft()
            more = bool(job.todo)
        self._finish(job, head)
        return True, more

    def _score(self, job: _Job, update: Update, top: int) -> bool:
        """Score up to one chunk of ``update``'s tokens; whether all of them are scored now."""
        for delta in update.sequences:
            done = job.progress.get(delta.index, 0)
            if done == len(delta.token_ids):
                continue
            if done == 0:
                delta.logprobs, delta.top_logprobs = [], []
            sequence = self._sequence(job, delta.index)
            chunk = delta.token_ids[done : done + CHUNK_TOKENS]
            scores = sequence.feed(chunk, top)
            delta.logprobs += scores.logprobs
            delta.top_logprobs += scores.top
            job.progress[delta.index] = done + len(chunk)
            return False
        job.progress.clear()
        return True

    def _sequence(self, job: _Job, index: int) -> ScoredSequence:
        """The scored sequence of a choice: the prompt's own for a single choice, else a fork of it."""
        sequence = job.sequences.get(index)
        if sequence is None:
            assert job.base is not None
            sequence = job.sequences[index] = job.base if job.choices == 1 else job.base.fork()
        return sequence

    def _finish(self, job: _Job, item: Update | EngineError) -> None:
        """Send ``item``; the job ends with a final update or an error."""
        request_id = job.submission.request_id
        scoring = job.submission.scoring
        if isinstance(item, Update) and scoring is not None and scoring.prompt and not job.prompt_sent:
            item.prompt, job.prompt_sent = job.prompt_scores, True
        ended = isinstance(item, EngineError) or item.finished
        with self._changed:
            if request_id not in self._jobs:  # cancelled meanwhile
                return
            if ended:
                del self._jobs[request_id]
                self._release(job)
        self._send(Outcomes([(request_id, item)]))

    def _fail(self, job: _Job, error: Exception) -> None:
        request_id = job.submission.request_id
        if not isinstance(error, ScoringUnavailable):
            log.exception("scoring request %d failed", request_id)
        reason = str(error) if isinstance(error, ScoringUnavailable) else f"scoring failed: {error}"
        with self._changed:
            if self._jobs.pop(request_id, None) is None:
                return
            self._release(job)
            if job.submission.scoring is not None and job.submission.scoring.output:
                self._dropped.add(request_id)
                self._to_cancel.append(request_id)
        self._send(Outcomes([(request_id, EngineRejected(f"logprobs: {reason}"))]))
