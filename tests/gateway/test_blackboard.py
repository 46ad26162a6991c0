"""The blackboard: boards with a version each, compare-and-set writes (concurrent writers: one wins,
the others are told and nothing is lost), on the memory and SQLite stores, as agent tools inside
swarm turns, and over the gateway's HTTP API with owners like sessions'."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from agent_server import Principal, TokenTable
from gateway import Agent, Runner
from gateway.blackboard import Blackboard, BoardStore, MemoryBoardStore, SQLiteBoardStore, blackboard_tools
from gateway.errors import BoardConflict, BoardNotFound, BoardTooLarge
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.models.base import ChatMessage, ModelSettings, ToolSpec
from gateway.service import create_gateway_app
from tests.support.gateway_service import error_of, triage_service
from tests.support.servers import serve_app

WRITERS = 8
ALICE, BOB, OPS = "alice-secret", "bob-secret", "ops-secret"
TOKENS = TokenTable({ALICE: Principal("alice", "chat"), BOB: Principal("bob", "chat"), OPS: Principal("ops", "admin")})


@pytest.fixture(params=["memory", "sqlite"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[BoardStore]]:
    """Two handles on one set of boards: one memory store, or two SQLite connections to one file (two processes)."""
    if request.param == "memory":
        store = MemoryBoardStore()
        yield [store, store]
        return
    yield [SQLiteBoardStore(tmp_path / "boards.db"), SQLiteBoardStore(tmp_path / "boards.db")]


@pytest.mark.anyio
async def test_concurrent_writers_one_wins_the_others_are_told_and_nothing_is_lost(stores: list[BoardStore]) -> None:
    boards = [Blackboard(store) for store in stores]
    everyone_read = anyio.Event()
    read_count = 0
    first_tries: dict[int, Exception | None] = {}
    tries: dict[int, int] = {}

    async def writer(number: int) -> None:
        nonlocal read_count
        board = boards[number % 2]
        version = (await board.read("plan")).version
        read_count += 1
        if read_count == WRITERS:
            everyone_read.set()
        await everyone_read.wait()
        for attempt in range(1, 4 * WRITERS):
            try:
                await board.update("plan", version, changes={f"writer-{number}": number})
            except BoardConflict as exc:
                first_tries.setdefault(number, exc)
                version = exc.current.version
                continue
            first_tries.setdefault(number, None)
            tries[number] = attempt
            return
        raise AssertionError(f"writer {number} never got its write in")

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            for number in range(WRITERS):
                tasks.start_soon(writer, number)

    winners = [n for n, outcome in first_tries.items() if outcome is None]
    assert len(winners) == 1, "all read version 0: exactly one first write succeeds"
    conflicts = [outcome for outcome in first_tries.values() if isinstance(outcome, BoardConflict)]
    assert len(conflicts) == WRITERS - 1
    for conflict in conflicts:
        assert conflict.expected_version == 0 and conflict.current.version >= 1
        assert f"writer-{winners[0]}" in conflict.current.entries
    final = await boards[0].read("plan")
    assert final.version == WRITERS
    assert final.entries == {f"writer-{n}": n for n in range(WRITERS)}
    for store in {id(s): s for s in stores}.values():
        await store.close()


@pytest.mark.anyio
async def test_limits_and_owners() -> None:
    board = Blackboard(max_bytes=64, max_key_chars=8)
    alice, bob, ops = Principal("alice", "chat"), Principal("bob", "chat"), Principal("ops", "admin")
    await board.update("plan", 0, changes={"step": 1}, caller=alice)
    with pytest.raises(BoardTooLarge, match="over its limit of 64"):
        await board.update("plan", 1, changes={"notes": "x" * 100}, caller=alice)
    with pytest.raises(BoardTooLarge, match="1-8 characters"):
        await board.update("plan", 1, changes={"a-very-long-key": 1}, caller=alice)
    assert (await board.read("plan", alice)).entries == {"step": 1}
    with pytest.raises(BoardNotFound):
        await board.read("plan", bob)
    with pytest.raises(BoardNotFound):
        await board.update("plan", 1, changes={"mine": True}, caller=bob)
    assert (await board.read("plan", ops)).version == 1
    updated = await board.update("plan", 1, remove=["step"], changes={"done": True}, caller=alice)
    assert (updated.version, updated.entries) == (2, {"done": True})


class GatedModel(ScriptedModel):
    """A ScriptedModel whose call number ``wait_before`` waits for ``gate``: another turn acts in between."""

    def __init__(self, steps: list[Any], *, wait_before: int, gate: anyio.Event) -> None:
        super().__init__(steps)
        self.wait_before = wait_before
        self.gate = gate

    async def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> ModelResponse:
        if len(self.calls) == self.wait_before:
            with anyio.fail_after(10):
                await self.gate.wait()
        return await super().complete(messages, tools, settings)


def _call(name: str, call_id: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(call_id, name, arguments)])


def _last_result(messages: list[ChatMessage]) -> dict[str, Any]:
    result: dict[str, Any] = orjson.loads(messages[-1]["content"])
    return result


def _write_with_read_version(key: str, value: Any, call_id: str) -> Any:
    return lambda messages: _call(
        "blackboard_write", call_id, key=key, value=value, version=_last_result(messages)["version"], board="plan"
    )


@pytest.mark.anyio
async def test_two_agents_in_two_sessions_share_a_board_and_the_late_writer_is_told_the_current_version() -> None:
    blackboard = Blackboard()
    tools = blackboard_tools(blackboard)
    b_done = anyio.Event()
    slow = GatedModel(
        [
            _call("blackboard_read", "a1", board="plan"),
            _write_with_read_version("owner", "agent-a", "a2"),
            _write_with_read_version("owner", "agent-a", "a3"),
            ModelResponse(content="A wrote after B."),
        ],
        wait_before=1,
        gate=b_done,
    )
    fast = ScriptedModel(
        [
            _call("blackboard_read", "b1", board="plan"),
            _write_with_read_version("reviewer", "agent-b", "b2"),
            ModelResponse(content="B wrote first."),
        ]
    )
    runner_a = Runner(Agent("A", tools=tools, model=slow))
    runner_b = Runner(Agent("B", tools=tools, model=fast))
    answers: dict[str, Any] = {}

    async def turn_a() -> None:
        answers["a"] = await runner_a.run_async("session-a", "plan it")

    async def turn_b() -> None:
        answers["b"] = await runner_b.run_async("session-b", "review it")
        b_done.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(turn_a)
        tasks.start_soon(turn_b)

    conflict = orjson.loads(next(m["content"] for m in answers["a"].messages if m.get("tool_call_id") == "a2"))
    assert (conflict["written"], conflict["version"], conflict["entries"]) == (False, 1, {"reviewer": "agent-b"})
    retried = orjson.loads(next(m["content"] for m in answers["a"].messages if m.get("tool_call_id") == "a3"))
    assert retried == {"written": True, "board": "plan", "version": 2}
    board = await blackboard.read("plan")
    assert (board.version, board.entries) == (2, {"reviewer": "agent-b", "owner": "agent-a"})


@pytest.mark.anyio
async def test_without_a_board_name_the_tools_use_the_sessions_own_board() -> None:
    blackboard = Blackboard()
    model = ScriptedModel(
        [
            _call("blackboard_write", "w1", key="topic", value="refund", version=0),
            _call("blackboard_write", "w2", key="topic", value=None, version=1),
            ModelResponse(content="noted"),
        ]
    )
    runner = Runner(Agent("A", tools=blackboard_tools(blackboard), model=model))
    await runner.run_async("s1", "x", caller=Principal("alice", "chat"))
    board = await blackboard.read("session:s1")
    assert (board.version, board.entries, board.owner) == (2, {}, "alice")
    [read_tool, _] = blackboard_tools(blackboard)
    assert (await read_tool.invoke({}, {})).startswith("Error: the blackboard tools run inside a swarm turn")


@pytest.fixture
def gateway() -> Iterator[str]:
    service = triage_service(blackboard=Blackboard(max_bytes=1024))
    with serve_app(create_gateway_app(service, tokens=TOKENS)) as url:
        yield url


def _as(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_boards_over_http_write_by_version_and_belong_to_their_writer(gateway: str) -> None:
    with httpx.Client(base_url=gateway, timeout=10) as http:
        assert http.get("/boards/plan", headers=_as(ALICE)).status_code == 404
        created = http.put("/boards/plan", json={"version": 0, "entries": {"step": 1}}, headers=_as(ALICE))
        assert created.json() == {"board": "plan", "version": 1, "entries": {"step": 1}}
        stale = http.put("/boards/plan", json={"version": 0, "entries": {"step": 9}}, headers=_as(ALICE))
        assert stale.status_code == 409
        assert error_of(stale)["data"] == {"board": "plan", "version": 1, "entries": {"step": 1}}
        assert http.get("/boards/plan", headers=_as(BOB)).status_code == 404
        assert http.put("/boards/plan", json={"version": 1, "entries": {}}, headers=_as(BOB)).status_code == 404
        assert http.get("/boards/plan", headers=_as(OPS)).json()["version"] == 1
        too_big = http.put("/boards/plan", json={"version": 1, "entries": {"x": "y" * 2000}}, headers=_as(ALICE))
        assert too_big.status_code == 413 and "over its limit of 1024" in error_of(too_big)["message"]
        bad = http.put("/boards/no:colons", json={"version": 0, "entries": {}}, headers=_as(ALICE))
        assert bad.status_code == 400 and "board name" in error_of(bad)["message"]
        assert http.put("/boards/plan", json={"version": -1, "entries": {}}, headers=_as(ALICE)).status_code == 400
        assert http.get("/boards/plan", headers=_as(ALICE)).json()["entries"] == {"step": 1}
        assert http.delete("/boards/plan", headers=_as(BOB)).status_code == 404
        assert http.delete("/boards/plan", headers=_as(ALICE)).json() == {"deleted": "plan"}
        assert http.get("/boards/plan", headers=_as(ALICE)).status_code == 404


def test_a_sessions_board_is_its_owners(gateway: str) -> None:
    with httpx.Client(base_url=gateway, timeout=10) as http:
        assert http.get("/sessions/s1/board", headers=_as(ALICE)).status_code == 404
        http.post("/sessions/s1/messages", json={"message": "hello"}, headers=_as(ALICE)).raise_for_status()
        empty = http.get("/sessions/s1/board", headers=_as(ALICE)).json()
        assert empty == {"board": "session:s1", "version": 0, "entries": {}}
        written = http.put("/sessions/s1/board", json={"version": 0, "entries": {"tier": "gold"}}, headers=_as(ALICE))
        assert written.json()["version"] == 1
        assert http.get("/sessions/s1/board", headers=_as(BOB)).status_code == 404
        assert http.put("/sessions/s1/board", json={"version": 1, "entries": {}}, headers=_as(BOB)).status_code == 404
        assert http.get("/sessions/s1/board", headers=_as(OPS)).json()["entries"] == {"tier": "gold"}
