"""The transport-free core of an agent server: task runs, their events, cancel and resubscribe.

The HTTP app is a thin layer over this; the gateway uses it in-process for ``local://``
agents. Runs live in the manager's task group (``async with manager.running()``), so a run
outlives the request that started it; a sync send of the HTTP bindings runs shielded in the
request's own task instead (``send_in_caller_task``: no task to start per send), which a
client that goes away does not cancel. Leaving ``running()`` cancels every run and waits
for its end to be recorded. Per task there is at most one run at a time: one writer, so
``seq`` has no gaps and no duplicates. Each send on a task is one run (``tasks.run``, its
phases and steps) and one stream; it ends with exactly one ``final`` status line (a
terminal state, or ``input-required``).

A send is idempotent by its task id: one naming a task this server holds, with the message
that task's latest turn began with (the same ``messageId``, or the same message), starts
nothing; it is answered with the task as it is, or, streamed, follows that turn from its
first line (``_repeated``). A caller may so retry any send it is not sure arrived.

A task belongs to the caller that created it (``caller``, a ``Principal``; None where
nobody is authenticated): another caller that is not an admin is told it does not exist.
So do its push-notification configs: ``push_configs`` hands them out for a task the caller
may see. A manager made with ``PushSettings`` delivers each event of a task that has
webhooks (agent_server/push/) through its sender, which runs while the manager does; a run
reads the task's webhooks when it starts and hears of those this process adds or removes
while it runs (one another process adds reaches the task's next send).

On a store shared by several server processes (Redis), a task another live process runs
is read from the store, its events followed as that process appends them, and a cancel
passed on to that process (``_elsewhere``); it is never taken for one a stopped process left.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager, aclosing, asynccontextmanager, nullcontext

import anyio
from anyio.abc import TaskGroup

from agent_server.hosted import HostedAgent
from agent_server.http.auth import Principal
from agent_server.push.configs import TaskPushConfigs
from agent_server.push.hosts import WebhookHosts
from agent_server.push.sender import Hook, PushSender
from agent_server.push.settings import PushSettings
from agent_server.stores.base import StoreFull, TaskFilter, TaskPage, TaskStore, is_running
from agent_server.tasks.outputs import Outcome
from agent_server.tasks.run import CANCELED_ON_SHUTDOWN, Run
from agent_server.tasks.runs import Runs
from agent_server.tasks.turns import handed_to_agent, new_id, next_turn, repeats
from agent_server.tasks.wakeup import Wakeup
from protocol import (
    ErrorCode,
    Message,
    ProtocolError,
    StatusEvent,
    StreamEvent,
    Task,
    TaskSendParams,
    TaskState,
    TaskStatus,
)
from protocol.a2a.push import TaskPushNotificationConfig

logger = logging.getLogger("agent_server")

Webhook = TaskPushNotificationConfig | None

_FINISH_TIMEOUT_S = 5.0
_CANCEL_ELSEWHERE_TIMEOUT_S = 2 * _FINISH_TIMEOUT_S
_CANCELED_BY_REQUEST = "canceled by request"
_CANCELED_ON_DISCONNECT = "canceled: the client disconnected"
_INTERRUPTED = "failed: the server stopped while this task was running"
_IDLE_RECHECK_S = 1.0
"""How often a subscriber waiting on an idle task looks at the store for what another process wrote to it."""


class TaskManager:
    """Runs one agent's tasks; see the module docstring for the guarantees."""

    def __init__(
        self,
        agent: HostedAgent,
        store: TaskStore,
        *,
        cancel_on_disconnect: bool = False,
        push: PushSettings | None = None,
    ) -> None:
        self.agent = agent
        self.store = store
        self.cancel_on_disconnect = cancel_on_disconnect
        self._task_group: TaskGroup | None = None
        self._runs: Runs[Run] = Runs()
        self._push = PushSender(push, WebhookHosts(push.allowed_hosts)) if push is not None else None
        self._idle_task_moved = Wakeup()  # a run started, or an idle task was closed: wakes ``_next_run`` waiters

    @property
    def pushes(self) -> bool:
        """Whether this manager delivers push notifications (the card's ``capabilities.pushNotifications``)."""
        return self._push is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[TaskManager]:
        """Own the task group runs live in; on exit, running tasks are canceled, end ``canceled`` and are waited for."""
        if self._task_group is not None:
            raise RuntimeError("this TaskManager is already running")
        sending: AbstractAsyncContextManager[object] = self._push.running() if self._push else nullcontext()
        async with self.store.serving(self._cancel_requested), sending, anyio.create_task_group() as task_group:
            self._task_group = task_group
            try:
                yield self
            finally:
                self._task_group = None
                self._idle_task_moved.notify()
                for run in self._runs.all():
                    run.cancel(CANCELED_ON_SHUTDOWN)
                task_group.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    # the task group waits for its own; these are in their callers' tasks too
                    await self._runs.wait_all_finished()

    async def send(self, params: TaskSendParams, caller: Principal | None = None, *, webhook: Webhook = None) -> Task:
        """Run the agent on a new message; returns once the task is terminal or ``input-required``.

        The run lives in the manager's task group: a caller cancelled meanwhile returns at once
        and the run goes on. ``webhook``: a push config the task gets before its first event
        (A2A's ``configuration.taskPushNotificationConfig``), in every kind of send.
        """
        repeated = await self._repeated(params, caller)
        if repeated is not None:
            return await self._settled_repeat(repeated, params.history_length, caller)
        run = await self._begin(params, caller, webhook=webhook)
        await run.wait_finished()
        return _settled(run.current(), params.history_length)

    async def send_in_caller_task(
        self, params: TaskSendParams, caller: Principal | None = None, *, webhook: Webhook = None
    ) -> Task:
        """``send``, the run in the caller's own task instead, shielded: a cancelled caller waits for its end.

        ``cancel`` and the manager's shutdown still end the run. For a caller nothing cancels
        while it waits, as an HTTP request (a client that goes away does not cancel it): no
        task to start, no one to wake.
        """
        repeated = await self._repeated(params, caller)
        if repeated is not None:
            return await self._settled_repeat(repeated, params.history_length, caller)
        with anyio.CancelScope(shield=True) as scope:
            run = await self._begin(params, caller, scope=scope, webhook=webhook)
            await run.execute(_FINISH_TIMEOUT_S)
        return _settled(run.current(), params.history_length)

    async def start(self, params: TaskSendParams, caller: Principal | None = None, *, webhook: Webhook = None) -> Task:
        """Run the agent on a new message and return the task at once, as its run starts (A2A's returnImmediately)."""
        repeated = await self._repeated(params, caller)
        if repeated is not None:
            return _trimmed(repeated, params.history_length)
        run = await self._begin(params, caller, webhook=webhook)
        return _trimmed(run.current(), params.history_length)

    async def subscribe(
        self,
        params: TaskSendParams,
        caller: Principal | None = None,
        *,
        on_start: Callable[[Task], None] | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Start a run (at the first iteration) and yield its events live; the last one is final.

        Refusals (409, 503) are raised by the first iteration. Closing the iterator early
        leaves the run going, unless ``cancel_on_disconnect``. ``on_start`` is handed the
        task as the run starts, before its first event (a stream that opens with the task).
        """
        async with aclosing(self.subscribe_batches(params, caller, on_start=on_start)) as batches:
            async for batch in batches:
                for event in batch:
                    yield event

    async def subscribe_batches(
        self,
        params: TaskSendParams,
        caller: Principal | None = None,
        *,
        on_start: Callable[[Task], None] | None = None,
        webhook: Webhook = None,
    ) -> AsyncGenerator[list[StreamEvent], None]:
        """``subscribe``, the events that are ready together in one list (a stream writes each list at once).

        A send repeated (``_repeated``) follows the turn it repeats from its first line instead.
        """
        repeated = await self._repeated(params, caller)
        if repeated is not None:
            if on_start is not None:
                on_start(_trimmed(repeated, params.history_length))
            replay = await self.resubscribe_batches(repeated.id, await self._turn_start(repeated.id), caller)
            async with aclosing(replay) as batches:
                async for batch in batches:
                    yield batch
            return
        pending: list[StreamEvent] = []
        run = await self._begin(params, caller, follower=pending, webhook=webhook)
        delivered_final = False
        try:
            if on_start is not None:
                on_start(_trimmed(run.current(), params.history_length))
            async with aclosing(run.follow(pending)) as batches:
                async for batch in batches:
                    delivered_final = batch[-1].final
                    yield batch
        finally:
            run.leave(pending)
            if not delivered_final and self.cancel_on_disconnect:  # a finished run takes no cancel
                run.cancel(_CANCELED_ON_DISCONNECT)

    async def resubscribe(
        self, task_id: str, after_seq: int = -1, caller: Principal | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Check the request, then return the task's events after ``after_seq``: stored, then live.

        Refusals are raised here, before any event, so a caller need not wait for the task's
        next event to learn them: an unknown task, or an ``after_seq`` past the task's last
        event (such a stream would wait for a seq that never comes). The events run up to
        and including the next final line; a task that is not running and has nothing after
        ``after_seq`` gives an empty stream.
        """
        return _flattened(await self.resubscribe_batches(task_id, after_seq, caller))

    async def resubscribe_batches(
        self, task_id: str, after_seq: int = -1, caller: Principal | None = None
    ) -> AsyncGenerator[list[StreamEvent], None]:
        """``resubscribe``, the events that are ready together in one list."""
        await self._check_visible(task_id, caller)
        run = self._runs.get(task_id)
        if run is None:
            await self._load(task_id)
            run = self._runs.get(task_id)
        last_seq = run.next_seq - 1 if run is not None else await self.store.last_seq(task_id)
        if after_seq > last_seq:
            raise ProtocolError.invalid_param(
                "afterSeq",
                f"{after_seq} is past the last event of task {task_id!r} (seq {last_seq})",
                f"resubscribe with afterSeq {last_seq} or less",
            )
        return self._replay(task_id, after_seq)

    async def follow_batches(
        self, task_id: str, after_seq: int = -1, caller: Principal | None = None
    ) -> AsyncGenerator[list[StreamEvent], None]:
        """``resubscribe_batches`` that also waits on an idle task (``input-required``) for its next run.

        A standard subscription stays open on any task that is not terminal: on an idle one
        it waits for the next message's run (here or in another process sharing the store)
        and follows it through its final line, or for the cancel that closes the task. It
        ends when the manager stops or the task expires meanwhile.
        """
        batches = await self.resubscribe_batches(task_id, after_seq, caller)
        return self._through_next_run(task_id, after_seq, batches)

    async def _through_next_run(
        self, task_id: str, after_seq: int, batches: AsyncGenerator[list[StreamEvent], None]
    ) -> AsyncGenerator[list[StreamEvent], None]:
        seen = after_seq
        async with aclosing(batches):
            async for batch in batches:
                seen = batch[-1].seq
                yield batch
        if seen > after_seq or not await self._next_run(task_id, seen):
            return
        async with aclosing(self._replay(task_id, seen)) as following:
            async for batch in following:
                yield batch

    async def _next_run(self, task_id: str, after_seq: int) -> bool:
        """Wait until the idle task has a run here or events past ``after_seq`` in the store; False if it never will."""
        while self._task_group is not None:
            if self._runs.get(task_id) is not None:
                return True
            with anyio.move_on_after(_IDLE_RECHECK_S) as waited:
                await self._idle_task_moved.wait()
            if self._runs.get(task_id) is not None or await self.store.last_seq(task_id) > after_seq:
                return True
            if waited.cancelled_caught and await self.store.load_task(task_id) is None:
                return False
        return False

    async def _replay(self, task_id: str, after_seq: int) -> AsyncGenerator[list[StreamEvent], None]:
        run = self._runs.get(task_id)
        seen = after_seq
        if run is None or seen + 1 < run.first_seq:
            stored: list[StreamEvent] = []
            for event in await self.store.read_events(task_id, seen):
                if run is not None and event.seq >= run.first_seq:
                    break
                seen = event.seq
                stored.append(event)
                if event.final:
                    yield stored
                    return
            if stored:
                yield stored
            run = run or self._runs.get(task_id)
            if run is None:
                if await self.store.running_elsewhere(task_id):
                    async with aclosing(self._elsewhere(task_id, seen)) as events:
                        async for event in events:
                            yield [event]  # each as another process's store hands it on
                return
        async with aclosing(run.follow(run.join(seen))) as batches:
            async for batch in batches:
                yield batch

    async def snapshot(
        self, task_id: str, caller: Principal | None = None, history_length: int | None = None
    ) -> tuple[Task, int]:
        """The task now and the seq of its newest event, read together: a resubscribe after it misses nothing."""
        await self._check_visible(task_id, caller)
        run = self._runs.get(task_id)
        if run is None:
            task = await self._load(task_id)
            last_seq = await self.store.last_seq(task_id)
            run = self._runs.get(task_id)  # a send may have started one meanwhile
            if run is None:
                return _trimmed(task, history_length), last_seq
        return _trimmed(run.current(), history_length), run.next_seq - 1

    async def list_tasks(
        self,
        where: TaskFilter,
        *,
        limit: int,
        cursor: str = "",
        history_length: int | None = None,
        caller: Principal | None = None,
    ) -> TaskPage:
        """A page of the tasks ``caller`` may see (an admin or no caller: all), running ones as they are now."""
        if caller is not None and not caller.is_admin:
            where = TaskFilter(
                owned_by=caller.name, session_id=where.session_id, state=where.state, status_after=where.status_after
            )
        try:
            page = await self.store.list_tasks(where, limit=limit, cursor=cursor)
        except ValueError as exc:
            raise ProtocolError.invalid_param("pageToken", str(exc)) from None
        live = [run.current() if (run := self._runs.get(task.id)) is not None else task for task in page.tasks]
        tasks = [_trimmed(task, history_length) for task in live]
        return TaskPage(tasks=tasks, next_cursor=page.next_cursor, total=page.total)

    async def push_configs(self, task_id: str, caller: Principal | None = None) -> TaskPushConfigs:
        """The push configs of a task ``caller`` may see (-32001 otherwise); -32003 when this manager has no push."""
        sender = self._sender_or_fail()
        await self.get(task_id, 0, caller)
        return self._configs(sender, task_id)

    def _configs(self, sender: PushSender, task_id: str) -> TaskPushConfigs:
        return TaskPushConfigs(task_id, self.store, sender.hosts, sender.settings, self._push_changed)

    def _push_changed(self, task_id: str, webhooks: list[TaskPushNotificationConfig]) -> None:
        """A config of this process changed: the task's run here, if any, delivers to the new set from now on."""
        run = self._runs.get(task_id)
        if run is not None and self._push is not None:
            run.push = self._push.watch(run.current(), webhooks)

    async def _push_hook(self, sender: PushSender, run: Run, webhook: Webhook, *, known: bool) -> Hook | None:
        """Where a starting run hands its events: the task's webhooks (a new task has none but ``webhook``)."""
        configs = self._configs(sender, run.task.id)
        if webhook is not None:
            await configs.create(webhook)
        elif not known:
            return None
        return sender.watch(run.current(), await configs.list())

    def _sender_or_fail(self) -> PushSender:
        if self._push is not None:
            return self._push
        raise _no_push()

    async def get(self, task_id: str, history_length: int | None = None, caller: Principal | None = None) -> Task:
        await self._check_visible(task_id, caller)
        run = self._runs.get(task_id)
        task = run.current() if run is not None else await self._load(task_id)
        return _trimmed(task, history_length)

    async def cancel(self, task_id: str, caller: Principal | None = None) -> Task:
        """Stop a working task (its code sees cancellation at once) or close an ``input-required`` one."""
        await self._check_visible(task_id, caller)
        run = self._runs.get(task_id)
        if run is None:
            task = await self._load(task_id)
            run = self._runs.get(task_id)
        if run is not None:
            run.cancel(_CANCELED_BY_REQUEST)
            await run.wait_finished()
            return run.current().model_copy()  # the send's caller has the task itself
        if is_running(task) and await self.store.running_elsewhere(task_id):
            return await self._cancel_elsewhere(task_id)
        if task.status.state is not TaskState.INPUT_REQUIRED:
            raise ProtocolError(
                ErrorCode.TASK_NOT_CANCELABLE,
                f"task {task_id!r} is already {task.status.state.value}; "
                "only a working or input-required task can be canceled",
            )
        with self._runs.reserve(task_id), anyio.CancelScope(shield=True):
            task = await self._load_own(task_id) or task
            if task.status.state is TaskState.INPUT_REQUIRED:
                task = await self._close_idle(task, TaskState.CANCELED, _CANCELED_BY_REQUEST)
        return _trimmed(task, None)

    def _cancel_requested(self, task_id: str) -> None:
        """Another server process asked to cancel a task this one runs."""
        run = self._runs.get(task_id)
        if run is not None:
            run.cancel(_CANCELED_BY_REQUEST)

    async def _elsewhere(self, task_id: str, after_seq: int) -> AsyncGenerator[StreamEvent, None]:
        """The events of a task another process runs, through its final one, also if that process dies first."""
        seen = after_seq
        async with aclosing(self.store.follow_events(task_id, after_seq)) as events:
            async for event in events:
                seen = event.seq
                yield event
                if event.final:
                    return
        await self._load(task_id)  # it died: the task is closed ``failed`` here, with a final line
        for event in await self.store.read_events(task_id, seen):
            yield event
            if event.final:
                return

    async def _cancel_elsewhere(self, task_id: str) -> Task:
        """Ask the process running the task to cancel it, and wait (bounded) for the task's final line."""
        seen = await self.store.last_seq(task_id)
        if not await self.store.request_cancel(task_id):
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                f"task {task_id!r} runs on another server process, which did not hear the cancel; retry",
                http_status=503,
            )
        with anyio.move_on_after(_CANCEL_ELSEWHERE_TIMEOUT_S):
            async with aclosing(self._elsewhere(task_id, seen)) as events:
                async for event in events:
                    if event.final:
                        return _trimmed(await self._load(task_id), None)
        raise ProtocolError(
            ErrorCode.INTERNAL_ERROR,
            f"task {task_id!r} runs on another server process and did not end within "
            f"{_CANCEL_ELSEWHERE_TIMEOUT_S:g} s of the cancel request",
            http_status=504,
        )

    async def _repeated(self, params: TaskSendParams, caller: Principal | None) -> Task | None:
        """The task a send names when its latest turn began with this very message (turns.py ``repeats``).

        A caller that retries a send it does not know reached the server (a connection cut,
        a gateway that took over another's call) gets the task as it is, and never a second run
        of the agent. None for a new send, and for a task this caller may not see (refused later).
        """
        if not params.id:
            return None
        run = self._runs.get(params.id)
        task = run.current() if run is not None else await self.store.load_task(params.id)
        if task is None or not repeats(task, params.message):
            return None
        owner = run.owner if run is not None else await self.store.owner_of(params.id)
        if caller is not None and not caller.may_see(owner):
            return None
        return task if run is not None else await self._load(params.id)

    async def _settled_repeat(self, task: Task, history_length: int | None, caller: Principal | None) -> Task:
        """A repeated send's answer: the task once its turn has ended (here or in another process), as a send's."""
        _, last_seq = await self.snapshot(task.id, caller)
        async with aclosing(await self.resubscribe_batches(task.id, last_seq, caller)) as batches:
            async for _ in batches:
                pass
        return await self.get(task.id, history_length, caller)

    async def _turn_start(self, task_id: str) -> int:
        """The seq before the first line of the task's latest turn: where a repeated stream is followed from."""
        run = self._runs.get(task_id)
        if run is not None:
            return run.first_seq - 1
        finals = [event.seq for event in await self.store.read_events(task_id, -1) if event.final]
        if finals and finals[-1] == await self.store.last_seq(task_id):  # the turn has ended: the final before it
            finals.pop()
        return finals[-1] if finals else -1

    async def _begin(
        self,
        params: TaskSendParams,
        caller: Principal | None,
        *,
        follower: list[StreamEvent] | None = None,
        scope: anyio.CancelScope | None = None,
        webhook: Webhook = None,
    ) -> Run:
        """Check, record and start a run; shielded so a caller that goes away cannot half-start it.

        ``follower`` joins the run before its first event (``Run.join`` would read that event back).
        ``scope``: the caller's shielded scope, entered already, where it runs the run at once (``Run.execute``);
        it is the run's scope (``cancel`` cancels it). Without one the run starts in the manager's task group.
        ``webhook``: a push config kept for the task before its first event; its host is checked first.
        """
        self._task_group_or_fail()
        if webhook is not None:
            await self._sender_or_fail().hosts.check(webhook.url)  # refused before anything is kept or started
        if params.id == "":
            raise ProtocolError(ErrorCode.INVALID_PARAMS, "invalid params: id: must not be empty (omit it to get one)")
        task_id = params.id or new_id()
        owner = caller.name if caller is not None else None
        refused = self.agent.refused_media_type(params.message)
        if refused is not None:
            raise ProtocolError(
                ErrorCode.CONTENT_TYPE_NOT_SUPPORTED,
                f"agent {self.agent.name!r} does not take {refused!r} parts; "
                f"it takes {', '.join(self.agent.input_modes)}",
                http_status=415,
            )
        shielded: AbstractContextManager[object] = anyio.CancelScope(shield=True) if scope is None else nullcontext()
        with self._runs.reserve(task_id, keep=True), shielded:
            existing = await self._load_own(task_id) if params.id is not None else None  # a new uuid names no task
            if existing is not None and caller is not None and not caller.may_see(await self.store.owner_of(task_id)):
                raise ProtocolError(
                    ErrorCode.INVALID_REQUEST,
                    f"task id {task_id!r} is taken; send without an id to start a new task",
                    http_status=409,
                )
            if webhook is not None and existing is not None:
                await self._configs(self._sender_or_fail(), task_id).create(webhook)  # refused before the turn starts
                webhook = None
            task = next_turn(existing, task_id, params)
            run = Run(
                task=task,
                context=handed_to_agent(task, params, caller),
                first_seq=0 if existing is None else await self.store.last_seq(task_id) + 1,
                scope=scope or anyio.CancelScope(),
                agent=self.agent,
                store=self.store,
                runs=self._runs,
                owner=owner,
            )
            if follower is not None:
                run.followers.append(follower)
            try:
                await self.store.save_task(task, owner)
            except StoreFull as exc:
                raise ProtocolError(
                    ErrorCode.INTERNAL_ERROR, f"the server is at its task limit ({exc}); retry later", http_status=503
                ) from None
            if self._push is not None:
                run.push = await self._push_hook(self._push, run, webhook, known=existing is not None)
            await run.append(run.status_line())
            self._runs.add(task_id, run)
            self._idle_task_moved.notify()
            task_group = self._task_group
            if task_group is None:
                await run.record_end(Outcome(TaskState.CANCELED, Message.agent(CANCELED_ON_SHUTDOWN)))
                self._task_group_or_fail()
            elif scope is None:
                task_group.start_soon(self._execute, run, name=f"task {task_id}")
        return run

    def _task_group_or_fail(self) -> TaskGroup:
        if self._task_group is None:
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                "the task manager is not running (start it with `async with manager.running():`, "
                "or run the app with its lifespan)",
                http_status=503,
            )
        return self._task_group

    async def _execute(self, run: Run) -> None:
        """A run in the manager's task group, in its own scope."""
        with run.scope:
            await run.execute(_FINISH_TIMEOUT_S)

    async def _check_visible(self, task_id: str, caller: Principal | None) -> None:
        """Another caller's task is not found, exactly like an unknown one."""
        if caller is None or caller.is_admin:
            return
        run = self._runs.get(task_id)
        owner = run.owner if run is not None else await self.store.owner_of(task_id)
        if not caller.may_see(owner):
            raise _not_found(task_id)

    async def _load(self, task_id: str) -> Task:
        """The stored task; one left ``working`` by a previous process is marked failed first."""
        task = await self.store.load_task(task_id)
        if task is None:
            raise _not_found(task_id)
        if not is_running(task) or self._runs.is_claimed(task_id) or await self.store.running_elsewhere(task_id):
            return task
        with self._runs.reserve(task_id), anyio.CancelScope(shield=True):
            healed = await self._load_own(task_id)
        return healed or task

    async def _load_own(self, task_id: str) -> Task | None:
        """Load a task whose id this caller has reserved, healing an orphaned run."""
        task = await self.store.load_task(task_id)
        if task is not None and is_running(task) and not await self.store.running_elsewhere(task_id):
            logger.warning("task %s was left %s by a previous server process", task_id, task.status.state.value)
            task = await self._close_idle(task, TaskState.FAILED, _INTERRUPTED)
        return task

    async def _close_idle(self, task: Task, state: TaskState, text: str) -> Task:
        """Give a task that has no run a final status line."""
        seq = await self.store.last_seq(task.id) + 1
        task = task.copied()
        task.status = TaskStatus(state=state, message=Message.agent(text))
        event = StatusEvent(seq=seq, id=task.id, status=task.status, final=True)
        logger.info("task %s agent=%s state=%s", task.id, self.agent.name, state.value)
        await self.store.save_task(task)
        await self.store.append_event(task.id, event)
        if self._push is not None:  # no run hands this line on: the task's webhooks hear it here
            hook = self._push.watch(task, await self._configs(self._push, task.id).list())
            if hook is not None:
                hook(event)
        self._idle_task_moved.notify()
        return task


def _no_push() -> ProtocolError:
    message = "push notifications are not supported (the card says capabilities.pushNotifications: false)"
    return ProtocolError(ErrorCode.PUSH_NOTIFICATION_NOT_SUPPORTED, message + "; stream the task or poll GetTask")


def _not_found(task_id: str) -> ProtocolError:
    return ProtocolError(ErrorCode.TASK_NOT_FOUND, f"task {task_id!r} not found (unknown, or expired)")


def _trimmed(task: Task, history_length: int | None) -> Task:
    """A deep copy of ``task`` with only the last ``history_length`` messages (all when None)."""
    copy = task.copied()
    if history_length is not None and copy.history is not None:
        copy.history = _recent(copy.history, history_length)
    return copy


def _settled(task: Task, history_length: int | None) -> Task:
    """``_trimmed`` for the task of a run that has ended, which nothing changes any more: itself, or a shallow
    copy with fewer messages."""
    history = task.history
    if history_length is None or history is None:
        return task
    return task.model_copy(update={"history": _recent(history, history_length)})


def _recent(history: list[Message], history_length: int) -> list[Message]:
    """The last ``history_length`` messages: all of them when there are fewer, none for 0."""
    return history[-history_length:] if history_length > 0 else []


async def _flattened(batches: AsyncGenerator[list[StreamEvent], None]) -> AsyncGenerator[StreamEvent, None]:
    async with aclosing(batches):
        async for batch in batches:
            for event in batch:
                yield event
