"""The one event schema of the gateway: every step of a run is an Event in the event log.

An event is flat on the wire: ``{"type", "run_id", "seq", "timestamp_ms", ...fields}``;
``seq`` is assigned by the event log when the event is appended and counts from 0 per run.
Each type is declared once below, a pydantic model naming its fields with their types and
meaning; ``Event.create`` builds the model of the type asked for, so a misspelt, mistyped
or missing field fails where it is emitted. A field every writer of its type sets is
required; the others may be left out, and a field left out is left out on the wire too.

Readers take an event as its model: ``if type(event) is RunCompletedEvent:``, then its
attributes, typed (mypy narrows on it). Each type has exactly one model, so the exact class
says it all; ``isinstance`` would say the same at a higher price (pydantic's metaclass
checks it), paid by every reader for every event, the relay's one per chunk. The three
events that end an agent call are taken together: ``call_end(event)``. An event read
from a log that does not fit its type's model (a log of another version) is a plain
``Event``, whose fields are kept as given (``fields``), and no typed reader takes it for its type.
docs/events.md is rendered from these models (``reference()``).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.recording import encoding


class EventType(str, enum.Enum):
    # agent-as-tool calls (and the calls of remote swarm members)
    AGENT_TOOL_INVOKED = "agent_tool_invoked"
    AGENT_TOOL_PROGRESS = "agent_tool_progress"
    AGENT_TOOL_COMPLETED = "agent_tool_completed"
    AGENT_TOOL_TERMINATED = "agent_tool_terminated"
    AGENT_TOOL_ERROR = "agent_tool_error"
    # swarm runs
    RUN_STARTED = "run_started"
    RUN_COMPLETED = "run_completed"
    RUN_FAILED = "run_failed"
    RUN_CANCELLED = "run_cancelled"
    RUN_RESUMED = "run_resumed"
    MESSAGE = "message"
    TEXT_DELTA = "text_delta"
    MODEL_CALL = "model_call"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    HANDOFF = "handoff"
    AGENT_CHANGED = "agent_changed"
    HANDOFF_REFUSED = "handoff_refused"
    CYCLE_DETECTED = "cycle_detected"
    LIMIT_REACHED = "limit_reached"
    ESCALATED = "escalated"
    ROUTER_DECISION = "router_decision"


_BASE_FIELDS = frozenset({"type", "run_id", "seq", "timestamp_ms"})
_EXCLUDED = set(_BASE_FIELDS)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Event(BaseModel):
    """One recorded step: the fields every event has. Its type's own fields are declared by its subclass.

    An event of a type this version does not know (read from a newer log) keeps its
    fields as extra fields.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str
    run_id: str
    seq: int = -1
    timestamp_ms: int

    event_type: ClassVar[EventType | None] = None
    __slots__ = ("_given", "_head", "_json")
    """``_json``: the JSON once numbered (``to_json``), unset in an event made by validation, None in one made by
    ``trusted`` until then; ``_given``: ``trusted``'s fields, and ``_head``: the JSON its line begins with (its
    type and run, shared by the events made together), until then. Slots rather than pydantic private
    attributes, which the relay would set up and look up once per chunk (encoding.py)."""
    if TYPE_CHECKING:
        _json: bytes | None
        _given: dict[str, Any] | None
        _head: bytes | None

    @classmethod
    def create(cls, type: EventType | str, run_id: str, **fields: Any) -> Event:
        """The event of ``type``, its fields checked against its declaration (ValidationError if wrong)."""
        kind = type.value if isinstance(type, EventType) else type
        model = _MODELS.get(kind, Event)
        return model(type=kind, run_id=run_id, seq=-1, timestamp_ms=now_ms(), **fields)  # every base field is set

    @classmethod
    def trusted(cls, type: EventType, run_id: str, fields: dict[str, Any]) -> Event:
        """``create`` for fields that have their declared types already, not validated again (encoding.py): the
        gateway's own values, and values read from a stream line once checked (its models, or a ``TextLine``).

        ``fields`` leaves out the None ones, as ``create`` would, and is kept as it is (not to be changed
        after); a field its type does not declare, or a required one missing, is still refused (ValueError).
        """
        return cls.trusted_all(type, run_id, (fields,))[0]

    @classmethod
    def trusted_all(cls, type: EventType, run_id: str, given: Iterable[dict[str, Any]]) -> list[Event]:
        """``trusted`` for events of one type made together (the progress of the lines of one peer read): the
        model and its defaults looked up once, and one timestamp, the time they were made at."""
        kind = _KINDS[type]
        model = _MODELS[kind]
        declared, required = _DECLARED[model], _REQUIRED[model]
        head = {**_DEFAULTS[model], "type": kind, "run_id": run_id, "seq": -1, "timestamp_ms": now_ms()}
        line_head = encoding.line_head(kind, run_id)
        made: list[Event] = []
        for fields in given:
            if not fields.keys() <= declared:
                raise ValueError(f"{kind} has no field {sorted(fields.keys() - declared)}")
            if not required <= fields.keys():
                raise ValueError(f"{kind} needs the fields {sorted(required - fields.keys())}")
            event = encoding.unvalidated(model, {**head, **fields}, {*_BASE_FIELDS, *fields})
            encoding.assign(event, "_json", None)
            encoding.assign(event, "_given", fields)
            encoding.assign(event, "_head", line_head)
            made.append(event)
        return made

    @property
    def fields(self) -> dict[str, Any]:
        """The type-specific fields that were given, by name: the wire's view (a typed reader uses the model)."""
        given = self.model_fields_set
        declared = {
            name: getattr(self, name) for name in type(self).model_fields if name in given and name not in _BASE_FIELDS
        }
        return {**declared, **(self.model_extra or {})}

    def with_seq(self, seq: int) -> Event:
        """The event numbered ``seq``: an event not numbered yet is numbered in place (a log appends it once,
        so it is built once); one already numbered is copied."""
        if self.seq == -1:
            encoding.assign(self, "seq", seq)  # frozen for everyone else: the log numbers it, once
            return self
        return self.model_copy(update={"seq": seq})  # a copy has no JSON kept (slots are not copied)

    def to_dict(self) -> dict[str, Any]:
        base = {"type": self.type, "run_id": self.run_id, "seq": self.seq, "timestamp_ms": self.timestamp_ms}
        return {**base, **self.model_dump(mode="json", exclude_unset=True, exclude=_EXCLUDED)}

    def to_json(self) -> bytes:
        """The event as JSON; serialized once when numbered (it no longer changes then), shared by every reader."""
        try:
            encoded = self._json
        except AttributeError:  # made by validation, not serialized yet
            encoded = self._validated_json()
        else:
            if encoded is not None:
                return encoded
            values = self.__dict__
            given, head = self._given, self._head
            plain = None
            if given is not None and head is not None:
                plain = encoding.given_json(head, values["seq"], values["timestamp_ms"], given)
            encoded = plain or self._validated_json()
        if self.seq != -1:
            encoding.assign(self, "_json", encoded)  # frozen for everyone else
            encoding.assign(self, "_given", None)
            encoding.assign(self, "_head", None)
        return encoded

    def _validated_json(self) -> bytes:
        complete = self.__pydantic_fields_set__ >= _BASE_FIELDS
        return encoding.model_json(self, complete=complete, wire=self.to_dict)

    def __eq__(self, other: object) -> bool:
        """Equal fields make equal events, whether or not one of them has its JSON kept."""
        if not isinstance(other, Event):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    __hash__ = BaseModel.__hash__

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        """An event read back: its type's model, or a plain Event when it does not fit (a log of another version)."""
        model = _MODELS.get(str(data.get("type")), Event)
        try:
            return model.model_validate(data)
        except ValidationError:
            return Event.model_validate(data)


class _Typed(Event):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _required(model: type[BaseModel], name: str) -> Any:
    """The field ``name`` as ``model`` describes it, without a default: for a type whose every writer sets it."""
    return Field(description=model.model_fields[name].description)


# -- agent-tool calls ---------------------------------------------------------------------


class _Call(_Typed):
    call_id: str | None = Field(None, description="Identifies the call; every event of one call has it.")
    agent: str | None = Field(None, description="The URI of the agent called.")
    tool: str | None = Field(None, description="The agent tool, when a tool was called.")
    member: str | None = Field(None, description="The swarm member, when a remote member's turn was the call.")


class _CallTotals(_Call):
    task_id: str | None = Field(None, description="The peer's task id.")
    session_id: str | None = Field(None, description="The peer's session id.")
    accumulated_cost_usd: float | None = Field(None, description="Cost reported by the peer so far, in dollars.")
    chunks: int | None = Field(None, description="Stream lines or conversational turns passed on.")
    turns: int | None = Field(None, description="Conversational turns taken.")
    skipped_bytes: int | None = Field(None, description="Bytes that were not UTF-8, dropped from stream lines.")
    duration_ms: float | None = Field(None, description="Time since the call began.")


class _CallFailure(_CallTotals):
    reason: str | None = Field(
        None, description="Why the call ended: the error's reason (timeout, budget_exceeded, ...)."
    )
    message: str | None = Field(None, description="What happened, for a person.")
    timeout_s: float | None = Field(None, description="The deadline that passed.")
    max_cost_usd: float | None = Field(None, description="The budget that was crossed.")
    status: int | None = Field(None, description="The peer's HTTP status.")
    code: int | None = Field(None, description="The peer's error code.")
    body: Any = Field(None, description="The peer's error body.")
    location: str | None = Field(None, description="Where a redirect pointed (not followed).")
    max_connections: int | None = Field(None, description="The pool size, when the pool was exhausted.")
    state: str | None = Field(None, description="The peer's task state, when its task ended failed or canceled.")


class AgentToolInvokedEvent(_Call):
    event_type = EventType.AGENT_TOOL_INVOKED
    mode: str | None = Field(None, description="sync, streaming or conversational.")
    binding: str | None = Field(
        None,
        description="How the agent is spoken to: a2a-ndjson, jsonrpc-1.0, jsonrpc-0.3 (from its card), local or mcp; "
        "absent when the agent could not be reached to learn it.",
    )
    input: str | None = Field(None, description="The text sent.")
    input_data: list[dict[str, Any]] | None = Field(None, description="The data parts sent.")
    task_id: str | None = Field(None, description="The task id the call uses.")
    session_id: str | None = Field(None, description="The session id it uses.")
    timeout_ms: int | None = Field(None, description="The per-request deadline.")
    max_cost_usd: float | None = Field(None, description="The budget.")
    idle_timeout_secs: float | None = Field(None, description="Streaming: the longest silence allowed.")
    trace_id: str | None = Field(None, description="The OpenTelemetry trace of the call, when tracing is on.")


class AgentToolProgressEvent(_Call):
    event_type = EventType.AGENT_TOOL_PROGRESS
    chunk_index: int = Field(description="Counts the chunks passed on, from 0.")
    kind: str | None = Field(
        None,
        description="artifact, status, handoff, raw (a line that is no event), turn, or resubscribed "
        "(the stream broke and was picked up again where it broke).",
    )
    accumulated_cost_usd: float | None = Field(None, description="Cost so far, this chunk included.")
    cost_usd: float | None = Field(None, description="This chunk's own cost.")
    text: str | None = Field(None, description="The chunk's text.")
    data: list[dict[str, Any]] | None = Field(None, description="The chunk's data parts.")
    state: str | None = Field(None, description="A status line's (or a turn's) task state.")
    handoff: dict[str, Any] | None = Field(None, description="A handoff line's request.")
    raw: Any = Field(None, description="A line that is not an event, as received.")
    turn: int | None = Field(None, description="Conversational: the turn number, from 1.")
    skipped_bytes: int | None = Field(None, description="Bytes that were not UTF-8, dropped before this chunk.")
    attempt: int | None = Field(None, description="Resubscribed: which resubscribe of the call, from 1.")
    message: str | None = Field(None, description="Resubscribed: how the stream broke.")
    line_seq: int | None = Field(
        None, description="The seq of the peer's stream line: where a gateway taking the run over resubscribes after."
    )
    task_id: str | None = Field(
        None,
        description="On the first progress of a call whose server named the task (standard A2A): that task, which a "
        "gateway taking the run over follows again.",
    )


class _Settled(_CallTotals):
    """The end of a call the gateway saw through: whoever called, its totals are known."""

    call_id: str = _required(_Call, "call_id")
    agent: str = _required(_Call, "agent")
    accumulated_cost_usd: float = _required(_CallTotals, "accumulated_cost_usd")
    chunks: int = _required(_CallTotals, "chunks")
    turns: int = _required(_CallTotals, "turns")
    duration_ms: float = _required(_CallTotals, "duration_ms")


class AgentToolCompletedEvent(_Settled):
    event_type = EventType.AGENT_TOOL_COMPLETED
    state: str | None = Field(None, description="The task's last state.")
    text: str | None = Field(
        None,
        description="All text received; left out when it is the text of the call's agent_tool_progress events "
        "joined in order (text_in_chunks), so that a streamed answer is stored once.",
    )
    text_in_chunks: bool | None = Field(
        None, description="True when the text is its progress events' texts joined (see text; call_text)."
    )
    artifacts: int = Field(description="How many artifacts were received.")
    handoff: dict[str, Any] | None = Field(None, description="The transfer the agent asked for.")

    @property
    def outcome(self) -> str:
        """How the call ended, as its span and metrics say it: completed, or the failure's ``reason``."""
        return "completed"


class AgentToolTerminatedEvent(_Settled, _CallFailure):
    """This gateway ended the call and sent a best-effort ``tasks/cancel``."""

    event_type = EventType.AGENT_TOOL_TERMINATED
    reason: str = _required(_CallFailure, "reason")
    message: str = _required(_CallFailure, "message")
    cancel_sent: bool = Field(description="Whether a tasks/cancel was sent.")
    cancel_acknowledged: bool | None = Field(None, description="Whether the peer answered it with a canceled task.")
    rejected_chunk: dict[str, Any] | None = Field(None, description="The stream line that crossed the budget.")
    rejected_reply: str | None = Field(None, description="The reply that crossed the budget.")
    line_bytes: int | None = Field(None, description="The size seen of a line over the limit.")
    max_line_bytes: int | None = Field(None, description="The line limit.")
    stream_bytes: int | None = Field(None, description="The size seen of a stream over the limit.")
    max_stream_bytes: int | None = Field(None, description="The stream limit.")

    @property
    def outcome(self) -> str:
        return self.reason


class AgentToolErrorEvent(_CallFailure):
    """The peer or the network failed the call."""

    event_type = EventType.AGENT_TOOL_ERROR
    call_id: str = _required(_Call, "call_id")
    reason: str = _required(_CallFailure, "reason")
    error: str | None = Field(None, description="The error's class.")

    @property
    def outcome(self) -> str:
        return self.reason


# -- swarm runs ---------------------------------------------------------------------------


class RunStartedEvent(_Typed):
    event_type = EventType.RUN_STARTED
    session_id: str | None = Field(None, description="The session of the turn.")
    agent: str | None = Field(None, description="The agent that answers first.")
    user_message: str | None = Field(None, description="What the user said.")
    interrupted_run: str | None = Field(None, description="The run of the session's previous turn, if it never ended.")
    trace_id: str | None = Field(None, description="The OpenTelemetry trace of the run, when tracing is on.")


class RunCompletedEvent(_Typed):
    event_type = EventType.RUN_COMPLETED
    agent: str = Field(description="The agent that answered last.")
    active_agent_name: str = Field(description="The agent that holds the conversation now.")
    content: str = Field(description="The answer.")
    handoffs: int = Field(description="Transfers in the turn.")
    tool_calls: int = Field(description="Tool executions in the turn.")
    session_version: int = Field(description="The session's version once saved.")
    state: str = Field(
        description="completed, or input-required when the turn ends with a question: escalated to a human, or a "
        "remote member asked the user (its task is input-required; the next message continues it)."
    )
    pending_tool_calls: list[dict[str, Any]] | None = Field(
        None, description="With execute_tools=False: the tool calls returned instead of run (OpenAI shape)."
    )
    usage_by_agent: dict[str, dict[str, float]] = Field(
        description="Per agent that spoke: prompt_tokens, completion_tokens, model_calls and cost_usd "
        "(its models' cost, or a remote agent's reported cost).",
    )


class RunFailedEvent(_Typed):
    event_type = EventType.RUN_FAILED
    agent: str | None = Field(None, description="The agent holding the conversation when it failed.")
    error: str = Field(description='Why, for a person ("cancelled: ..." when cancelled).')
    error_type: str = Field(description="The error's class; Interrupted for a run whose process stopped.")


class RunCancelledEvent(_Typed):
    """A cancel of the run was accepted by the replica that runs it; the run's own ending events follow it.

    They are ``run_failed`` ("cancelled: ...") for a turn, and ``agent_tool_terminated`` (reason
    ``cancelled``, with ``cancel_sent`` and ``cancel_acknowledged``) for each agent call in flight.
    """

    event_type = EventType.RUN_CANCELLED
    by: str | None = Field(None, description="Who asked: the caller's name (None on a gateway without tokens).")
    reason: str = Field(description="Why, for a person; the run's cancellation carries the same text.")
    cause: str = Field(description="api (POST /runs/{id}/cancel) or disconnect (the client asked for it).")


class RunResumedEvent(_Typed):
    """The run's process stopped mid-run and another one took it over: what follows continues the same run."""

    event_type = EventType.RUN_RESUMED
    by: str = Field(description="The gateway process (replica) that resumed the run.")
    after_seq: int = Field(description="The last seq the run had before it was resumed.")
    agent: str | None = Field(None, description="The agent whose step goes on.")
    step: str = Field(
        description="reattached (an agent call in flight, followed again by its task id, never sent twice) "
        "or redone (a model step, run again from the session as the turn started)."
    )
    task_id: str | None = Field(None, description="Reattached: the remote task followed again.")
    call_id: str | None = Field(None, description="Reattached: the call that goes on.")


class _Speech(_Typed):
    agent: str = Field(description="The agent speaking.")
    remote: bool | None = Field(None, description="Whether the agent runs elsewhere.")


class MessageEvent(_Speech):
    event_type = EventType.MESSAGE
    role: str = Field(description="assistant.")
    content: str = Field(
        description="The message's text; \"\" when it is its text_delta events' texts joined (content_in_deltas), "
        "so that a streamed answer is stored once."
    )
    content_in_deltas: bool | None = Field(
        None,
        description="True when the text is the agent's text_delta events since its message before, joined "
        "(message_text).",
    )
    tool_calls: list[dict[str, Any]] = Field(description="The tool calls it makes (OpenAI shape).")
    state: str | None = Field(None, description="A remote agent's task state.")
    cost_usd: float | None = Field(None, description="A remote agent's reported cost.")


class TextDeltaEvent(_Speech):
    event_type = EventType.TEXT_DELTA
    text: str = Field(description="A piece of the answer as it streams.")


class ModelCallEvent(_Speech):
    """One model generation of a local agent, with the usage its provider reported."""

    event_type = EventType.MODEL_CALL
    system: str = Field(description="The provider: openai (any OpenAI-compatible endpoint) or offline.")
    model: str = Field(description="The model's name.")
    prompt_tokens: int | None = Field(None, description="Input tokens, as the provider counted them.")
    completion_tokens: int | None = Field(None, description="Output tokens, as the provider counted them.")
    cost_usd: float | None = Field(None, description="The call's cost, where a price is configured.")
    duration_ms: float = Field(description="Time from the request to the whole response.")


class ToolCallEvent(_Speech):
    event_type = EventType.TOOL_CALL
    tool: str = Field(description="The tool called.")
    call_id: str = Field(description="Pairs the call with its result.")
    arguments: dict[str, Any] = Field(description="The arguments.")


class ToolResultEvent(_Speech):
    event_type = EventType.TOOL_RESULT
    tool: str = Field(description="The tool.")
    call_id: str = Field(description="The call answered.")
    content: str = Field(description="The result as the model reads it.")


class SwarmHandoffEvent(_Typed):
    """A transfer the runner accepted: another swarm member takes the conversation."""

    event_type = EventType.HANDOFF
    source: str = Field(description="The agent handing over.")
    target: str = Field(description="The agent taking over.")
    reason: str | None = Field(None, description="Why, as the source said.")
    hop: int = Field(description="Transfers in the turn, this one included.")
    remote: bool = Field(description="Whether either side runs elsewhere.")


class AgentChangedEvent(_Typed):
    event_type = EventType.AGENT_CHANGED
    previous: str = Field(description="Who held the conversation.")
    agent: str = Field(description="Who holds it now.")
    cause: str | None = Field(
        None,
        description="At a turn's start: not_registered or removed (the previous one is gone); router (the semantic "
        "router routed the message); fallback (the supervisor took over after a limit or a cycle); unreachable "
        "(the remote agent could not be reached: the fallback supervisor, else the starting agent, took the turn).",
    )


class HandoffRefusedEvent(_Typed):
    event_type = EventType.HANDOFF_REFUSED
    source: str = Field(description="The agent that asked.")
    target: str = Field(description="The target it named.")
    cause: str = Field(
        description="self, transfers_blocked, max_handoffs_per_turn, cycle, one_per_response, forbidden_target, "
        "spawns_process or host_not_allowed.",
    )
    reason: str | None = Field(None, description="The reason the agent gave.")
    detail: str | None = Field(None, description="Why a remote agent's target may not be resolved.")
    remote: bool | None = Field(None, description="Whether a remote agent asked.")


class CycleDetectedEvent(_Typed):
    event_type = EventType.CYCLE_DETECTED
    agent: str = Field(description="The agent that asked for the transfer.")
    source: str = Field(description="The same agent.")
    target: str = Field(description="The target that would repeat the cycle.")
    path: list[str] = Field(description="The agents of the repeated cycle, in order.")


class LimitReachedEvent(_Typed):
    event_type = EventType.LIMIT_REACHED
    agent: str = Field(description="The agent at the limit.")
    limit: str = Field(description="max_handoffs_per_turn, max_tool_iterations or max_turns.")
    value: int = Field(description="The limit's value.")


class EscalatedEvent(_Typed):
    """A limit or a cycle tripped and the runner's fallback took the conversation: a supervisor, or a human."""

    event_type = EventType.ESCALATED
    agent: str = Field(description="The agent holding the conversation when it tripped.")
    reason: str = Field(description="max_handoffs_per_turn or cycle.")
    target: str = Field(description="The transfer that was refused.")
    path: list[str] = Field(description="The agents that held the conversation in the turn, in order.")
    fallback: str = Field(description="human (the turn ends input-required), or the supervisor's name.")


class RouterDecisionEvent(_Typed):
    """The semantic router compared the user's message with the agents' example utterances."""

    event_type = EventType.ROUTER_DECISION
    agent: str = Field(description="The agent holding the conversation before the decision.")
    candidate: str = Field(description="The agent with the closest example utterance.")
    example: str = Field(description="That utterance.")
    score: float = Field(description="Its cosine similarity with the message.")
    threshold: float = Field(description="The score a route needs.")
    decision: str = Field(
        description="route (the candidate answers), stay (the candidate already holds the conversation), "
        "abstain (below the threshold: the active agent decides) or refused (the turn allows no transfer).",
    )


CallEnd = AgentToolCompletedEvent | AgentToolTerminatedEvent | AgentToolErrorEvent
"""The event that ends an agent call: one of three models, which readers take together."""
CALL_END_MODELS: frozenset[type[Event]] = frozenset(
    {AgentToolCompletedEvent, AgentToolTerminatedEvent, AgentToolErrorEvent}
)


def call_end(event: Event) -> CallEnd | None:
    """``event`` as the end of an agent call, or None: ``type(event) is ...`` for the three models at once."""
    return cast("CallEnd", event) if type(event) in CALL_END_MODELS else None


def call_text(events: Iterable[Event], call_id: str) -> str:
    """The whole text of the agent call ``call_id`` from a run's events: its completed event's ``text``, or, when
    that says ``text_in_chunks``, its progress events' texts joined (how a streamed answer is stored once)."""
    chunks: list[str] = []
    for event in events:
        if event.fields.get("call_id") != call_id:
            continue
        if type(event) is AgentToolProgressEvent and event.text:
            chunks.append(event.text)
        elif type(event) is AgentToolCompletedEvent:
            return "".join(chunks) if event.text_in_chunks else event.text or ""
    return "".join(chunks)


def message_text(events: Iterable[Event], message: MessageEvent) -> str:
    """The whole text of ``message`` from its run's events: its ``content``, or, when that says
    ``content_in_deltas``, the text_delta events of its agent since that agent's message before."""
    messages = StreamedMessages()
    for event in events:
        if event.seq >= message.seq:
            break
        messages.text_of(event)
    return messages.text_of(message) or ""


class StreamedMessages:
    """A run's events read in order, each ``message`` given its whole text (for a reader of a live stream):
    a message that says ``content_in_deltas`` is its agent's text deltas since its message before."""

    def __init__(self) -> None:
        self._deltas: dict[str, list[str]] = {}

    def text_of(self, event: Event) -> str | None:
        """The whole text of ``event`` when it is a message; None for any other (a text delta is kept for later)."""
        if type(event) is TextDeltaEvent:
            self._deltas.setdefault(event.agent, []).append(event.text)
        elif type(event) is MessageEvent:
            streamed = "".join(self._deltas.pop(event.agent, []))
            return streamed if event.content_in_deltas else event.content
        return None


_MODELS: dict[str, type[Event]] = {
    model.event_type.value: model
    for model in (
        AgentToolInvokedEvent,
        AgentToolProgressEvent,
        AgentToolCompletedEvent,
        AgentToolTerminatedEvent,
        AgentToolErrorEvent,
        RunStartedEvent,
        RunCompletedEvent,
        RunFailedEvent,
        RunCancelledEvent,
        RunResumedEvent,
        MessageEvent,
        TextDeltaEvent,
        ModelCallEvent,
        ToolCallEvent,
        ToolResultEvent,
        SwarmHandoffEvent,
        AgentChangedEvent,
        HandoffRefusedEvent,
        CycleDetectedEvent,
        LimitReachedEvent,
        EscalatedEvent,
        RouterDecisionEvent,
    )
    if model.event_type is not None
}
assert set(_MODELS) == {kind.value for kind in EventType}, "every event type has its model"
_KINDS = {kind: kind.value for kind in EventType}  # an enum's value is a property, slow to read once per chunk
_DECLARED = {model: frozenset(model.model_fields) - _BASE_FIELDS for model in _MODELS.values()}
"""Per model, the fields its type declares (``trusted`` refuses others)."""
_REQUIRED = {
    model: frozenset(name for name, info in model.model_fields.items() if info.is_required()) - _BASE_FIELDS
    for model in _MODELS.values()
}
"""Per model, the fields every event of its type has (``trusted`` refuses an event without one)."""
_DEFAULTS = {
    model: {name: None if info.is_required() else info.default for name, info in model.model_fields.items()}
    for model in _MODELS.values()
}
"""Per model, what a field not given holds (every default is a constant), in the declared order."""


def reference() -> str:
    """docs/events.md's tables: every event type with its fields, types and meaning (from the models above);
    ``required`` marks the fields every event of the type has, the others may be left out."""
    lines: list[str] = []
    for kind in EventType:
        model = _MODELS[kind.value]
        lines += [f"### `{kind.value}`", ""]
        if model.__doc__ and not model.__doc__.startswith(model.__name__):
            lines += [model.__doc__.strip().splitlines()[0], ""]
        lines += ["| field | type | required | meaning |", "|---|---|---|---|"]
        for name, info in model.model_fields.items():
            if name in _BASE_FIELDS:
                continue
            required = "yes" if info.is_required() else ""
            lines.append(f"| `{name}` | `{_type_name(info.annotation)}` | {required} | {info.description or ''} |")
        lines.append("")
    return "\n".join(lines)


def _type_name(annotation: object) -> str:
    """``str`` for ``str | None`` (the table says whether a field may be left out), ``list[str]`` for ``list[str]``."""
    name = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    return name.replace("typing.", "").replace(" | None", "").replace("NoneType", "")


if __name__ == "__main__":
    print(reference())
