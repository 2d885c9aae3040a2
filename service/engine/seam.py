"""The engine seam: what the API layer and the server use of a served model's engine, as Protocols.

``ServedModel.engine`` is a ``GenerationEngine``; ``Engine`` (engine.py) implements it and so does the scripted
``FakeEngine`` of tests/fakes.py, both checked by mypy (a ``_conforms`` function in each module; pyproject's
``[tool.mypy] modules`` has tests.fakes checked): a member the API layer starts using, or a signature that
changes, fails the type check until the engine and the fake have it.
A ``GenerationEngine`` is also an ``ovserve.service.workers.Served``: the server's health, metrics and shutdown
see it so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ovserve.service.engine.adapters import LoraAdapter
from ovserve.service.engine.chat_template import ChatTemplate
from ovserve.service.engine.infill import InfillTokens
from ovserve.service.engine.sampling import OutputConstraint, SamplingParams
from ovserve.service.engine.scoring import Scoring
from ovserve.service.engine.template_probe import MessageForm
from ovserve.service.engine.types import PromptImages, Update
from ovserve.service.workers.served import Served


class GenerationStream(Protocol):
    """One submitted request: async-iterate its Updates (the last has finished=True); close() lets go of it."""

    def __aiter__(self) -> GenerationStream:
        """Itself."""

    async def __anext__(self) -> Update:
        """The steps since the last Update; raises EngineError if the engine fails the request."""

    def close(self, outcome: str = "cancelled") -> None:
        """Let go of the request (idempotent); cancels it in the engine unless it has ended. ``outcome``: why, for
        the metrics when it had not ended (``cancelled``, ``reasoning_budget``)."""


class GenerationEngine(Served, Protocol):
    """A generating model's engine as the API layer sees it: its tokenizer, chat template, and requests."""

    @property
    def has_draft_model(self) -> bool:
        """Whether speculative decoding is on for this model."""

    def keeps_apart(self, tenant: str, cache_salt: str) -> bool:
        """Whether a request of ``tenant`` (its API key's; "" without keys) with ``cache_salt`` reaches a prefix
        cache kept in namespaces in one of its own (salting.py): its prompt's ids are salted, which a repetition
        penalty forbids (ovserve.service.api.prefix_isolation)."""

    @property
    def adapters(self) -> dict[str, LoraAdapter]:
        """The LoRA adapters a request may run with, by name."""

    @property
    def infill(self) -> InfillTokens | None:
        """The model's fill-in-the-middle tokens, if it has a code family's (a completion's suffix needs them)."""

    @property
    def chat_template(self) -> ChatTemplate:
        """The model's chat template(s) and where they were found."""

    @property
    def template_engine(self) -> str:
        """What renders the chat template: "minja" (openvino_genai's) or "jinja2" (a template minja cannot parse)."""

    @property
    def template_engine_reason(self) -> str:
        """Why that engine: what the load-time probes of the template found (template_probe.py)."""

    @property
    def message_form(self) -> MessageForm:
        """How the template wants a call turn's null content and arguments (template_probe.MessageForm)."""

    def render_chat(
        self,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        context: dict[str, Any],
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The conversation rendered by the model's chat template, ready for the assistant's turn (unless not
        ``add_generation_prompt``: then it ends with the last message). Raises TemplateError when the template
        refuses the conversation."""

    async def check_constraint(self, constraint: OutputConstraint) -> str | None:
        """Why this model's engine cannot run ``constraint`` (the grammar compiler's words), or None."""

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """Token ids of ``text``."""

    def min_tokens(self, characters: int) -> int:
        """A lower bound on the tokens a text of this many characters encodes to (a length check before the work)."""

    def token_texts(self, token_ids: list[int]) -> list[str]:
        """Each token's own text, special tokens kept (for logprobs and tokenize's token strings)."""

    def decode(self, token_ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """Text of ``token_ids``."""

    async def set_adapters(self, adapters: tuple[LoraAdapter, ...]) -> None:
        """Serve these (checked) LoRA adapters from now on; EngineError if the engine cannot."""

    def submit(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        *,
        skip_special_tokens: bool = True,
        images: PromptImages | None = None,
        scoring: Scoring | None = None,
        adapter: str = "",
        tenant: str = "",
        cache_salt: str = "",
    ) -> GenerationStream:
        """Send a request to the engine now; iterate the stream for its output, and close it when done.

        ``images``: their pixels go with the prompt; ``scoring``: the logprobs the sampler does not give;
        ``adapter``: the LoRA adapter it runs with ("": the base model); ``tenant`` and ``cache_salt``: its
        prefix-cache namespace (salting.py). Raises EngineUnavailable while the engine is down, EngineRejected for
        what it does not serve.
        """


if TYPE_CHECKING:
    from ovserve.service.engine.engine import Engine

    def _conforms(engine: Engine) -> GenerationEngine:
        """Checked by mypy, never run: the supervised Engine is a GenerationEngine."""
        return engine
