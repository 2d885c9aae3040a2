"""A Responses request -> a Prepared response: validated, its history resolved, rendered to fit, ready to run.

The history is the stored conversation of ``previous_response_id`` (or the items
of ``conversation``) followed by this turn's input; ``instructions`` are never stored with it (each request sends
its own). With ``truncation: "auto"`` the oldest turns are dropped until the
prompt leaves room for the output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ovserve.clients.v1 import common_pb2, response_pb2
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.api import logprobs
from ovserve.service.api.custom_tools import custom_tool, template_form
from ovserve.service.api.logprobs import LogprobAsk
from ovserve.service.api.media_parts import MediaParts, forget_images, image_prompt_ids
from ovserve.service.api.prepare import (
    RESPONSES,
    begin,
    build_runs,
    refuse_invalid,
    render,
    skips_special_tokens,
    templated_constraint,
    templated_prompt,
)
from ovserve.service.api.prompting import (
    REASONING_EFFORTS,
    TOOL_CHOICES,
    json_object,
    read_off_the_loop_if_large,
    template_context,
    template_tool,
    unsupported,
)
from ovserve.service.api.runs import Run
from ovserve.service.api.stored_chat import metadata_violations
from ovserve.service.engine import SamplingParams
from ovserve.service.errors import FieldViolation, InvalidArgument, NotFound, quote
from ovserve.service.ids import new_id, now
from ovserve.service.mcp.policy import McpPolicy
from ovserve.service.models import ModelRegistry, ServedModel
from ovserve.service.responses.conversation import Turn, input_turn
from ovserve.service.responses.conversations import ConversationsApi, ConversationTurn
from ovserve.service.responses.mcp_tools import McpTools, approvals, clashes, read_servers, resolve
from ovserve.service.store.responses import ResponseStore
from ovserve.service.store.tenancy import tenant

Request = response_pb2.CreateResponseRequest | response_pb2.StreamResponseRequest
TRUNCATIONS = {"disabled", "auto"}
REASONING_SUMMARIES = {"auto", "concise", "detailed"}
LOGPROBS = "message.output_text.logprobs"  # the include value that asks for the output text's logprobs
INCLUDABLE = {LOGPROBS, "reasoning.encrypted_content", "message.input_image.image_url"}
# OpenAI's values for fields accepted and echoed with no effect here.
SERVICE_TIERS = {"auto", "default", "flex", "scale", "priority"}
CACHE_RETENTIONS = {"in_memory", "in-memory", "24h"}  # the spec's enum; "in-memory" as OpenAI's guide spells it
VERBOSITIES = {"low", "medium", "high"}
MAX_CHAIN = 64  # earlier responses searched for the MCP tools they listed and the approvals they asked
# Response fields that echo the request field of the same name (the contract keeps them alike).
ECHOED = [
    f.name
    for f in objects_pb2.Response.DESCRIPTOR.fields
    if f.name in response_pb2.CreateResponseRequest.DESCRIPTOR.fields_by_name
    and f.name not in ("model", "conversation")  # conversation: a string here, OpenAI's {"id": ...} there
]


@dataclass
class Prepared:
    """A validated Responses request, rendered and ready for the engine."""

    model: ServedModel
    run: Run
    skip_special_tokens: bool
    response: objects_pb2.Response  # the Response as it starts (echoed fields set)
    request: response_pb2.CreateResponseRequest
    items: list[objects_pb2.InputItem]
    history: list[dict[str, Any]]  # the conversation before this response's output, without instructions
    store: bool
    background: bool
    owner: str = ""  # the tenant it is stored for (service/store/tenancy.py)
    conversation: ConversationTurn | None = None  # where its items are appended when it ends
    mcp: McpTools = field(default_factory=McpTools)  # its MCP servers and the approvals it answers
    mcp_policy: McpPolicy = field(default_factory=McpPolicy)
    # The run of the model's next turn, the turns the server answered (MCP calls and results) added to the history.
    next_run: Callable[[list[dict[str, Any]]], Awaitable[Run]] | None = None


def wants_logprobs(request: Request | response_pb2.CreateResponseRequest) -> bool:
    """Whether the output text carries logprobs: include asks for them (or OVMS's logprobs flag, or
    top_logprobs above 0)."""
    return request.logprobs or LOGPROBS in request.include or request.top_logprobs > 0


async def prepare(
    models: ModelRegistry,
    store: ResponseStore,
    request: Request,
    *,
    streaming: bool,
    conversations: ConversationsApi | None = None,
    mcp_policy: McpPolicy | None = None,
) -> Prepared:
    """Validate ``request`` (INVALID_ARGUMENT / NOT_FOUND naming the field), resolve its history, build its run.

    ``conversations``: where ``conversation`` ids are looked up (None: the field is refused); ``mcp_policy``: which
    MCP servers its mcp tools may reach (their tools are listed here, before the prompt is rendered)."""
    policy = mcp_policy or McpPolicy()
    model, violations = begin(models, request, RESPONSES, streaming=streaming)
    request = await _with_references_resolved(store, request)
    images = MediaParts(model)

    def read() -> tuple[Turn, list[dict[str, Any]]]:
        turn = input_turn(request, images=images, violations=violations)
        violations.extend(_option_violations(request))
        violations.extend(metadata_violations(request.metadata))  # OpenAI's bounds, as chat and conversations
        functions = [
            _tool(tool, f"tools[{i}]", violations) for i, tool in enumerate(request.tools) if tool.type != "mcp"
        ]
        return turn, functions

    turn, tools = await read_off_the_loop_if_large(request, len(request.input_items), read)
    mcp = McpTools(read_servers(request.tools, policy, violations))
    if mcp.servers and not violations:  # listed only for a request otherwise valid
        earlier = await _earlier_outputs(store, request, conversations)
        await resolve(mcp.servers, policy, earlier)
        violations += clashes(mcp.servers, {tool["function"].get("name") for tool in tools})
        mcp.approvals = approvals(request.input_items, earlier, mcp.servers, violations)
        tools = tools + mcp.template_tools()
    effort = request.reasoning.effort if request.reasoning.HasField("effort") else None
    context = template_context(request, violations, effort=effort)
    plan = await templated_constraint(
        model, _mcp_choice_as_function(request, mcp, violations), violations, tools, context,
        named_field="tool_choice", parameters_field="tools[{}].parameters",
    )  # fmt: skip
    tools = [template_form(tool) for tool in tools]  # custom tools' formats guided the plan; templates see functions
    ask = LogprobAsk(
        chosen=wants_logprobs(request), top=logprobs.top_logprobs(request, violations, needs_logprobs=False)
    )
    violations += logprobs.vision_violations(model, ask)
    keep = not request.HasField("store") or request.store
    background = request.HasField("background") and request.background
    if background and not keep:
        violations.append(FieldViolation("background", "a background response must be stored (store: true)"))
    previous: list[dict[str, Any]] = []
    turn_in: ConversationTurn | None = None
    if request.HasField("conversation"):
        if request.HasField("previous_response_id"):
            message = "set either conversation or previous_response_id, not both"
            violations.append(FieldViolation("conversation", message))
        elif conversations is None:
            violations.append(FieldViolation("conversation", "conversations are not served here"))
        else:
            previous = await conversations.context(
                request.conversation, adding=len(turn.items), model=model, media=models.media, uploaded=models.files
            )
            turn_in = ConversationTurn(request.conversation, tenant.get(), conversations)
    elif request.HasField("previous_response_id"):
        stored = await store.get(request.previous_response_id, owner=tenant.get())
        if stored is None:
            message = f"no stored response {quote(request.previous_response_id)}"
            raise NotFound(message, param="previous_response_id")
        previous = stored.conversation
    violations += await read_off_the_loop_if_large(
        request, len(request.input_items), lambda: unanswered_outputs(request, previous)
    )
    refuse_invalid(request, model, violations, streaming=streaming)

    instructions = [{"role": "system", "content": request.instructions}] if request.instructions else []
    history = forget_images(previous) + await images.with_files(turn.messages, models.media, models.files)
    limit = request.max_output_tokens if request.HasField("max_output_tokens") else None
    history, rendered = await _fit(model, instructions, history, tools, context, request, limit)
    prompt = await templated_prompt(model, rendered, images, models.media, RESPONSES.prompt_field)
    (run,) = await build_runs(model, request, [prompt], plan, RESPONSES, streaming=streaming, ask=ask)
    canonical = response_pb2.CreateResponseRequest()
    canonical.ParseFromString(request.SerializeToString())  # the twins are wire-identical
    for tool in canonical.tools:  # an mcp tool's credentials are for its server: neither stored nor echoed
        tool.headers.clear()
        tool.ClearField("authorization")
    # A forced tool choice forces the first turn only: after the tools' results the model answers as it will.
    forced = request.HasField("named_tool_choice") or request.tool_choice == "required"
    later_plan = None if forced else plan

    async def next_run(rounds: list[dict[str, Any]]) -> Run:
        rendered = await render(model, instructions + history + rounds, tools, context, RESPONSES.prompt_field)
        prompt = await templated_prompt(model, rendered, images, models.media, RESPONSES.prompt_field)
        (run,) = await build_runs(model, request, [prompt], later_plan, RESPONSES, streaming=streaming, ask=ask)
        return run

    return Prepared(
        model=model,
        run=run,
        skip_special_tokens=skips_special_tokens(request),
        response=_new_response(canonical, model.name, keep, background, run.params),
        request=canonical,
        items=turn.items,
        history=history,
        store=keep,
        background=background,
        owner=tenant.get(),
        conversation=turn_in,
        mcp=mcp,
        mcp_policy=policy,
        next_run=next_run,
    )


async def _earlier_outputs(
    store: ResponseStore, request: Request, conversations: ConversationsApi | None
) -> list[objects_pb2.OutputItem]:
    """The output items of the responses the request continues (oldest first, at most MAX_CHAIN of them) or the
    mcp items of its conversation, then the mcp items its input replays: where listed tools are reused from and
    approval requests are found."""
    chain: list[list[objects_pb2.OutputItem]] = []
    previous = request.previous_response_id if request.HasField("previous_response_id") else ""
    while previous and len(chain) < MAX_CHAIN:
        stored = await store.get(previous, owner=tenant.get())
        if stored is None:
            break
        chain.insert(0, list(stored.response.output))
        previous = stored.request.previous_response_id if stored.request.HasField("previous_response_id") else ""
    earlier = [item for outputs in chain for item in outputs]
    replayed = list(request.input_items)
    if request.HasField("conversation") and conversations is not None:
        replayed = await conversations.stored_items(request.conversation) + replayed
    for item in replayed:
        if item.type == "mcp_list_tools":
            listed = objects_pb2.OutputMcpListTools(id=item.id, server_label=item.server_label, tools=item.tools)
            earlier.append(objects_pb2.OutputItem(mcp_list_tools=listed))
        elif item.type == "mcp_approval_request":
            asked = objects_pb2.OutputMcpApprovalRequest(
                id=item.id, server_label=item.server_label, name=item.name, arguments=item.arguments
            )
            earlier.append(objects_pb2.OutputItem(mcp_approval_request=asked))
    return earlier


def _mcp_choice_as_function(request: Request, mcp: McpTools, violations: list[FieldViolation]) -> Request:
    """``request`` with tool_choice {"type": "mcp", "server_label", "name"} as the function choice it means (a
    server without a name: any of its tools, required)."""
    choice = request.named_tool_choice
    if not request.HasField("named_tool_choice") or choice.type != "mcp":
        return request
    server = next((server for server in mcp.servers if server.label == choice.server_label), None)
    if server is None:
        described = f"no mcp tool with server_label {quote(choice.server_label)} in tools"
        violations.append(FieldViolation("tool_choice.server_label", described))
        return request
    if choice.name and not any(tool.name == choice.name for tool in server.tools):
        described = f"MCP server {quote(server.label)} has no tool {quote(choice.name)} (allowed_tools included)"
        violations.append(FieldViolation("tool_choice.name", described))
        return request
    rewritten = type(request)()
    rewritten.CopyFrom(request)
    named = rewritten.named_tool_choice
    if choice.name:
        named.Clear()
        named.type, named.name = "function", choice.name
    else:
        named.Clear()
        named.type, named.mode = "allowed_tools", "required"
        for tool in server.tools:
            named.tools.add(type="function", name=tool.name)
    return rewritten


def _option_violations(request: Request) -> list[FieldViolation]:
    """The Responses-only options: truncation, reasoning, tool_choice, include, n and OpenAI's service fields."""
    violations = []
    checks: list[tuple[bool, str, str, set[str]]] = [
        (request.HasField("truncation"), "truncation", request.truncation, TRUNCATIONS),
        (request.reasoning.HasField("effort"), "reasoning.effort", request.reasoning.effort, REASONING_EFFORTS),
        (request.reasoning.HasField("summary"), "reasoning.summary", request.reasoning.summary, REASONING_SUMMARIES),
        (request.HasField("tool_choice"), "tool_choice", request.tool_choice, TOOL_CHOICES),
        (request.HasField("service_tier"), "service_tier", request.service_tier, SERVICE_TIERS),
        (
            request.HasField("prompt_cache_retention"),
            "prompt_cache_retention",
            request.prompt_cache_retention,
            CACHE_RETENTIONS,
        ),
        (request.text.HasField("verbosity"), "text.verbosity", request.text.verbosity, VERBOSITIES),
    ]
    for present, name, value, allowed in checks:
        if present and value not in allowed:
            violations.append(unsupported(name, value, allowed))
    for index, value in enumerate(request.include):
        if value not in INCLUDABLE:
            violations.append(FieldViolation(f"include[{index}]", f"unknown value {quote(value)}"))
    if request.HasField("max_tool_calls") and request.max_tool_calls < 1:
        violations.append(FieldViolation("max_tool_calls", "must be at least 1 (send tool_choice none for no calls)"))
    if request.HasField("n") and request.n != 1:
        violations.append(FieldViolation("n", "a response has one output; use chat completions for several choices"))
    return violations + _context_management_violations(request)


MIN_COMPACT_THRESHOLD = 1000  # OpenAI's ContextManagementParam.compact_threshold minimum


def _context_management_violations(request: Request) -> list[FieldViolation]:
    """OpenAI's context_management: one compaction entry, its threshold at least MIN_COMPACT_THRESHOLD tokens."""
    entries = request.context_management
    if len(entries) > 1:
        return [FieldViolation("context_management", f"one entry (compaction) at most; got {len(entries)}")]
    violations = []
    for index, entry in enumerate(entries):
        where = f"context_management[{index}]"
        if entry.type != "compaction":
            violations.append(unsupported(f"{where}.type", entry.type, {"compaction"}))
        if entry.HasField("compact_threshold") and entry.compact_threshold < MIN_COMPACT_THRESHOLD:
            violations.append(
                FieldViolation(
                    f"{where}.compact_threshold",
                    f"must be at least {MIN_COMPACT_THRESHOLD}; got {entry.compact_threshold}",
                )
            )
    return violations


async def _with_references_resolved(store: ResponseStore, request: Request) -> Request:
    """``request`` with each item_reference input item replaced by the stored item it names (of this tenant);
    NOT_FOUND naming the reference's id when there is none."""
    if not any(item.type == "item_reference" for item in request.input_items):
        return request
    resolved = type(request)()
    resolved.CopyFrom(request)
    del resolved.input_items[:]
    for position, item in enumerate(request.input_items):
        if item.type != "item_reference":
            resolved.input_items.append(item)
            continue
        if not item.id:
            raise InvalidArgument.of(f"input_items[{position}].id", "required on item_reference items")
        found = await store.find_item(item.id, owner=tenant.get())
        if found is None:
            raise NotFound(f"no stored item {quote(item.id)}", param=f"input_items[{position}].id")
        resolved.input_items.append(found)
    return resolved


def unanswered_outputs(request: Request, previous: list[dict[str, Any]]) -> list[FieldViolation]:
    """function_call_output (custom_tool_call_output) items with no call of their call_id before them (OpenAI refuses
    them)."""
    calls = {call.get("id") for message in previous for call in message.get("tool_calls", ())}
    violations = []
    for position, item in enumerate(request.input_items):
        if item.type in ("function_call", "custom_tool_call"):
            calls.add(item.call_id)
        elif item.type in ("function_call_output", "custom_tool_call_output") and item.call_id not in calls | {""}:
            described = f"no function call with call_id {quote(item.call_id)} comes before this output"
            violations.append(FieldViolation(f"input_items[{position}].call_id", described))
    return violations


def _tool(tool: objects_pb2.ResponseTool, where: str, violations: list[FieldViolation]) -> dict[str, Any]:
    """A flat Responses function (or custom) tool as the chat template wants it."""
    if tool.type == "custom":
        custom = common_pb2.CustomTool(name=tool.name)
        if tool.HasField("description"):
            custom.description = tool.description
        if tool.HasField("format"):
            custom.format.CopyFrom(tool.format)
        return custom_tool(custom, where, violations)
    if tool.type != "function":
        described = f"unknown tool type {quote(tool.type)}; expected function, custom or mcp"
        violations.append(FieldViolation(f"{where}.type", described))
    name = tool.name or tool.function.name
    if not name:
        violations.append(FieldViolation(f"{where}.name", "required"))
    return template_tool(json_object(tool, where, violations))


async def _fit(
    model: ServedModel,
    instructions: list[dict[str, Any]],
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    context: dict[str, Any],
    request: Request,
    max_output_tokens: int | None,
) -> tuple[list[dict[str, Any]], list[int] | str]:
    """Render the conversation; with truncation "auto", drop the oldest turns until it fits beside the output;
    with context_management's compaction, also until it is within compact_threshold tokens (compaction served as
    a truncation: the model writes no summary here).

    Its token ids; with images, the prompt text (its images are loaded once the turns that stay are known)."""
    room = max_output_tokens or 1
    compacting = len(request.context_management) > 0
    threshold = next((e.compact_threshold for e in request.context_management if e.HasField("compact_threshold")), None)
    while True:
        truncate = (request.truncation == "auto" or compacting) and len(history) > 1
        prompt: list[int] | str | None
        try:
            messages = instructions + history
            prompt = await render(model, messages, tools, context, RESPONSES.prompt_field)
            if isinstance(prompt, str):  # a vision model's text: its images count as their tokens
                size = len(await asyncio.to_thread(image_prompt_ids, model, prompt))
            else:
                size = len(prompt)
        except InvalidArgument:
            if not truncate:  # too long before rendering, or the template refused it
                raise
            prompt = None
        fits = size + room <= model.limits.max_model_len and (threshold is None or size <= threshold)
        if prompt is not None and (fits or not truncate):
            return history, prompt
        history = _without_oldest_turn(history)


def _without_oldest_turn(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History less its first message and what answers it (tool results must not lose their call)."""
    rest = history[1:]
    while len(rest) > 1 and rest[0]["role"] in ("tool", "assistant"):
        rest = rest[1:]
    return rest


def _new_response(
    request: response_pb2.CreateResponseRequest, model: str, store: bool, background: bool, params: SamplingParams
) -> objects_pb2.Response:
    response = objects_pb2.Response(
        id=new_id("resp_"), object="response", created_at=now(), model=model,
        status=objects_pb2.RESPONSE_STATUS_IN_PROGRESS,
    )  # fmt: skip
    for name in ECHOED:
        source, target = getattr(request, name), getattr(response, name)
        descriptor = request.DESCRIPTOR.fields_by_name[name]
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            target.update(source)
        elif descriptor.is_repeated:
            target.extend(source)
        elif descriptor.message_type is not None:
            if request.HasField(name):
                target.CopyFrom(source)
        elif not descriptor.has_presence or request.HasField(name):
            setattr(response, name, source)
    # Echo the values in force, not only those sent (as OpenAI does).
    response.store, response.background = store, background
    if request.HasField("conversation"):
        response.conversation.id = request.conversation
    if not request.HasField("truncation"):
        response.truncation = "disabled"
    # Values not sent are the sampling actually used: the model's generation_config.json (greedy for some
    # models: then temperature 0), else the engine's defaults (OpenAI's: 1 and 1).
    if not request.HasField("temperature"):
        response.temperature = (1.0 if params.temperature is None else params.temperature) if params.do_sample else 0.0
    if not request.HasField("top_p"):
        response.top_p = 1.0 if params.top_p is None else params.top_p
    for name in ("presence_penalty", "frequency_penalty"):
        if not request.HasField(name):
            setattr(response, name, getattr(params, name) or 0.0)
    if not request.HasField("top_logprobs"):
        response.top_logprobs = 0
    response.service_tier = "default"  # the one tier here, whatever was asked for
    response.parallel_tool_calls = not request.HasField("parallel_tool_calls") or request.parallel_tool_calls
    return response
