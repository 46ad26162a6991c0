"""Sessions: compare-and-set stores, a SQLite session across a process restart, concurrent turns."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway import Agent, MemorySessionStore, Runner, SessionConflictError, SQLiteSessionStore, tool
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.swarm import HandoffRecord, Session, SessionStore
from gateway.swarm.sessions.redis import RedisSessionStore
from tests.support.waiting import DEADLINE_S, until

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made: SessionStore
    if request.param == "memory":
        made = MemorySessionStore()
    elif request.param == "sqlite":
        made = SQLiteSessionStore(tmp_path / "s.db")
    else:
        made = RedisSessionStore(request.getfixturevalue("redis_url"))
    async with made.running():
        yield made
    await made.close()


async def test_load_of_an_unknown_session_is_empty_at_version_zero(store: SessionStore) -> None:
    session = await store.load("nope")
    assert (session.id, session.version, session.history, session.active_agent) == ("nope", 0, [], None)


async def test_save_bumps_the_version_and_round_trips_every_field(store: SessionStore) -> None:
    session = await store.load("s")
    session.history.append({"role": "user", "content": "hi"})
    session.active_agent = "Billing"
    session.context_variables = {"customer": "Ada", "n": 3}
    session.handoff = HandoffRecord("Triage", "Billing", "refund", {"slots": {"id": "1"}}, at=1)
    assert (await store.save(session)).version == 1
    loaded = await store.load("s")
    assert loaded == session


@pytest.mark.parametrize("saved_before", [0, 2])
async def test_a_stale_save_is_refused_and_the_winner_is_kept(store: SessionStore, saved_before: int) -> None:
    for _ in range(saved_before):
        await store.save(await store.load("s"))
    first = await store.load("s")
    second = await store.load("s")
    first.history.append({"role": "user", "content": "first"})
    await store.save(first)
    second.history.append({"role": "user", "content": "second"})
    expected, found = saved_before, saved_before + 1
    with pytest.raises(SessionConflictError, match=f"expected version {expected}, found {found}") as caught:
        await store.save(second)
    assert (caught.value.session_id, caught.value.expected_version, caught.value.actual_version) == (
        "s",
        expected,
        found,
    )
    assert [m["content"] for m in (await store.load("s")).history] == ["first"]
    again = await store.load("s")
    again.history.append({"role": "user", "content": "second"})
    await store.save(again)
    assert (await store.load("s")).version == found + 1


async def test_delete_forgets_the_session(store: SessionStore) -> None:
    await store.save(await store.load("s"))
    await store.delete("s")
    assert (await store.load("s")).version == 0


async def test_sqlite_refuses_context_it_cannot_store_as_json(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = Session(id="s", context_variables={"when": object()})
    with pytest.raises(TypeError, match="cannot store as JSON"):
        await store.save(session)
    await store.close()


_FIRST_PROCESS = textwrap.dedent(
    """
    import sys
    from examples.support_swarm import build_swarm
    from gateway import Runner, SQLiteSessionStore

    triage, _, _ = build_swarm()
    response = Runner(triage, session_store=SQLiteSessionStore(sys.argv[1])).run(
        "customer-7", "I was charged twice, I want a refund for order ORD-1234"
    )
    print(response.active_agent_name)
    """
)


async def test_sqlite_session_survives_a_process_restart(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first = subprocess.run(
        [sys.executable, "-c", _FIRST_PROCESS, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "Billing"

    from examples.support_swarm import build_swarm

    triage, _, _ = build_swarm()
    store = SQLiteSessionStore(path)
    runner = Runner(triage, session_store=store)
    response = await runner.run_async("customer-7", "Please also refund order ORD-1002")
    assert response.events_of("run_started")[0].fields["agent"] == "Billing"
    assert response.active_agent_name == "Billing"
    assert "ORD-1002" in response.content
    session = await store.load("customer-7")
    assert session.version == 4  # each turn saves twice: as it starts and as it ends
    assert [m["content"] for m in session.history if m["role"] == "user"] == [
        "I was charged twice, I want a refund for order ORD-1234",
        "Please also refund order ORD-1002",
    ]
    await store.close()


def _waiting_agent(release: anyio.Event, started: list[str]) -> Agent:
    @tool
    async def slow(label: str) -> str:
        """Takes a while."""
        started.append(label)
        await release.wait()
        return f"{label} done"

    def respond(messages: list[dict[str, Any]]) -> ModelResponse:
        last = messages[-1]
        if last["role"] == "user":
            return ModelResponse(
                tool_calls=[ToolCall(id=f"c-{last['content']}", name="slow", arguments={"label": last["content"]})]
            )
        return ModelResponse(content=f"finished {last['content']}")

    return Agent("Worker", tools=[slow], model=ScriptedModel([respond] * 4))


async def test_two_turns_on_one_session_in_one_process_queue_up_and_both_land(store: SessionStore) -> None:
    release = anyio.Event()
    started: list[str] = []
    runner = Runner(_waiting_agent(release, started), session_store=store)
    async with anyio.create_task_group() as group:
        group.start_soon(runner.run_async, "shared", "one")
        group.start_soon(runner.run_async, "shared", "two")
        await until(lambda: started != [], "a turn to reach its tool")
        await anyio.wait_all_tasks_blocked()  # the other turn waits too, on the session
        assert len(started) == 1
        release.set()
    session = await store.load("shared")
    assert session.version == 4  # each turn saves twice: as it starts and as it ends
    assert sorted(m["content"] for m in session.history if m["role"] == "user") == ["one", "two"]


async def test_two_processes_racing_on_one_session_never_lose_an_update_silently(tmp_path: Path) -> None:
    """The first turn saves as it starts; a second process starts on that state, so the first one's end loses."""
    path = tmp_path / "shared.db"
    release = anyio.Event()
    started: list[str] = []
    agent = _waiting_agent(release, started)
    runners = [Runner(agent, session_store=SQLiteSessionStore(path)) for _ in range(2)]
    outcomes: dict[str, Any] = {}

    async def turn(runner: Runner, text: str) -> None:
        try:
            outcomes[text] = await runner.run_async("shared", text)
        except SessionConflictError as exc:
            outcomes[text] = exc

    async with anyio.create_task_group() as group:
        group.start_soon(turn, runners[0], "one")
        await until(lambda: started == ["one"], "the first turn to reach its tool")
        group.start_soon(turn, runners[1], "two")
        await until(lambda: started == ["one", "two"], "the second turn to reach its tool")
        release.set()
    assert isinstance(outcomes["one"], SessionConflictError)
    assert outcomes["two"].content == "finished two done"
    session = await runners[0].session_store.load("shared")
    assert session.version == 3
    # "one"'s message was saved as its turn started, so the winner's turn built on it: nothing lost silently
    assert [m["content"] for m in session.history if m["role"] == "user"] == ["one", "two"]
    for runner in runners:
        await runner.session_store.close()


async def test_closing_a_sqlite_store_does_not_block_the_event_loop(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    ticks = 0
    in_call, release = threading.Event(), threading.Event()

    def held(conn: object) -> None:
        """A call in the middle of waiting on the file, until the test lets it go."""
        in_call.set()
        release.wait(DEADLINE_S)

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(tick)
            group.start_soon(store._db.run, held)
            await until(in_call.is_set, "the held call to start")
            group.start_soon(store.close)
            ticks_at_close = ticks
            await until(lambda: ticks >= ticks_at_close + 5, "the loop to keep running while close waits")
            assert not store._db.closed, "close waits for the call before it"
            release.set()
            await until(lambda: store._db.closed, "close to finish once the call is done")
            group.cancel_scope.cancel()
    finally:
        release.set()
