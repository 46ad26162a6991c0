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

Apart from this lifecycle: a stream's lines read and checked (lines.py), a reply's cost and
transfer request checked (reports.py), the gateway's decision to end a call and its cancel
(termination.py).
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio

from agent_server.hop import current_account
from gateway.calls.budget import Budget
from gateway.calls.idle_timeout import IdleTimeout, with_idle_timeout
from gateway.calls.lines import FAILED_STATES, Line, LineReader
from gateway.calls.reattach import Reattach, followed_again
from gateway.calls.reports import Reply, data_of, is_direct_reply, read_reply
from gateway.calls.result import AgentToolResult
from gateway.calls.termination import Cancel, Terminated
from gateway.calls.tool import AgentTool, Mode
from gateway.errors import AgentTaskFailed, AgentToolError, AgentToolTimeout, BudgetExceeded, PeerProtocolError
from gateway.peers.base import UNRESOLVED, Peer, StreamItem, items_of
from gateway.recording.events import EventType
from gateway.recording.recorder import RunRecorder
from gateway.telemetry import spans
from protocol import Message, Task, TaskSendParams, TaskState
from protocol.hop_limits import HopLimits, now_ms

if TYPE_CHECKING:
    from opentelemetry.trace import Span

_ENDINGS = frozenset({EventType.AGENT_TOOL_COMPLETED, EventType.AGENT_TOOL_TERMINATED, EventType.AGENT_TOOL_ERROR})

_LEAST_TIMEOUT_S = 0.001
"""A call whose caller's deadline has passed still gets a request this short, which then times out as any would."""

ConnectPeer = Callable[[], Peer]
"""How a call gets its peer; an ``AgentToolError`` it raises fails the call, recorded like any failure."""
Pieces = AsyncGenerator[list[str], None]
"""A call's text as it is passed on: the pieces of the lines of one read together, so that the stages a call
goes through (span, events, mode) pass each read on once, not each chunk."""


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
    deadline_ms: int | None = None
    """The caller's own deadline (epoch ms), when the call is made inside an agent's handler whose caller sent one."""

    def within(self, limits: HopLimits) -> CallSpec:
        """The call inside what is left of its caller's limits: no later deadline, no more budget."""
        left = limits.seconds_left()
        timeout_s = self.timeout_s if left is None else max(min(self.timeout_s, left), _LEAST_TIMEOUT_S)
        budget = self.budget.within(limits.budget_usd)
        return replace(self, timeout_s=timeout_s, budget=budget, deadline_ms=limits.deadline_ms)

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
        reattach: Reattach | None = None,
    ) -> None:
        """``reattach``: a call another process had in flight (reattach.py), followed again instead of sent."""
        self._hop = current_account()
        if self._hop is not None:
            spec = spec.within(self._hop.left())
        self._spent_usd = 0.0
        """What of the call's cost was spent from ``_hop`` so far."""
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
        caller = {"call_id": self.result.call_id, "agent": spec.agent, "tool": spec.tool, "member": spec.member}
        self._caller = {key: value for key, value in caller.items() if value is not None}
        """The fields every event of the call has."""
        self._lines = LineReader(spec.agent, spec.budget, self._caller, self.result)
        self._connect = connect
        self._peer: Peer | None = None
        self._started = time.monotonic()
        self._invoked_recorded = False
        self._span: Span | None = None
        self._chunk_texts: list[str] = []
        """The text of each progress event recorded, in order: the completed event leaves out a text that is
        just these joined, so a streamed answer is stored once."""
        self._reattach = reattach
        if reattach is not None:
            self._carry_on(reattach)

    async def run(self) -> AgentToolResult:
        """The call in its mode; raises an AgentToolError (with ``.partial``) when it fails."""
        async with aclosing(self._traced(self._recorded(self._in_mode()))) as reads:
            async for _ in reads:
                pass
        return self.result

    async def stream(self) -> AsyncGenerator[str, None]:
        """A streaming call's text, each piece once its progress event is recorded; ``result`` is final after."""
        async with aclosing(self.reads()) as reads:
            async for pieces in reads:
                for piece in pieces:
                    yield piece

    def reads(self) -> Pieces:
        """``stream`` by read: the pieces that arrived together, ``result`` up to date with them when they come."""
        return self._traced(self._recorded(self._streaming()))

    async def close_run(self) -> None:
        with anyio.CancelScope(shield=True):
            await self.recorder.log.close_run(self.recorder.run_id)

    # -- the call's life, recorded -------------------------------------------------------

    async def _traced(self, reads: Pieces) -> Pieces:
        """The call inside its span (telemetry/spans.py); the event that ends the call sets its outcome."""
        spec = self.spec
        caller = spec.tool or spec.member or ""
        with spans.agent_tool(
            caller, spec.agent, spec.mode.kind, spec.budget.max_cost_usd, self.recorder.run_id
        ) as span:
            self._span = span
            async with aclosing(reads) as recorded:
                async for pieces in recorded:
                    yield pieces

    async def _recorded(self, body: Pieces) -> Pieces:
        """``agent_tool_invoked``, the body, then the one event that says how the call ended.

        The peer is found first (for an ``http(s)://`` agent, its card says which binding it
        speaks), so ``agent_tool_invoked`` names the binding; a failure to find it is recorded
        after ``agent_tool_invoked`` like any other.
        """
        try:
            await self._connected()
            await self._invoked()
            try:
                async with aclosing(body) as reads:
                    async for pieces in reads:
                        yield pieces
            finally:
                self.result.settle()
                self._spend()
        except Terminated as stop:
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
                await self._terminated(Terminated(AgentToolError("the caller cancelled the call", reason="cancelled")))
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
        text = self.result.text
        in_chunks = bool(text) and "".join(self._chunk_texts) == text
        await self._emit(
            EventType.AGENT_TOOL_COMPLETED,
            state=self.result.state,
            text=None if in_chunks else text,
            text_in_chunks=in_chunks or None,
            artifacts=len(self.result.artifacts),
            handoff=self.result.handoff.to_wire() if self.result.handoff else None,
            **self._totals(),
        )

    async def _connected(self) -> None:
        """The peer that speaks the agent's binding; a new task's id minted here when the caller names tasks."""
        self._peer = peer = self._connect()  # the one found so far: what a failure to resolve it is about
        self._peer = peer = await peer.resolve()
        if self.result.task_id is None and peer.names_tasks:
            self.result.task_id = "task_" + uuid.uuid4().hex

    def _carry_on(self, reattach: Reattach) -> None:
        """The call as the log left it: its id, its task, what was received; ``agent_tool_invoked`` is there already."""
        result = self.result
        result.call_id = reattach.call_id
        result.task_id = reattach.task_id
        result.session_id = reattach.invoked.session_id or result.session_id
        result.cost_usd = reattach.cost_usd
        result.chunks = len(reattach.progress)
        result.state = reattach.state
        result.handoff = reattach.handoff
        if reattach.text:
            result.add_streamed_text(0, True, reattach.text)
            self._chunk_texts.append(reattach.text)
        self._caller["call_id"] = reattach.call_id
        self._invoked_recorded = True

    def _binding(self) -> str | None:
        """The binding the peer speaks; None while it is not known (the peer could not be found)."""
        if self._peer is None or self._peer.binding == UNRESOLVED:
            return None
        return self._peer.binding

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
            input_data=data_of(self.message.parts) or None,
            task_id=self.result.task_id,
            session_id=self.result.session_id,
            timeout_ms=round(self.spec.timeout_s * 1000),
            max_cost_usd=self.spec.budget.max_cost_usd,
            idle_timeout_secs=self.spec.idle_timeout_s if self.spec.mode.kind == "streaming" else None,
        )

    def _in_mode(self) -> Pieces:
        """The call's pieces in its mode: a streaming call's own generator, not one more that wraps it."""
        reattached = self._reattach is not None  # whatever the mode, a task followed again is read as a stream
        return self._streaming() if reattached or self.spec.mode.kind == "streaming" else self._unstreamed()

    async def _unstreamed(self) -> Pieces:
        """A sync or conversational call, which yields no pieces."""
        if self.spec.mode.kind == "conversational":
            await self._conversational()
        else:
            await self._sync()
        return
        yield

    # -- modes -------------------------------------------------------------------------

    async def _sync(self) -> None:
        task = await self._send_turn(self._params(self.message))
        reply = read_reply(task, self.spec.agent)
        self._check_budget(reply.cost_usd, task=task)
        self._take_task(task, reply)
        self.result.reply = task.status.message if is_direct_reply(task.id, task.status.message) else None
        self.result.text = task.output_text
        self.result.artifacts = list(task.artifacts)
        self._raise_if_failed(task)

    async def _streaming(self) -> Pieces:
        peer = self._peer
        assert peer is not None
        left = HopLimits(self.spec.deadline_ms).seconds_left()
        reattach = self._reattach
        opened = peer.subscribe(self._params(self.message)) if reattach is None else followed_again(peer, reattach)
        async with opened as stream:
            try:
                with _deadline_scope(left) as deadline:
                    async with aclosing(with_idle_timeout(stream, self.spec.idle_timeout_s)) as reads:
                        async for read in reads:
                            pieces, final = await self._on_lines(items_of(read))
                            del read  # recorded: not held while the stream waits for the next
                            if pieces:
                                yield pieces
                            if final:
                                return
                if deadline.cancelled_caught:
                    error = AgentToolTimeout(
                        f"the caller's deadline passed while {self.spec.agent} was streaming",
                        reason="deadline_timeout",
                        seconds=left or 0.0,
                    )
                    raise Terminated(error)
            except IdleTimeout as exc:
                error = AgentToolTimeout(
                    f"no data from {self.spec.agent} for {exc.seconds:g} s", reason="idle_timeout", seconds=exc.seconds
                )
                raise await self._cancel_for(Terminated(error)) from None
            except Terminated as stop:
                raise await self._cancel_for(stop) from None
        raise PeerProtocolError(f"the stream from {self.spec.agent} ended without a final line", reason="cut_off")

    async def _conversational(self) -> None:
        message = self.message
        replies: list[str] = []
        for turn in range(1, self.spec.mode.max_turns + 1):
            task = await self._send_turn(self._params(message))
            meta = read_reply(task, self.spec.agent)
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
        stopped: Terminated | None = None
        done = anyio.Event()
        deadline = anyio.CancelScope()

        def sent() -> None:
            deadline.deadline = anyio.current_time() + timeout_s

        def named(task_id: str) -> None:
            self.result.task_id = task_id

        async def send() -> None:
            nonlocal outcome
            try:
                if peer.names_tasks:
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
                stopped = await self._cancel_for(Terminated(error))
                task_group.cancel_scope.cancel()
        if stopped is not None:
            raise stopped
        if isinstance(outcome, Exception):
            raise outcome
        assert outcome is not None
        return outcome

    async def _on_lines(self, items: list[StreamItem]) -> tuple[list[str], bool]:
        """Pass on the lines that arrived together: their texts, and whether the last was the final line.

        Each line is checked (budget, limits, cost) in order up to one that ends the call;
        the progress events of those read are appended together, then the lines are added
        to the result in order, and whatever ended the call is raised.
        """
        lines = self._lines.read_all(items)
        pieces = await self._record(lines)
        self._spend()
        return pieces, bool(lines) and lines[-1].final

    async def _record(self, lines: list[Line]) -> list[str]:
        """Append the lines' progress events together, add each line to the result once its event is appended."""
        progress = [line.progress for line in lines if line.progress is not None]
        events = self.recorder.trusted_events(EventType.AGENT_TOOL_PROGRESS, progress)
        # each event's text read from the fields it was made from (kept as given), not through ``Event.fields``
        self._chunk_texts.extend(text for fields in progress if (text := fields.get("text")))
        pieces: list[str] = []
        async with aclosing(self.recorder.emit_all(events)) as appended:
            for line in lines:
                if line.progress is not None:
                    await anext(appended)
                    self.result.chunks += 1
                line.add_to(self.result)
                if line.text:
                    pieces.append(line.text)
        return pieces

    # -- limits and cancel ------------------------------------------------------------------

    def _check_budget(self, total: float, *, task: Task) -> None:
        """Raise before the reply that takes the cost above the budget is passed on (a stream line: ``LineReader``)."""
        if not self.spec.budget.exceeded_by(total):
            return
        self.result.cost_usd = total
        error = BudgetExceeded(total, self.spec.budget.max_cost_usd or 0.0)
        self.result.state = task.status.state.value
        raise Terminated(error, cancel=not task.status.state.is_terminal, rejected_reply=task.output_text)

    async def _cancel_for(self, stop: Terminated) -> Terminated:
        """Send the best-effort ``tasks/cancel`` once, under its own short deadline; note if it was acknowledged."""
        if stop.cancel is not Cancel.PENDING:
            return stop
        peer, task_id = self._peer, self.result.task_id
        if peer is None or task_id is None:
            stop.cancel = Cancel.NOT_SENT
            return stop
        stop.cancel = Cancel.SENT
        with anyio.move_on_after(self.spec.cancel_timeout_s, shield=True):
            if await peer.cancel(task_id):
                stop.cancel = Cancel.ACKNOWLEDGED
        return stop

    async def _terminated(self, stop: Terminated) -> None:
        await self._cancel_for(stop)
        stop.error.partial = self.result
        await self._emit(
            EventType.AGENT_TOOL_TERMINATED,
            reason=stop.error.reason,
            message=stop.error.message,
            cancel_sent=stop.cancel.sent,
            cancel_acknowledged=stop.cancel is Cancel.ACKNOWLEDGED,
            **stop.error.event_fields(),
            **stop.fields,
            **self._totals(),
        )

    # -- helpers ------------------------------------------------------------------------

    def _params(self, message: Message) -> TaskSendParams:
        """The request, with the deadline and the budget that travel (protocol/hop_limits.py) in its metadata."""
        metadata = self.metadata
        travelling = self._travelling().to_metadata()
        if travelling is not None:
            metadata = {**(metadata or {}), **travelling}
        return TaskSendParams(
            id=self.result.task_id, session_id=self.result.session_id, message=message, metadata=metadata
        )

    def _travelling(self) -> HopLimits:
        """What the peer is told: the caller's deadline, or this request's if sooner (a stream has none of its
        own), and what is left of the call's budget."""
        own = None if self.spec.mode.kind == "streaming" else now_ms() + round(self.spec.timeout_s * 1000)
        deadline = HopLimits(self.spec.deadline_ms).within(HopLimits(own)).deadline_ms
        return HopLimits(deadline, self.spec.budget.left_after(self.result.cost_usd))

    def _spend(self) -> None:
        """Spend what the call cost since last time from its caller's account (inside an agent's handler)."""
        if self._hop is not None and self.result.cost_usd > self._spent_usd:
            self._hop.spend(self.result.cost_usd - self._spent_usd)
            self._spent_usd = self.result.cost_usd

    def _take_task(self, task: Task, reply: Reply) -> None:
        self.result.task_id = task.id
        self.result.session_id = task.session_id or self.result.session_id
        self.result.state = task.status.state.value
        self.result.cost_usd = reply.cost_usd
        if reply.handoff is not None:
            self.result.handoff = reply.handoff

    def _raise_if_failed(self, task: Task) -> None:
        if task.status.state.value in FAILED_STATES:
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

    async def _progress(self, *, kind: str, accumulated_cost_usd: float, **fields: Any) -> None:
        """Append one progress event, then count the chunk (its data is added to the result by the caller, after)."""
        progress = self._lines.progress_fields(self.result.chunks, accumulated_cost_usd, kind, **fields)
        await self._emit(EventType.AGENT_TOOL_PROGRESS, **progress)
        if progress.get("text"):
            self._chunk_texts.append(progress["text"])
        self.result.chunks += 1

    def _totals(self) -> dict[str, Any]:
        return {
            "task_id": self.result.task_id,
            "session_id": self.result.session_id,
            "accumulated_cost_usd": self.result.cost_usd,
            "chunks": self.result.chunks,
            "turns": self.result.turns,
            "skipped_bytes": self._lines.skipped_total or None,
            "duration_ms": round((time.monotonic() - self._started) * 1000, 3),
        }

    async def _emit(self, type: EventType, **fields: Any) -> None:
        if type in _ENDINGS and self._span is not None:
            outcome = "completed" if type is EventType.AGENT_TOOL_COMPLETED else str(fields.get("reason"))
            spans.agent_tool_outcome(self._span, outcome, cost_usd=self.result.cost_usd, chunks=self.result.chunks)
        await self.recorder.emit(type, **self._fields(fields))

    def _fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The call's fields (``call_id``, ``agent``, who called) and those given; the None ones left out."""
        return {**self._caller, **{key: value for key, value in fields.items() if value is not None}}


class _NoDeadline:
    """The scope of a call without a deadline: nothing to cancel, so no cancel scope held while the stream is open."""

    __slots__ = ()
    cancelled_caught = False

    def __enter__(self) -> _NoDeadline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_NO_DEADLINE = _NoDeadline()


def _deadline_scope(seconds: float | None) -> anyio.CancelScope | _NoDeadline:
    """A scope that ends the block after ``seconds``; None: none (``cancelled_caught`` stays False)."""
    return _NO_DEADLINE if seconds is None else anyio.move_on_after(seconds)
