"""The one engine that calls a peer: an agent tool in its three modes, and a remote swarm member's turn.

A call is handed everything it needs (the peer, a ``CallSpec`` with the deadlines and the
budget, the run's recorder); it sends with a deadline or streams with the idle timeout and
the budget, checks what the peer sends, sends the best-effort cancel under the gateway's
cancel deadline, and reads the reply. Whoever calls, the failure reasons and the events
are the same.

Events, all with ``call_id``, ``agent`` (the URI), ``tool`` or ``member`` (who called) and,
from the log, ``seq``: ``agent_tool_invoked``; ``agent_tool_progress`` per stream line or
conversational turn passed on; then exactly one of ``agent_tool_completed``,
``agent_tool_terminated`` (this gateway ended the call: budget, idle, per-request timeout,
oversized line or stream, the caller cancelled; a ``tasks/cancel`` was sent) or
``agent_tool_error`` (the peer or the network failed), each with the ``reason``. A chunk's
progress event is appended before the chunk is added to the result (its text, artifacts,
state, cost, handoff), so whatever happens next, the log holds every chunk the result holds.

What a peer reports is checked before it is used: a ``metadata.cost_usd`` or a line's
``cost_usd`` that is not a finite number >= 0, or a ``metadata.handoff`` that is not a
handoff request, fails the call with ``PeerProtocolError`` (``bad_answer``).
"""

from __future__ import annotations

import inspect
import logging
import math
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from protocol import (
    ArtifactEvent,
    DataPart,
    HandoffEvent,
    HandoffRequest,
    Message,
    OversizedLine,
    SkippedBytes,
    StatusEvent,
    Task,
    TaskSendParams,
    TaskState,
    parts_text,
)

from .agent_result import AgentToolResult
from .agent_tool import AgentTool, Mode
from .budget import Budget
from .errors import AgentTaskFailed, AgentToolError, AgentToolTimeout, BudgetExceeded, PeerProtocolError
from .events import EventType
from .idle_timeout import IdleTimeout, with_idle_timeout
from .peers.base import UNRESOLVED, Peer, RawLine, Resubscribed, StreamItem, StreamTooLarge
from .recorder import RunRecorder
from .telemetry import spans

if TYPE_CHECKING:
    from opentelemetry.trace import Span

logger = logging.getLogger(__name__)

_FAILED_STATES = (TaskState.FAILED.value, TaskState.CANCELED.value)
_ENDINGS = frozenset({EventType.AGENT_TOOL_COMPLETED, EventType.AGENT_TOOL_TERMINATED, EventType.AGENT_TOOL_ERROR})

ConnectPeer = Callable[[], Peer]
"""How a call gets its peer; an ``AgentToolError`` it raises fails the call, recorded like any failure."""


@dataclass(frozen=True)
class CallSpec:
    """What one call is: whose (``tool`` or ``member``), to which ``agent``, how, and within which limits."""

    agent: str
    mode: Mode
    timeout_s: float
    idle_timeout_s: float
    cancel_timeout_s: float
    budget: Budget = field(default_factory=Budget)
    tool: str | None = None
    member: str | None = None

    @classmethod
    def of_tool(cls, tool: AgentTool, cancel_timeout_s: float) -> CallSpec:
        return cls(
            agent=tool.agent,
            mode=tool.mode,
            timeout_s=tool.timeout_ms / 1000,
            idle_timeout_s=tool.idle_timeout_s,
            cancel_timeout_s=cancel_timeout_s,
            budget=tool.budget,
            tool=tool.name,
        )


@dataclass(frozen=True)
class _Reply:
    """A Task's metadata, checked once: its total cost and its transfer request."""

    cost_usd: float
    handoff: HandoffRequest | None


class _Terminated(Exception):
    """Internal: the gateway decided to end the call; carries the public error and the cancel's outcome."""

    def __init__(self, error: AgentToolError, *, cancel: bool = True, **fields: Any) -> None:
        super().__init__(error.message)
        self.error = error
        self.fields = fields
        self.cancel_wanted = cancel
        self.cancel_sent: bool | None = None
        self.cancel_acknowledged = False


class AgentCall:
    """One call; ``run()`` for the whole result, or ``stream()`` for its text as it arrives (streaming mode)."""

    def __init__(
        self,
        connect: ConnectPeer,
        recorder: RunRecorder,
        spec: CallSpec,
        message: Message,
        *,
        session_id: str | None = None,
        task_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.recorder = recorder
        self.message = message
        self.metadata = metadata
        self.result = AgentToolResult(
            call_id="call_" + uuid.uuid4().hex[:16],
            tool=spec.tool or spec.member or "",
            agent=spec.agent,
            mode=spec.mode.kind,
            run_id=recorder.run_id,
            task_id=task_id,
            session_id=session_id,
        )
        self._connect = connect
        self._peer: Peer | None = None
        self._started = time.monotonic()
        self._skipped_bytes = 0  # non-UTF-8 bytes dropped from lines not yet recorded in a progress event
        self._skipped_total = 0
        self._invoked_recorded = False
        self._span: Span | None = None

    async def run(self) -> AgentToolResult:
        """The call in its mode; raises an AgentToolError (with ``.partial``) when it fails."""
        async with aclosing(self._traced(self._recorded(self._in_mode()))) as pieces:
            async for _ in pieces:
                pass
        return self.result

    async def stream(self) -> AsyncGenerator[str, None]:
        """A streaming call's text, each piece once its progress event is recorded; ``result`` is final after."""
        async with aclosing(self._traced(self._recorded(self._streaming()))) as pieces:
            async for piece in pieces:
                yield piece

    async def close_run(self) -> None:
        with anyio.CancelScope(shield=True):
            await self.recorder.log.close_run(self.recorder.run_id)

    # -- the call's life, recorded -------------------------------------------------------

    async def _traced(self, pieces: AsyncGenerator[str, None]) -> AsyncGenerator[str, None]:
        """The call inside its span (telemetry/spans.py); the event that ends the call sets its outcome."""
        spec = self.spec
        caller = spec.tool or spec.member or ""
        with spans.agent_tool(
            caller, spec.agent, spec.mode.kind, spec.budget.max_cost_usd, self.recorder.run_id
        ) as span:
            self._span = span
            async with aclosing(pieces) as recorded:
                async for piece in recorded:
                    yield piece

    async def _recorded(self, body: AsyncGenerator[str, None]) -> AsyncGenerator[str, None]:
        """``agent_tool_invoked``, the body, then the one event that says how the call ended.

        The peer is found first (for an ``http(s)://`` agent, its card says which binding it
        speaks), so ``agent_tool_invoked`` names the binding; a failure to find it is recorded
        after ``agent_tool_invoked`` like any other.
        """
        try:
            await self._connected()
            await self._invoked()
            async with aclosing(body) as pieces:
                async for piece in pieces:
                    yield piece
        except _Terminated as stop:
            await self._invoked()
            await self._terminated(stop)
            raise stop.error from None
        except AgentToolError as exc:
            exc.partial = self.result
            await self._invoked()
            await self._emit(
                EventType.AGENT_TOOL_ERROR,
                reason=exc.reason,
                error=type(exc).__name__,
                message=exc.message,
                **exc.event_fields(),
                **self._totals(),
            )
            raise
        except (anyio.get_cancelled_exc_class(), GeneratorExit):
            with anyio.CancelScope(shield=True):
                await self._invoked()
                await self._terminated(_Terminated(AgentToolError("the caller cancelled the call", reason="cancelled")))
            raise
        except Exception as exc:
            # Not a failure the call knows (a bug, a raising next_input): still the call's last step.
            with anyio.CancelScope(shield=True):
                await self._invoked()
                await self._emit(
                    EventType.AGENT_TOOL_ERROR,
                    reason="internal_error",
                    error=type(exc).__name__,
                    message=str(exc) or type(exc).__name__,
                    **self._totals(),
                )
            raise
        await self._emit(
            EventType.AGENT_TOOL_COMPLETED,
            state=self.result.state,
            text=self.result.text,
            artifacts=len(self.result.artifacts),
            handoff=self.result.handoff.to_wire() if self.result.handoff else None,
            **self._totals(),
        )

    async def _connected(self) -> None:
        """The peer that speaks the agent's binding; a new task's id minted here when the caller names tasks."""
        peer = self._connect()
        self._peer = peer
        resolve = getattr(peer, "resolve", None)  # a peer written before peers could learn their binding has none
        if resolve is not None:
            self._peer = peer = await resolve()
        if self.result.task_id is None and getattr(peer, "names_tasks", True):
            self.result.task_id = "task_" + uuid.uuid4().hex

    def _binding(self) -> str | None:
        binding = getattr(self._peer, "binding", None)
        return binding if isinstance(binding, str) and binding != UNRESOLVED else None

    async def _invoked(self) -> None:
        """``agent_tool_invoked``, once, however early the call ends."""
        if self._invoked_recorded:
            return
        self._invoked_recorded = True
        await self._emit(
            EventType.AGENT_TOOL_INVOKED,
            mode=self.spec.mode.kind,
            binding=self._binding(),
            input=self.message.text or None,
            input_data=_data(self.message) or None,
            task_id=self.result.task_id,
            session_id=self.result.session_id,
            timeout_ms=round(self.spec.timeout_s * 1000),
            max_cost_usd=self.spec.budget.max_cost_usd,
            idle_timeout_secs=self.spec.idle_timeout_s if self.spec.mode.kind == "streaming" else None,
        )

    async def _in_mode(self) -> AsyncGenerator[str, None]:
        if self.spec.mode.kind == "streaming":
            async with aclosing(self._streaming()) as pieces:
                async for piece in pieces:
                    yield piece
        elif self.spec.mode.kind == "conversational":
            await self._conversational()
        else:
            await self._sync()

    # -- modes -------------------------------------------------------------------------

    async def _sync(self) -> None:
        task = await self._send_turn(self._params(self.message))
        reply = self._read_reply(task)
        self._check_budget(reply.cost_usd, task=task)
        self._take_task(task, reply)
        self.result.text = task.output_text
        self.result.artifacts = list(task.artifacts)
        self._raise_if_failed(task)

    async def _streaming(self) -> AsyncGenerator[str, None]:
        peer = self._peer
        assert peer is not None
        async with peer.subscribe(self._params(self.message)) as stream:
            try:
                async with aclosing(with_idle_timeout(stream, self.spec.idle_timeout_s)) as items:
                    async for item in items:
                        piece, final = await self._on_line(item)
                        if piece:
                            yield piece
                        if final:
                            return
            except IdleTimeout as exc:
                error = AgentToolTimeout(
                    f"no data from {self.spec.agent} for {exc.seconds:g} s", reason="idle_timeout", seconds=exc.seconds
                )
                raise await self._cancel_for(_Terminated(error)) from None
            except _Terminated as stop:
                raise await self._cancel_for(stop) from None
        raise PeerProtocolError(f"the stream from {self.spec.agent} ended without a final line", reason="cut_off")

    async def _conversational(self) -> None:
        message = self.message
        replies: list[str] = []
        for turn in range(1, self.spec.mode.max_turns + 1):
            task = await self._send_turn(self._params(message))
            meta = self._read_reply(task)
            self._check_budget(meta.cost_usd, task=task)
            reply = task.output_text
            await self._progress(
                kind="turn", turn=turn, state=task.status.state.value, text=reply, accumulated_cost_usd=meta.cost_usd
            )
            self._take_task(task, meta)
            self.result.turns = turn
            replies.append(reply)
            self.result.text = "\n".join(replies)
            self.result.artifacts.extend(task.artifacts)
            self._raise_if_failed(task)
            if task.status.state is TaskState.COMPLETED or turn == self.spec.mode.max_turns:
                return
            next_message = await self._next_input(reply)
            if next_message is None:
                return
            message = next_message

    # -- one request with its deadline, one stream line ---------------------------------

    async def _send_turn(self, params: TaskSendParams) -> Task:
        """``peer.send`` within ``timeout_s`` of the request being sent; past it, cancel the task, request still open.

        The deadline decides: once it has passed, the answer that may still arrive (the task
        ending ``canceled`` because of that very cancel) is not the outcome.
        """
        peer = self._peer
        assert peer is not None
        timeout_s = self.spec.timeout_s
        outcome: Task | Exception | None = None
        stopped: _Terminated | None = None
        done = anyio.Event()
        deadline = anyio.CancelScope()

        def sent() -> None:
            deadline.deadline = anyio.current_time() + timeout_s

        def named(task_id: str) -> None:
            self.result.task_id = task_id

        async def send() -> None:
            nonlocal outcome
            try:
                if getattr(peer, "names_tasks", True):
                    outcome = await peer.send(params, on_sent=sent)
                else:  # the server names the task: learn its id as soon as it does, for a cancel at the deadline
                    outcome = await peer.send(params, on_sent=sent, on_task=named)
            except Exception as exc:  # raised below, in the caller's task, not as an ExceptionGroup
                outcome = exc
            finally:
                done.set()

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(send)
            with deadline:
                await done.wait()
            if deadline.cancelled_caught:
                error = AgentToolTimeout(
                    f"{self.spec.agent} did not answer within {round(timeout_s * 1000)} ms",
                    reason="timeout",
                    seconds=timeout_s,
                )
                stopped = await self._cancel_for(_Terminated(error))
                task_group.cancel_scope.cancel()
        if stopped is not None:
            raise stopped
        if isinstance(outcome, Exception):
            raise outcome
        assert outcome is not None
        return outcome

    async def _on_line(self, item: StreamItem) -> tuple[str, bool]:
        """Check the budget, then pass one line on as a progress event: its text, and whether it was the final line.

        The progress event is appended first, then the line is added to the result.
        """
        if isinstance(item, OversizedLine):
            error = PeerProtocolError(
                f"{self.spec.agent} sent a line over {item.limit} bytes ({item.size} seen)", reason="line_too_long"
            )
            raise _Terminated(error, line_bytes=item.size, max_line_bytes=item.limit)
        if isinstance(item, StreamTooLarge):
            error = PeerProtocolError(
                f"{self.spec.agent} streamed more than {item.limit} bytes in one answer; what came before is kept",
                reason="answer_too_large",
            )
            raise _Terminated(error, stream_bytes=item.size, max_stream_bytes=item.limit)
        if isinstance(item, SkippedBytes):
            logger.warning("skipped %d bytes that are not UTF-8 in a stream line from %s", item.count, self.spec.agent)
            self._skipped_bytes += item.count
            self._skipped_total += item.count
            return "", False
        if isinstance(item, RawLine):
            await self._progress(kind="raw", raw=item.raw)
            return "", False
        if isinstance(item, Resubscribed):
            await self._progress(kind="resubscribed", attempt=item.attempt, message=item.why)
            return "", False
        if self.result.task_id is None:
            self.result.task_id = item.id  # a server that names tasks named it in its first line
        cost = _cost(item.cost_usd, f"{self.spec.agent} sent a stream line whose cost_usd")
        total = self.result.cost_usd + cost
        if cost:
            self._check_budget(total, line=item)
        if isinstance(item, ArtifactEvent):
            text = parts_text(item.artifact.parts)
            await self._progress(
                kind="artifact",
                cost_usd=cost,
                text=text or None,
                data=_data_of(item) or None,
                accumulated_cost_usd=total,
            )
            self.result.cost_usd = total
            self.result.add_streamed(item.artifact)
            return text, False
        if isinstance(item, HandoffEvent):
            await self._progress(
                kind="handoff", cost_usd=cost, handoff=item.handoff.to_wire(), accumulated_cost_usd=total
            )
            self.result.cost_usd = total
            self.result.handoff = self.result.handoff or item.handoff
            return "", False
        state = item.status.state.value
        message = item.status.message
        if not item.final:
            await self._progress(
                kind="status",
                state=state,
                cost_usd=cost,
                text=(message.text or None) if message else None,
                data=_data(message) or None if message else None,
                accumulated_cost_usd=total,
            )
            self.result.cost_usd = total
            self.result.state = state
            return "", False
        self.result.cost_usd = total
        self.result.state = state
        if message is not None and not self.result.text:
            self.result.text = message.text
        if state in _FAILED_STATES:
            raise AgentTaskFailed(state, message.text if message else "")
        return "", True

    # -- limits and cancel ------------------------------------------------------------------

    def _check_budget(
        self, total: float, *, task: Task | None = None, line: StatusEvent | ArtifactEvent | HandoffEvent | None = None
    ) -> None:
        """Raise before the chunk (stream line or reply) that takes the cost above the budget is passed on."""
        if not self.spec.budget.exceeded_by(total):
            return
        self.result.cost_usd = total
        error = BudgetExceeded(total, self.spec.budget.max_cost_usd or 0.0)
        if line is not None:
            if isinstance(line, StatusEvent) and line.final:
                # A final line's cost (e.g. the total billed at the end) arrives once the task has ended.
                self.result.state = line.status.state.value
                raise _Terminated(error, cancel=False, rejected_chunk=line.to_wire())
            raise _Terminated(error, rejected_chunk=line.to_wire())
        assert task is not None
        self.result.state = task.status.state.value
        raise _Terminated(error, cancel=not task.status.state.is_terminal, rejected_reply=task.output_text)

    async def _cancel_for(self, stop: _Terminated) -> _Terminated:
        """Send the best-effort ``tasks/cancel`` once, under its own short deadline; note if it was acknowledged."""
        if stop.cancel_sent is not None:
            return stop
        peer, task_id = self._peer, self.result.task_id
        stop.cancel_sent = stop.cancel_wanted and peer is not None and task_id is not None
        if stop.cancel_sent:
            assert peer is not None
            assert task_id is not None
            with anyio.move_on_after(self.spec.cancel_timeout_s, shield=True):
                stop.cancel_acknowledged = await peer.cancel(task_id)
        return stop

    async def _terminated(self, stop: _Terminated) -> None:
        await self._cancel_for(stop)
        stop.error.partial = self.result
        await self._emit(
            EventType.AGENT_TOOL_TERMINATED,
            reason=stop.error.reason,
            message=stop.error.message,
            cancel_sent=stop.cancel_sent,
            cancel_acknowledged=stop.cancel_acknowledged,
            **stop.error.event_fields(),
            **stop.fields,
            **self._totals(),
        )

    # -- helpers ------------------------------------------------------------------------

    def _params(self, message: Message) -> TaskSendParams:
        return TaskSendParams(
            id=self.result.task_id, session_id=self.result.session_id, message=message, metadata=self.metadata
        )

    def _read_reply(self, task: Task) -> _Reply:
        """The reply's ``metadata.cost_usd`` and ``metadata.handoff``, checked; PeerProtocolError when malformed."""
        cost = _cost(task.metadata.get("cost_usd"), f"{self.spec.agent} answered a task whose metadata.cost_usd")
        handoff: HandoffRequest | None = None
        raw = task.metadata.get("handoff")
        if raw is not None:
            try:
                handoff = HandoffRequest.model_validate(raw)
            except ValidationError as exc:
                raise PeerProtocolError(
                    f"{self.spec.agent} answered a task whose metadata.handoff is not a handoff request "
                    f'({{"target": NAME, "reason"?, "payload"?}}): {_first_error(exc)}',
                    reason="bad_answer",
                ) from None
        return _Reply(cost_usd=cost, handoff=handoff)

    def _take_task(self, task: Task, reply: _Reply) -> None:
        self.result.task_id = task.id
        self.result.session_id = task.session_id or self.result.session_id
        self.result.state = task.status.state.value
        self.result.cost_usd = reply.cost_usd
        if reply.handoff is not None:
            self.result.handoff = reply.handoff

    def _raise_if_failed(self, task: Task) -> None:
        if task.status.state.value in _FAILED_STATES:
            message = task.status.message.text if task.status.message else ""
            raise AgentTaskFailed(task.status.state.value, message)

    async def _next_input(self, reply: str) -> Message | None:
        decide = self.spec.mode.next_input
        if decide is None:
            return Message.user(reply) if reply else None
        value = decide(reply, self.result)
        if inspect.isawaitable(value):
            value = await value
        if value is None:
            return None
        return value if isinstance(value, Message) else Message.user(str(value))

    async def _progress(self, *, accumulated_cost_usd: float | None = None, **fields: Any) -> None:
        """Append one progress event, then count the chunk (its data is added to the result by the caller, after)."""
        skipped, self._skipped_bytes = self._skipped_bytes, 0
        await self._emit(
            EventType.AGENT_TOOL_PROGRESS,
            chunk_index=self.result.chunks,
            accumulated_cost_usd=self.result.cost_usd if accumulated_cost_usd is None else accumulated_cost_usd,
            skipped_bytes=skipped or None,
            **fields,
        )
        self.result.chunks += 1

    def _totals(self) -> dict[str, Any]:
        return {
            "task_id": self.result.task_id,
            "session_id": self.result.session_id,
            "accumulated_cost_usd": self.result.cost_usd,
            "chunks": self.result.chunks,
            "turns": self.result.turns,
            "skipped_bytes": self._skipped_total or None,
            "duration_ms": round((time.monotonic() - self._started) * 1000, 3),
        }

    async def _emit(self, type: EventType, **fields: Any) -> None:
        caller = {"tool": self.spec.tool, "member": self.spec.member}
        present = {key: value for key, value in {**caller, **fields}.items() if value is not None}
        if type in _ENDINGS and self._span is not None:
            outcome = "completed" if type is EventType.AGENT_TOOL_COMPLETED else str(fields.get("reason"))
            spans.agent_tool_outcome(self._span, outcome, cost_usd=self.result.cost_usd, chunks=self.result.chunks)
        await self.recorder.emit(type, call_id=self.result.call_id, agent=self.spec.agent, **present)


def _cost(value: object, what: str) -> float:
    """A reported cost: missing is 0; anything but a finite number >= 0 is the peer's error."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise PeerProtocolError(f"{what} is not a number of dollars >= 0: {value!r}", reason="bad_answer")
    return float(value)


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc", ())) or "value"
    return f"{where}: {error.get('msg', 'invalid')}"


def _data(message: Message) -> list[dict[str, Any]]:
    return [part.data for part in message.parts if isinstance(part, DataPart)]


def _data_of(event: ArtifactEvent) -> list[dict[str, Any]]:
    return [part.data for part in event.artifact.parts if isinstance(part, DataPart)]
