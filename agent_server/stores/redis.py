"""A task store in Redis, shared by several replicas of one agent behind a load balancer.

Per task: a hash ``PREFIX:task:ID`` (the snapshot, its state, its owner, and the id of the
process that runs it while it is running) and a stream ``PREFIX:task-events:ID`` with one
entry per event, its entry id ``SEQ-1``, so any process reads from any seq and follows
the events as the running process appends them, and a hash ``PREFIX:task-push:ID`` of its
webhook configs by id. A task that is not running expires ``ttl_s`` after its last update
(Redis drops its keys itself, so ``expire()`` has nothing to do); a running one never does.

While its TaskManager runs (``serving``), a process keeps its mark of life renewed
(redis_leases.py) and listens on ``PREFIX:task-cancel:ID`` for cancel requests of the tasks
it runs. A running task whose process has lost its mark (it died) is left to the
TaskManager, which closes it ``failed`` as it does any task a stopped process left.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from datetime import datetime
from typing import Any

import anyio
import orjson

from agent_server.stores.base import RUNNING_STATES, CancelRequested, TaskFilter, TaskPage, TaskStore
from agent_server.stores.cursors import before, decode_cursor, encode_cursor
from agent_server.stores.redis_client import UNREACHABLE, connect, unavailable_as
from agent_server.stores.redis_leases import Liveness, renew_forever
from agent_server.stores.redis_settings import RedisSettings, RedisTarget, parse_redis_spec
from protocol import StreamEvent, Task, parse_stream_event

logger = logging.getLogger("agent_server")

DEFAULT_TTL_S = 3600.0
_MAX_SEQ = 2**63 - 2
_SCAN_BATCH = 500
_RUNNING = frozenset(state.value for state in RUNNING_STATES)

_SAVE = """
local created = redis.call('EXISTS', KEYS[1]) == 0
redis.call('HSET', KEYS[1], 'body', ARGV[1], 'state', ARGV[2])
if created and ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'owner', ARGV[3]) end
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'runner', ARGV[4])
  redis.call('PERSIST', KEYS[1])
  redis.call('PERSIST', KEYS[2])
  redis.call('PERSIST', KEYS[3])
else
  redis.call('HDEL', KEYS[1], 'runner')
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
return 1
"""

_APPEND = """
redis.call('XADD', KEYS[2], ARGV[1] .. '-1', 'e', ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""


_SAVE_PUSH = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) else redis.call('PERSIST', KEYS[2]) end
return 1
"""


class RedisTaskStore(TaskStore):
    """Tasks of one agent in Redis at ``spec`` (``redis://HOST:PORT/DB[?prefix=NAME]``); see the module docstring."""

    def __init__(self, spec: str, *, ttl_s: float = DEFAULT_TTL_S, settings: RedisSettings | None = None) -> None:
        self.target: RedisTarget = parse_redis_spec(spec, "task store")
        self.settings = settings or RedisSettings()
        self.ttl_s = ttl_s
        self._client = connect(self.target, self.settings)
        self._reader = connect(self.target, self.settings, blocking_reads=True)
        self._liveness = Liveness(self._client, self.target.prefix, self.settings)
        self._save = self._client.register_script(_SAVE)
        self._append = self._client.register_script(_APPEND)
        self._save_push = self._client.register_script(_SAVE_PUSH)

    @property
    def process_id(self) -> str:
        """Who runs the tasks this store saves running (a new id per store object)."""
        return self._liveness.id

    async def save_task(self, task: Task, owner: str | None = None) -> None:
        state = task.status.state.value
        runner = self._liveness.id if state in _RUNNING else ""
        with self._unavailable():
            await self._save(
                keys=[self._task_key(task.id), self._events_key(task.id), self._push_key(task.id)],
                args=[task.to_json(), state, owner or "", runner, max(1, round(self.ttl_s * 1000))],
            )

    async def load_task(self, task_id: str) -> Task | None:
        with self._unavailable():
            body = await self._client.hget(self._task_key(task_id), "body")
        return Task.model_validate_json(body) if body is not None else None

    async def owner_of(self, task_id: str) -> str | None:
        with self._unavailable():
            owner: bytes | None = await self._client.hget(self._task_key(task_id), "owner")  # type: ignore[assignment]
        return owner.decode() if owner is not None else None

    async def append_event(self, task_id: str, event: StreamEvent) -> None:
        with self._unavailable():
            await self._append(
                keys=[self._task_key(task_id), self._events_key(task_id)], args=[event.seq, event.encoded]
            )

    async def read_events(self, task_id: str, after_seq: int = -1) -> list[StreamEvent]:
        if after_seq > _MAX_SEQ:
            return []
        start = "-" if after_seq < 0 else f"({after_seq}-1"
        with self._unavailable():
            entries: Any = await self._client.xrange(self._events_key(task_id), start, "+")
        return [_event(fields) for _, fields in entries]

    async def last_seq(self, task_id: str) -> int:
        with self._unavailable():
            entries: Any = await self._client.xrevrange(self._events_key(task_id), "+", "-", count=1)
        return _seq(entries[0][0]) if entries else -1

    async def list_tasks(self, where: TaskFilter, *, limit: int, cursor: str = "") -> TaskPage:
        """Every task key scanned (``SCAN``, no index to keep in step with the keys' expiry), ordered by status time."""
        after = decode_cursor(cursor) if cursor else None
        found: list[tuple[tuple[float, str], Task]] = []
        with self._unavailable():
            async for key in self._client.scan_iter(match=self._task_key("*"), count=_SCAN_BATCH):
                fields: list[Any] = await self._client.hmget(key, ["body", "owner"])
                body, owner = fields
                if body is None:
                    continue  # it expired between the scan and the read
                task = Task.model_validate_json(body)
                if where.matches(task, owner.decode() if owner is not None else None):
                    found.append(((_epoch(task.status.timestamp), task.id), task))
        found.sort(key=lambda item: item[0], reverse=True)
        rest = [(place, task) for place, task in found if before(place, after)]
        page = rest[:limit]
        next_cursor = encode_cursor(*page[-1][0]) if len(rest) > limit else ""
        return TaskPage(tasks=[task for _, task in page], next_cursor=next_cursor, total=len(found))

    async def save_push_config(self, task_id: str, config_id: str, body: bytes) -> None:
        with self._unavailable():
            saved = await self._save_push(
                keys=[self._task_key(task_id), self._push_key(task_id)], args=[config_id, body]
            )
        if not saved:
            raise KeyError(f"no task {task_id!r} in the store; save it before its push configs")

    async def push_configs(self, task_id: str) -> dict[str, bytes]:
        with self._unavailable():
            found: Any = await self._client.hgetall(self._push_key(task_id))
        return {config_id.decode(): body for config_id, body in found.items()}

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        with self._unavailable():
            await self._client.hdel(self._push_key(task_id), config_id)

    async def delete_task(self, task_id: str) -> None:
        with self._unavailable():
            await self._client.delete(self._task_key(task_id), self._events_key(task_id), self._push_key(task_id))

    async def expire(self) -> int:
        """Redis drops expired tasks itself."""
        return 0

    async def aclose(self) -> None:
        await self._client.aclose()
        await self._reader.aclose()

    @asynccontextmanager
    async def serving(self, cancel: CancelRequested) -> AsyncIterator[None]:
        with self._unavailable():
            await self._liveness.renew()
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(renew_forever, self._liveness.renew, self.settings.renew_every_s, "the task store")
            task_group.start_soon(self._hear_cancels, cancel)
            try:
                yield
            finally:
                task_group.cancel_scope.cancel()
                await self._liveness.forget()

    async def running_elsewhere(self, task_id: str) -> bool:
        with self._unavailable():
            found: Any = await self._client.hmget(self._task_key(task_id), ["state", "runner"])
            state, runner = found
            if state is None or state.decode() not in _RUNNING or runner is None:
                return False
            process = runner.decode()
            return process != self._liveness.id and await self._liveness.is_alive(process)

    async def follow_events(self, task_id: str, after_seq: int) -> AsyncGenerator[StreamEvent, None]:
        """Live events through the final one; ends early when the running process dies first."""
        seen = min(after_seq, _MAX_SEQ)
        key = self._events_key(task_id)
        block_ms = max(1, round(self.settings.follow_block_s * 1000))
        while True:
            with self._unavailable():
                answer: Any = await self._reader.xread(
                    {key: f"{seen}-1" if seen >= 0 else "0-0"}, count=512, block=block_ms
                )
            entries = answer[0][1] if answer else []
            for _, fields in entries:
                event = _event(fields)
                seen = event.seq
                yield event
                if event.final:
                    return
            if not entries and not await self.running_elsewhere(task_id):
                for event in await self.read_events(task_id, seen):
                    yield event
                    if event.final:
                        return
                return

    async def request_cancel(self, task_id: str) -> bool:
        with self._unavailable():
            runner: Any = await self._client.hget(self._task_key(task_id), "runner")
            if runner is None:
                return False
            heard = await self._client.publish(self._cancel_channel(runner.decode()), task_id)
        return bool(heard)

    async def _hear_cancels(self, cancel: CancelRequested) -> None:
        """Listen for cancel requests of this process's tasks; a lost connection is opened again."""
        channel = self._cancel_channel(self._liveness.id)
        while True:
            try:
                async with self._reader.pubsub() as pubsub:
                    await pubsub.subscribe(channel)
                    while True:
                        message: Any = await pubsub.get_message(
                            ignore_subscribe_messages=True, timeout=self.settings.follow_block_s
                        )
                        if message is not None and message.get("type") == "message":
                            cancel(message["data"].decode())
            except UNREACHABLE as exc:
                logger.warning("the task store cannot hear cancel requests (%s); trying again", exc)
                await anyio.sleep(self.settings.renew_every_s)

    def _task_key(self, task_id: str) -> str:
        return f"{self.target.prefix}task:{task_id}"

    def _events_key(self, task_id: str) -> str:
        return f"{self.target.prefix}task-events:{task_id}"

    def _push_key(self, task_id: str) -> str:
        return f"{self.target.prefix}task-push:{task_id}"

    def _cancel_channel(self, process_id: str) -> str:
        return f"{self.target.prefix}task-cancel:{process_id}"

    def _unavailable(self) -> AbstractContextManager[None]:
        return unavailable_as("task store", self.target)


def _event(fields: dict[bytes, bytes]) -> StreamEvent:
    return parse_stream_event(orjson.loads(fields[b"e"]))


def _epoch(timestamp: str) -> float:
    """A status time as ``utc_now_iso`` writes it, in seconds since the epoch."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def _seq(entry_id: bytes) -> int:
    return int(entry_id.split(b"-", 1)[0])


__all__ = ["RedisTaskStore"]
