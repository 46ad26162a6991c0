"""The TaskManager in-process (as the gateway uses it for local:// agents): runs, events, cancel."""

from __future__ import annotations

import gc
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agent_server import (
    DataChunk,
    HostedAgent,
    InputRequired,
    MemoryTaskStore,
    SQLiteTaskStore,
    TaskContext,
    TaskManager,
    TextChunk,
    agent,
    as_hosted_agent,
)
from agent_server.testing import Probe, scripted_agent
from protocol import (
    Artifact,
    ArtifactEvent,
    DataPart,
    ErrorCode,
    HandoffEvent,
    Message,
    ProtocolError,
    StatusEvent,
    StreamEvent,
    Task,
    TaskSendParams,
    TaskState,
    TaskStatus,
    TextPart,
)
from tests.support.waiting import until

pytestmark = pytest.mark.anyio


def _send(text: str, task_id: str | None = None, **extra: Any) -> TaskSendParams:
    return TaskSendParams(id=task_id, message=Message.user(text), **extra)


@asynccontextmanager
async def _manager(handler: Any = None, **options: Any) -> AsyncIterator[TaskManager]:
    probe = options.pop("probe", None)
    store = options.pop("store", None)
    hosted = as_hosted_agent(handler) if handler is not None else scripted_agent(probe=probe)
    manager = TaskManager(hosted, store if store is not None else MemoryTaskStore(), **options)
    async with manager.running():
        yield manager


async def _collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    async with aclosing(events) as stream:
        return [event async for event in stream]


async def _state_is_not(manager: TaskManager, task_id: str, state: TaskState) -> bool:
    return (await manager.get(task_id)).status.state is not state


def _assert_well_formed(events: list[StreamEvent], first_seq: int = 0) -> None:
    assert [e.seq for e in events] == list(range(first_seq, first_seq + len(events)))
    assert [e.final for e in events] == [False] * (len(events) - 1) + [True]


async def test_an_async_function_returning_text_completes_with_one_artifact() -> None:
    async def shout(ctx: TaskContext) -> str:
        return ctx.text.upper()

    async with _manager(shout) as manager:
        task = await manager.send(_send("hi"))
        events = await _collect(await manager.resubscribe(task.id))
    assert task.status.state is TaskState.COMPLETED and task.output_text == "HI"
    assert [type(e) for e in events] == [StatusEvent, ArtifactEvent, StatusEvent]
    _assert_well_formed(events)
    assert task.history is not None and [m.role for m in task.history] == ["user", "agent"]


async def test_returning_a_message_sets_the_final_status_message_and_none_gives_nothing() -> None:
    async def answer(ctx: TaskContext) -> Message | None:
        return Message.agent("done and dusted") if ctx.text == "msg" else None

    async with _manager(answer) as manager:
        with_message = await manager.send(_send("msg"))
        without = await manager.send(_send("none"))
    assert with_message.status.message is not None and with_message.status.message.text == "done and dusted"
    assert with_message.artifacts == [] and with_message.output_text == "done and dusted"
    assert without.status.state is TaskState.COMPLETED and without.artifacts == [] and without.status.message is None


async def test_a_generator_streams_chunks_with_costs_and_one_final_line() -> None:
    @agent(name="gen")
    async def gen(ctx: TaskContext) -> AsyncIterator[Any]:
        yield "a"
        yield TextChunk("b", cost_usd=0.25)
        yield DataChunk({"n": 1}, cost_usd=0.5)
        yield {"n": 2}
        yield Artifact(name="report", index=1, parts=[TextPart(text="r")])

    async with _manager(gen) as manager:
        events = await _collect(manager.subscribe(_send("go", "g1")))
        task = await manager.get("g1")
    _assert_well_formed(events)
    assert [e.cost_usd for e in events if isinstance(e, ArtifactEvent)] == [0.0, 0.25, 0.5, 0.0, 0.0]
    assert task.metadata["cost_usd"] == 0.75
    first, report = task.artifacts
    assert [type(p) for p in first.parts] == [TextPart, DataPart, DataPart]
    assert first.parts[0].text == "ab"  # type: ignore[union-attr]
    assert report.name == "report" and report.index == 1


async def test_an_agent_exception_fails_the_task_and_the_manager_carries_on(caplog: pytest.LogCaptureFixture) -> None:
    async with _manager() as manager:
        failed = await manager.send(_send("fail the disk is on fire"))
        fine = await manager.send(_send("echo still here"))
    assert failed.status.state is TaskState.FAILED
    assert failed.status.message is not None
    assert failed.status.message.text == "RuntimeError: the disk is on fire"
    assert fine.output_text == "still here"
    assert any(r.exc_info and r.exc_info[0] is RuntimeError for r in caplog.records)  # logged with traceback


async def test_yielding_something_unknown_fails_with_a_clear_message() -> None:
    async def odd(ctx: TaskContext) -> AsyncIterator[Any]:
        yield "fine"
        yield 42

    async with _manager(odd) as manager:
        task = await manager.send(_send("x"))
    assert task.status.state is TaskState.FAILED
    assert "produced a int; expected str, dict" in task.status.message.text  # type: ignore[union-attr]
    assert task.output_text == "fine"


async def test_input_required_then_resume_on_the_same_task_id() -> None:
    seen: list[list[str]] = []

    async def ask_name(ctx: TaskContext) -> AsyncIterator[Any]:
        seen.append([m.text for m in ctx.history])
        if not ctx.history:
            yield TextChunk("hello!", cost_usd=0.1)
            yield InputRequired("what is your name?")
            yield "never sent"
        yield TextChunk(f"nice to meet you, {ctx.text}", cost_usd=0.2)

    async with _manager(ask_name) as manager:
        first = await manager.send(_send("hi", "conv", session_id="s9"))
        second_events = await _collect(manager.subscribe(_send("Ada", "conv")))
        second = await manager.get("conv")
        all_events = await _collect(await manager.resubscribe("conv"))
    assert first.status.state is TaskState.INPUT_REQUIRED
    assert first.status.message is not None and first.status.message.text == "what is your name?"
    assert first.output_text == "hello!"
    assert seen == [[], ["hi", "hello!what is your name?"]]
    _assert_well_formed(second_events, first_seq=3)
    assert second.status.state is TaskState.COMPLETED and second.session_id == "s9"
    assert second.output_text == "nice to meet you, Ada"  # artifacts hold the latest send's output
    assert second.metadata["cost_usd"] == pytest.approx(0.3)
    assert [m.role for m in second.history or []] == ["user", "agent", "user", "agent"]
    assert [e.seq for e in all_events] == [0, 1, 2]  # resubscribe stops at the first final line


async def test_a_handoff_is_a_line_and_task_metadata_then_the_task_completes() -> None:
    async with _manager() as manager:
        events = await _collect(manager.subscribe(_send("handoff billing overdue invoice", "h1")))
        task = await manager.get("h1")
    _assert_well_formed(events)
    handoffs = [e for e in events if isinstance(e, HandoffEvent)]
    assert len(handoffs) == 1 and handoffs[0].handoff.target == "billing"
    assert handoffs[0].handoff.reason == "overdue invoice" and handoffs[0].handoff.payload == {"from": "h1"}
    assert task.metadata["handoff"] == {"target": "billing", "reason": "overdue invoice", "payload": {"from": "h1"}}
    assert task.status.state is TaskState.COMPLETED


async def test_cancel_reaches_the_agent_code_and_ends_canceled() -> None:
    probe = Probe()
    async with _manager(probe=probe) as manager:
        lines: list[StreamEvent] = []

        async def watch() -> None:
            async for event in manager.subscribe(_send("sleep 30", "c1")):
                lines.append(event)

        with anyio.fail_after(10):  # the agent sleeps 30 s: only the cancel ends it this soon
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                await until(lambda: probe.started_at("c1") is not None, "the agent to start task c1")
                task = await manager.cancel("c1")
        with pytest.raises(ProtocolError) as again:
            await manager.cancel("c1")
        with pytest.raises(ProtocolError) as unknown:
            await manager.cancel("nope")
    assert task.status.state is TaskState.CANCELED
    assert probe.canceled_at("c1") is not None, "the cancel reached the agent's own code"
    last = lines[-1]
    assert isinstance(last, StatusEvent) and last.final and last.status.state is TaskState.CANCELED
    assert (again.value.code, again.value.http_status) == (ErrorCode.TASK_NOT_CANCELABLE, 409)
    assert (unknown.value.code, unknown.value.http_status) == (ErrorCode.TASK_NOT_FOUND, 404)


async def test_an_input_required_task_can_be_canceled() -> None:
    async with _manager() as manager:
        await manager.send(_send("ask name?", "q1"))
        task = await manager.cancel("q1")
        events = await _collect(await manager.resubscribe("q1", after_seq=1))
    assert task.status.state is TaskState.CANCELED
    assert [(e.seq, e.final) for e in events] == [(2, True)]


async def test_a_send_to_a_working_or_finished_task_is_refused_with_409() -> None:
    async with _manager() as manager:
        first = await manager.send(_send("echo one", "busy"))
        with pytest.raises(ProtocolError) as finished:
            await manager.send(_send("echo two", "busy"))
        async with aclosing(manager.subscribe(_send("sleep 30", "running"))) as events:
            await events.__anext__()
            with pytest.raises(ProtocolError) as working:
                await manager.send(_send("echo again", "running"))
            with anyio.fail_after(10):
                await manager.cancel("running")
    assert first.status.state is TaskState.COMPLETED
    assert finished.value.http_status == 409 and "completed" in finished.value.message
    assert working.value.http_status == 409 and "still working" in working.value.message


async def test_leaving_running_cancels_tasks_and_they_end_canceled() -> None:
    probe = Probe()
    store = MemoryTaskStore()
    with anyio.fail_after(10):
        async with _manager(probe=probe, store=store) as manager:
            async with aclosing(manager.subscribe(_send("sleep 30", "s1"))) as events:
                await events.__anext__()
    task = await store.load_task("s1")
    assert task is not None and task.status.state is TaskState.CANCELED
    assert "shutting down" in task.status.message.text  # type: ignore[union-attr]
    assert probe.canceled_at("s1") is not None
    assert [e.final for e in await store.read_events("s1")] == [False, True]


async def test_a_send_in_its_callers_task_runs_on_when_the_caller_is_cancelled() -> None:
    """The HTTP bindings' sync send: the run is shielded in the request's task, which waits for its end."""
    probe = Probe()
    async with _manager(probe=probe) as manager:

        async def send() -> None:
            await manager.send_in_caller_task(_send("stream 3 0.05", "ic"))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(send)
                await until(lambda: probe.started_at("ic") is not None, "the agent to start task ic")
                group.cancel_scope.cancel()
        task = await manager.get("ic")  # the cancelled caller returned only once its run had ended
    assert task.status.state is TaskState.COMPLETED and task.output_text == "chunk-0 chunk-1 chunk-2 "
    assert probe.canceled_at("ic") is None


class _SlowToRecordEnds(MemoryTaskStore):
    """A store whose write of a task's end takes a while (a remote one), so leaving early would be seen."""

    async def save_task(self, task: Task, owner: str | None = None) -> None:
        if task.status.state.is_terminal:
            await anyio.sleep(0.05)
        await super().save_task(task, owner)


async def test_cancel_and_leaving_running_end_sends_in_their_callers_tasks() -> None:
    probe = Probe()
    store = _SlowToRecordEnds()
    answers: dict[str, Task] = {}
    with anyio.fail_after(10):  # the agent sleeps 30 s: only the cancels end it this soon
        async with anyio.create_task_group() as group:
            async with _manager(probe=probe, store=store) as manager:

                async def send(task_id: str) -> None:
                    answers[task_id] = await manager.send_in_caller_task(_send("sleep 30", task_id))

                group.start_soon(send, "by-request")
                group.start_soon(send, "by-shutdown")
                await until(
                    lambda: None not in (probe.started_at("by-request"), probe.started_at("by-shutdown")),
                    "the agent to start both tasks",
                )
                canceled = await manager.cancel("by-request")
            stopped = await store.load_task("by-shutdown")  # leaving running() waited for the end to be recorded
    assert canceled.status.state is answers["by-request"].status.state is TaskState.CANCELED
    assert stopped is not None and stopped.status.state is TaskState.CANCELED
    assert "shutting down" in stopped.status.message.text  # type: ignore[union-attr]
    assert [e.final for e in await store.read_events("by-shutdown")] == [False, True]
    assert answers["by-shutdown"].status.state is TaskState.CANCELED
    assert None not in (probe.canceled_at("by-request"), probe.canceled_at("by-shutdown"))


class _HangsOnEnds(MemoryTaskStore):
    """A store whose write of a task's end never returns (a remote one that stopped answering)."""

    async def save_task(self, task: Task, owner: str | None = None) -> None:
        if task.status.state.is_terminal:
            await anyio.sleep_forever()
        await super().save_task(task, owner)


@pytest.mark.parametrize("in_caller_task", [True, False])
async def test_recording_the_end_is_bounded_when_the_store_hangs(
    in_caller_task: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent_server.tasks.manager._FINISH_TIMEOUT_S", 0.2)
    with anyio.fail_after(10):
        async with _manager(store=_HangsOnEnds()) as manager:
            send = manager.send_in_caller_task if in_caller_task else manager.send
            task = await send(_send("echo hi", "hung"))
    assert task.output_text == "hi" and task.status.state is TaskState.COMPLETED


class _HeldEnds(MemoryTaskStore):
    """A store whose write of a task's end waits until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.writing_end = anyio.Event()
        self.let_go = anyio.Event()

    async def save_task(self, task: Task, owner: str | None = None) -> None:
        if task.status.state.is_terminal:
            self.writing_end.set()
            await self.let_go.wait()
        await super().save_task(task, owner)


async def test_a_cancel_while_the_end_is_recorded_does_not_cut_the_recording_short() -> None:
    store = _HeldEnds()
    answers: list[Task] = []
    with anyio.fail_after(10):
        async with _manager(store=store) as manager, anyio.create_task_group() as group:

            async def send() -> None:
                answers.append(await manager.send_in_caller_task(_send("echo hi", "late")))

            async def cancel() -> None:
                answers.append(await manager.cancel("late"))

            group.start_soon(send)
            await store.writing_end.wait()
            group.start_soon(cancel)
            await anyio.wait_all_tasks_blocked()  # the cancel waits for the run's end
            store.let_go.set()
    stored = await store.load_task("late")
    assert stored is not None and stored.status.state is TaskState.COMPLETED
    assert [task.status.state for task in answers] == [TaskState.COMPLETED] * 2 and answers[0].output_text == "hi"
    assert [e.final for e in await store.read_events("late")] == [False, False, True]


async def test_closing_a_stream_early_leaves_the_task_running() -> None:
    async with _manager() as manager:
        async with aclosing(manager.subscribe(_send("stream 5 0.01", "k1"))) as events:
            await events.__anext__()
        with anyio.fail_after(10):
            rest = await _collect(await manager.resubscribe("k1", after_seq=0))
    assert rest[-1].status.state is TaskState.COMPLETED  # type: ignore[union-attr]
    _assert_well_formed(rest, first_seq=1)


async def test_with_cancel_on_disconnect_closing_the_stream_cancels_the_task() -> None:
    probe = Probe()
    async with _manager(probe=probe, cancel_on_disconnect=True) as manager:
        async with aclosing(manager.subscribe(_send("sleep 30", "d1"))) as events:
            await events.__anext__()
        await until(
            lambda: _state_is_not(manager, "d1", TaskState.WORKING), "the dropped stream's task to stop working"
        )
        task = await manager.get("d1")
    assert task.status.state is TaskState.CANCELED and probe.canceled_at("d1") is not None


async def test_resubscribe_mid_run_gives_stored_then_live_events_without_gap_or_duplicate() -> None:
    async with _manager() as manager:
        async with aclosing(manager.subscribe(_send("stream 8 0.01", "r1"))) as events:
            head = [await events.__anext__() for _ in range(3)]
        tail = await _collect(await manager.resubscribe("r1", after_seq=head[-1].seq))
        everything = await _collect(await manager.resubscribe("r1"))
    _assert_well_formed(head + tail)
    assert [e.seq for e in everything] == [e.seq for e in head + tail]


async def test_a_follower_that_leaves_takes_nothing_from_the_followers_that_stay() -> None:
    gate = anyio.Event()

    async def agent(ctx: TaskContext) -> AsyncIterator[str]:
        yield "before "
        await gate.wait()
        yield "after"

    async def follow_until_canceled(events: AsyncIterator[StreamEvent]) -> None:
        async with aclosing(events) as stream:
            async for _ in stream:
                pass

    async with _manager(agent) as manager:
        async with aclosing(manager.subscribe(_send("x", "f1"))) as staying:
            head = [await staying.__anext__() for _ in range(2)]  # working, "before "
            async with anyio.create_task_group() as task_group:
                # a second follower, caught up like the first: both wait with nothing pending
                task_group.start_soon(follow_until_canceled, await manager.resubscribe("f1", after_seq=head[-1].seq))
                await anyio.lowlevel.checkpoint()
                await anyio.wait_all_tasks_blocked()
                task_group.cancel_scope.cancel()
            gate.set()
            with anyio.fail_after(10):
                tail = [event async for event in staying]
    _assert_well_formed(head + tail)
    assert tail[-1].status.state is TaskState.COMPLETED  # type: ignore[union-attr]


async def test_resubscribe_past_the_end_of_a_finished_task_is_empty_and_unknown_is_404() -> None:
    async with _manager() as manager:
        await manager.send(_send("echo x", "e1"))
        assert await _collect(await manager.resubscribe("e1", after_seq=2)) == []
        with pytest.raises(ProtocolError) as unknown:
            await _collect(await manager.resubscribe("nope"))
    assert unknown.value.code == ErrorCode.TASK_NOT_FOUND


async def test_get_trims_history_and_returns_copies() -> None:
    async with _manager() as manager:
        await manager.send(_send("ask a?", "h"))
        await manager.send(_send("b", "h"))
        full = await manager.get("h")
        last_two = await manager.get("h", history_length=2)
        none = await manager.get("h", history_length=0)
        full.metadata["cost_usd"] = 99
        again = await manager.get("h")
    assert [m.text for m in full.history or []] == ["ask a?", "a?", "b", "got: b"]
    assert [m.text for m in last_two.history or []] == ["b", "got: b"]
    assert none.history == []
    assert again.metadata["cost_usd"] != 99


async def test_many_tasks_run_concurrently_and_stay_isolated() -> None:
    """Each task waits until all 20 have started: tasks run one after another would never get past that."""
    started: set[str] = set()
    all_started = anyio.Event()

    async def together(ctx: TaskContext) -> AsyncIterator[TextChunk]:
        started.add(ctx.task_id)
        if len(started) == 20:
            all_started.set()
        await all_started.wait()
        count, cost = ctx.text.split()
        for k in range(int(count)):
            await anyio.lowlevel.checkpoint()  # the other tasks' chunks come in between
            yield TextChunk(f"chunk-{k} ", cost_usd=float(cost))

    async with _manager(together) as manager:
        results: dict[int, Task] = {}

        async def one(i: int) -> None:
            results[i] = await manager.send(_send(f"{i % 4 + 2} 0.{i:02d}", f"iso{i}"))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(one, i)
    assert len(results) == 20
    for i, task in results.items():
        n = i % 4 + 2
        assert task.output_text == "".join(f"chunk-{k} " for k in range(n))
        assert task.metadata["cost_usd"] == pytest.approx(n * float(f"0.{i:02d}"))


async def test_a_task_left_working_by_a_dead_process_is_reported_failed(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    try:
        await store.save_task(Task(id="ghost", status=TaskStatus(state=TaskState.WORKING)))
        await store.append_event("ghost", StatusEvent(seq=0, id="ghost", status=TaskStatus(state=TaskState.WORKING)))
        async with _manager(store=store) as manager:
            task = await manager.get("ghost")
            events = await _collect(await manager.resubscribe("ghost"))
    finally:
        await store.aclose()
    assert task.status.state is TaskState.FAILED
    assert "server stopped" in task.status.message.text  # type: ignore[union-attr]
    _assert_well_formed(events)


async def test_the_manager_must_be_running_to_start_tasks() -> None:
    manager = TaskManager(scripted_agent(), MemoryTaskStore())
    with pytest.raises(ProtocolError) as caught:
        await manager.send(_send("echo x"))
    assert caught.value.http_status == 503 and "not running" in caught.value.message


def test_bare_functions_and_decorated_agents_become_hosted_agents() -> None:
    async def helper(ctx: TaskContext) -> str:
        """Helps with things."""
        return ""

    bare = as_hosted_agent(helper)
    assert (bare.name, bare.description) == ("helper", "Helps with things.")

    @agent(name="named", description="d", skills=[{"id": "s", "name": "S"}])
    async def decorated(ctx: TaskContext) -> str:
        return ""

    assert isinstance(decorated, HostedAgent) and decorated.skills[0].id == "s"
    assert decorated.card("http://h").to_wire()["skills"][0]["name"] == "S"
    assert as_hosted_agent(decorated) is decorated
    with pytest.raises(TypeError):
        as_hosted_agent(42)  # type: ignore[arg-type]


async def test_the_echo_example_echoes() -> None:
    from examples.echo import agent as echo

    async with _manager(echo) as manager:
        task = await manager.send(_send("same again"))
    assert task.output_text == "same again"


async def test_the_researcher_example_streams_at_a_steady_pace_and_stops_promptly_when_canceled() -> None:
    from examples.researcher import make_researcher

    interval = 0.02
    arrivals: list[float] = []
    async with _manager(make_researcher(chunks=1000, interval_s=interval, cost_per_chunk_usd=0.01)) as manager:
        with anyio.fail_after(10):  # 1000 chunks take 20 s: only the cancel ends the task this soon
            subscribed = anyio.current_time()
            async with aclosing(manager.subscribe(_send("tides", "res"))) as events:
                async for _ in events:
                    arrivals.append(anyio.current_time())
                    if len(arrivals) == 6:
                        task = await manager.cancel("res")
    # The k-th chunk comes no sooner than k pauses after the start: paced, not a burst (lower bounds only).
    assert all(at - subscribed >= k * interval * 0.9 for k, at in enumerate(arrivals[1:6], start=1)), arrivals
    assert task.status.state is TaskState.CANCELED
    assert task.metadata["cost_usd"] == pytest.approx(0.01 * 5), "nothing was made after the cancel"
    assert task.output_text.startswith("[1/1000] background on tides.\n")


async def test_an_agent_that_swallows_cancellation_still_gets_canceled() -> None:
    """Its output after the cancel is not taken, so the cancel ends instead of waiting on a busy loop."""

    async def stubborn(ctx: TaskContext) -> AsyncIterator[str]:
        while True:
            try:
                await anyio.sleep(3600)
            except anyio.get_cancelled_exc_class():
                pass  # the mistake: not re-raising
            yield "still here"

    async with _manager(stubborn) as manager:
        async with aclosing(manager.subscribe(_send("go", "st"))) as events:
            await events.__anext__()
            with anyio.fail_after(10):
                task = await manager.cancel("st")
    assert task.status.state is TaskState.CANCELED and task.artifacts == []


async def test_an_agent_result_nested_too_deep_fails_the_task_and_it_stays_readable() -> None:
    def nested(depth: int) -> dict[str, Any]:
        value: dict[str, Any] = {"leaf": 1}
        for _ in range(depth):
            value = {"a": value}
        return value

    async def deep(ctx: TaskContext) -> AsyncIterator[Any]:
        yield "before"
        yield DataChunk(nested(int(ctx.text)))

    async with _manager(deep) as manager:
        too_deep = await manager.send(_send("100", "d1"))
        beyond_serializing = await manager.send(_send("300", "d2"))
        reread = [await manager.get("d1"), await manager.get("d2")]
    assert too_deep.status.state is TaskState.FAILED
    assert "Artifact nested 104 levels deep; the limit is 64" in too_deep.status.message.text  # type: ignore[union-attr]
    assert beyond_serializing.status.state is TaskState.FAILED
    assert [task.output_text for task in reread] == ["before", "before"]
    assert all(task.to_json() for task in reread)


async def test_resubscribe_refuses_an_after_seq_past_the_last_event_before_any_event() -> None:
    async with _manager() as manager:
        await manager.send(_send("echo x", "p1"))
        async with aclosing(manager.subscribe(_send("sleep 30", "p2"))) as events:
            await events.__anext__()
            with anyio.fail_after(10):
                with pytest.raises(ProtocolError) as running:
                    await manager.resubscribe("p2", after_seq=1)
                live = await manager.resubscribe("p2", after_seq=0)  # returns at once, though no event is due
            await manager.cancel("p2")
            assert [e.seq for e in await _collect(live)] == [1]
        with pytest.raises(ProtocolError) as finished:
            await manager.resubscribe("p1", after_seq=3)
    assert (running.value.code, running.value.http_status) == (ErrorCode.INVALID_PARAMS, 400)
    assert "past the last event" in running.value.message and running.value.data[0]["field"] == "afterSeq"
    assert finished.value.code == ErrorCode.INVALID_PARAMS and "(seq 2)" in finished.value.message


async def test_an_async_generator_that_swallows_the_cancel_and_returns_still_ends_canceled() -> None:
    """Leaving a cancelled scope normally re-raises nothing: the cancel request decides the state."""
    swallowed = anyio.Event()

    async def quitter(ctx: TaskContext) -> AsyncIterator[str]:
        yield "started"
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            swallowed.set()
            return  # the mistake: not re-raising

    async with _manager(quitter) as manager:
        async with aclosing(manager.subscribe(_send("go", "q1"))) as events:
            await events.__anext__()
            await events.__anext__()  # "started"
            with anyio.fail_after(10):
                task = await manager.cancel("q1")
            rest = [event async for event in events]
        stored = await manager.get("q1")
    assert swallowed.is_set()
    assert task.status.state is TaskState.CANCELED and stored.status.state is TaskState.CANCELED
    assert task.status.message is not None and task.status.message.text == "canceled by request"
    assert [e.status.state for e in rest] == [TaskState.CANCELED]  # type: ignore[union-attr]


async def test_an_agent_that_swallows_the_shutdown_cancel_still_ends_canceled() -> None:
    async def quitter(ctx: TaskContext) -> AsyncIterator[str]:
        yield "started"
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            return

    store = MemoryTaskStore()
    with anyio.fail_after(10):
        async with _manager(quitter, store=store) as manager:
            async with aclosing(manager.subscribe(_send("go", "q2"))) as events:
                await events.__anext__()
                await events.__anext__()
    task = await store.load_task("q2")
    assert task is not None and task.status.state is TaskState.CANCELED
    assert "shutting down" in task.status.message.text  # type: ignore[union-attr]


@contextmanager
def _left_to_the_finalizer() -> Iterator[list[str]]:
    """Names of async generators garbage-collected unclosed, which asyncio then closes in stray tasks."""
    hooks = sys.get_asyncgen_hooks()
    names: list[str] = []

    def finalizer(agen: Any) -> None:
        names.append(agen.__qualname__)
        if hooks.finalizer is not None:
            hooks.finalizer(agen)

    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalizer)
    try:
        yield names
    finally:
        sys.set_asyncgen_hooks(*hooks)


async def test_closing_streams_early_closes_the_inner_generators_too() -> None:
    with _left_to_the_finalizer() as unclosed:
        async with _manager() as manager:
            async with aclosing(manager.subscribe(_send("stream 50 0.01", "c1"))) as events:
                await events.__anext__()
            async with aclosing(await manager.resubscribe("c1", after_seq=-1)) as events:
                for _ in range(3):
                    await events.__anext__()
            await manager.cancel("c1")
        gc.collect()
    assert unclosed == []
