"""The event log on Redis Streams, shared by every gateway replica: one stream entry per event, as it happens.

Keys, under the spec's prefix: ``events:RUN`` is the run's stream, one entry per event
with entry id ``SEQ-1`` (so a reader starts at any seq), and a last entry ``c`` once the
run is closed, which ends every reader following it, on any replica; ``run:RUN`` holds
the next seq, the owner, whether it is closed, and ``writer``: the process that runs it.
``runs`` (and ``runs-by:OWNER``) index runs in the order they were opened, and
``runs-open`` lists the runs not closed yet.

A seq is taken and the entry written in one Lua script, so appends from any number of
processes never share a seq, and an append to a closed run is refused (``RunClosedError``):
a replica that was taken for dead cannot add to a run another one has closed. An event
is in Redis when ``append`` returns; whether it survives a crash of Redis itself is
Redis's persistence setting (docs/scale-out.md).

While a gateway uses the log (``running``), it keeps its mark of life renewed and, once
it has been connected for a lease, looks at every open run whose writer's mark has
expired: it claims the run (the run's ``writer`` becomes this process, in one script that
checks the run is open and its writer still dead, so exactly one replica claims it) and
hands it to the service's takeover (``adopt``), which carries it on; without one, or when
it declines, the run gets ``run_failed`` with the ``INTERRUPTED`` error and is closed,
exactly once whoever sweeps (the script checks again). So a run whose replica died is
taken over by another one about ``lease_s`` after the death, while the others keep
running, not only at a restart. Only a run's writer appends to it or closes it: a replica
that froze past its lease and wakes up finds its appends refused (``RunClosedError``).
A run of this process whose append or close failed because Redis was away is closed
the same way (error ``STORE_LOST``) as soon as Redis answers again.

``cancels`` holds the cancels asked of runs on a replica that does not write them
(run -> ``CancelRequest``, cancels.py): stored only while the run is open, in one script.
Every ``CANCEL_POLL_S`` each replica hands the requests of the runs it writes to the
service (``take_cancel``) and removes them once done, and removes those of closed runs. A
request for a run whose writer died waits for the replica that claims it: the run's
``writer`` becomes that one, which then finds the request as its own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import AbstractContextManager, aclosing, asynccontextmanager, contextmanager
from typing import Any

import anyio
import orjson

from agent_server.stores.base import StoreUnavailable
from agent_server.stores.redis_client import connect, unavailable_as
from agent_server.stores.redis_leases import Liveness
from agent_server.stores.redis_settings import RedisSettings, RedisTarget, parse_redis_spec
from gateway.errors import RunClosedError
from gateway.event_log.base import INTERRUPTED, Adopt, EventLog
from gateway.event_log.cancels import CANCEL_POLL_S, CancelAsk, CancelRequest, TakeCancel
from gateway.event_log.retention import Retention
from gateway.recording.events import Event, EventType, now_ms

logger = logging.getLogger("gateway.events")

_MAX_SEQ = 2**63 - 2
_SWEPT = {True: "taken over by this replica", False: "closed it as run_failed"}
STORE_LOST = "failed: Redis could not be reached while the run went on, so its events stop here"
"""The ``error`` of the ``run_failed`` event that ends a run whose writes failed while Redis was away."""
_CREATE = """
local function create(run, runs, open, order, run_id, now, writer)
  local n = redis.call('INCR', order)
  redis.call('HSET', run, 'created_ms', now, 'writer', writer, 'next', 0)
  redis.call('ZADD', runs, n, run_id)
  redis.call('SADD', open, run_id)
  return n
end
"""
# KEYS: run, runs, open, order, runs-by-owner; ARGV: run_id, now, owner, writer
_OPEN = (
    _CREATE
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local n = create(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[4])
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'owner', ARGV[3])
  redis.call('ZADD', KEYS[5], n, ARGV[1])
end
return 1
"""
)
# KEYS: run, runs, open, order, events; ARGV: run_id, now, writer, body
_APPEND = (
    _CREATE
    + """
if redis.call('HGET', KEYS[1], 'closed') == '1' then return -1 end
if redis.call('EXISTS', KEYS[1]) == 0 then create(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3]) end
if redis.call('HGET', KEYS[1], 'writer') ~= ARGV[3] then return -1 end
local seq = redis.call('HINCRBY', KEYS[1], 'next', 1) - 1
redis.call('XADD', KEYS[5], seq .. '-1', 'e', ARGV[4])
return seq
"""
)
# KEYS: run, runs, open, order, events; ARGV: run_id, now, writer
_CLOSE = (
    _CREATE
    + """
if redis.call('HGET', KEYS[1], 'closed') == '1' then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then create(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3]) end
if redis.call('HGET', KEYS[1], 'writer') ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], 'closed', '1', 'closed_ms', ARGV[2])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('XADD', KEYS[5], '*', 'c', '1')
return 1
"""
)
# KEYS: run, events, runs, runs-by-owner; ARGV: run_id. Only a closed run: checked again where nothing interleaves.
_PRUNE = """
if redis.call('HGET', KEYS[1], 'closed') ~= '1' then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1
"""
# KEYS: run, open, events, the writer's mark of life; ARGV: run_id, body of the run_failed event
_CLOSE_ABANDONED = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'closed') == '1' then
  redis.call('SREM', KEYS[2], ARGV[1])
  return 0
end
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
local seq = redis.call('HINCRBY', KEYS[1], 'next', 1) - 1
redis.call('XADD', KEYS[3], seq .. '-1', 'e', ARGV[2])
redis.call('HSET', KEYS[1], 'closed', '1')
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], '*', 'c', '1')
return 1
"""


# KEYS: run, the dead writer's mark of life; ARGV: this writer, the dead writer ('' for none)
_CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'closed') == '1' then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if (redis.call('HGET', KEYS[1], 'writer') or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'writer', ARGV[1])
return 1
"""
# KEYS: run, cancels; ARGV: run_id, the request. Only for a run that is open: 1 stored, 0 closed.
_REQUEST_CANCEL = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'closed') == '1' then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
"""


class RedisEventLog(EventLog):
    """Every run's events in Redis at ``spec`` (``redis://HOST:PORT/DB[?prefix=NAME]``); see the module docstring."""

    def __init__(self, spec: str, *, settings: RedisSettings | None = None, retention: Retention | None = None) -> None:
        super().__init__(retention)
        self.target: RedisTarget = parse_redis_spec(spec, "event log")
        self.settings = settings or RedisSettings()
        self._client = connect(self.target, self.settings)
        self._reader = connect(self.target, self.settings, blocking_reads=True)
        self._liveness = Liveness(self._client, self.target.prefix, self.settings)
        self._open = self._client.register_script(_OPEN)
        self._append = self._client.register_script(_APPEND)
        self._close = self._client.register_script(_CLOSE)
        self._close_abandoned = self._client.register_script(_CLOSE_ABANDONED)
        self._prune = self._client.register_script(_PRUNE)
        self._claim = self._client.register_script(_CLAIM)
        self._request_cancel = self._client.register_script(_REQUEST_CANCEL)
        self._broken: set[str] = set()
        """Runs of this process whose append or close failed on a lost connection: closed once Redis is back."""

    @property
    def process_id(self) -> str:
        """The writer this log records on the runs it opens (a new id per log object)."""
        return self._liveness.id

    async def append(self, event: Event) -> Event:
        run_id = event.run_id
        with self._broken_on_failure(run_id), self._unavailable():
            seq = int(
                await self._append(
                    keys=[*self._index_keys(run_id), self._events_key(run_id)],
                    args=[run_id, now_ms(), self._liveness.id, event.to_json()],
                )
            )
        if seq < 0:
            raise RunClosedError(run_id)
        return event.with_seq(seq)

    async def read(self, run_id: str, after_seq: int = -1, limit: int | None = None) -> list[Event]:
        if after_seq > _MAX_SEQ:
            return []
        start = "-" if after_seq < 0 else f"({after_seq}-1"
        with self._unavailable():
            entries: Any = await self._client.xrange(self._events_key(run_id), start, "+", count=limit)
        return [event for entry_id, fields in entries if (event := _event(entry_id, fields)) is not None]

    async def close_run(self, run_id: str) -> None:
        with self._broken_on_failure(run_id), self._unavailable():
            await self._close(
                keys=[*self._index_keys(run_id), self._events_key(run_id)], args=[run_id, now_ms(), self._liveness.id]
            )

    async def is_closed(self, run_id: str) -> bool:
        with self._unavailable():
            closed: Any = await self._client.hget(self._run_key(run_id), "closed")
        return bool(closed == b"1")

    async def close_abandoned_runs(self) -> list[str]:
        """Close the open runs whose writer's mark of life has expired (it died); safe beside live replicas."""
        return await self._sweep(None)

    async def request_cancel(self, run_id: str, request: CancelRequest) -> CancelAsk:
        """Stored for the run's writer while the run is open (in one script); ENDED once it is closed."""
        with self._unavailable():
            stored = await self._request_cancel(
                keys=[self._run_key(run_id), self._key("cancels")], args=[run_id, request.to_json()]
            )
        return CancelAsk.STORED if stored else CancelAsk.ENDED

    async def take_cancels(self, take_cancel: TakeCancel) -> list[str]:
        """The requests for runs this process writes handed to ``take_cancel``, removed once it took them; those
        of closed runs removed. Returns the runs whose request was handed on and taken."""
        cancels = self._key("cancels")
        with self._unavailable():
            pending: Any = await self._client.hgetall(cancels)
            if not pending:
                return []
            asked = sorted(pending.items())
            async with self._client.pipeline(transaction=False) as pipe:
                for run_id, _ in asked:
                    pipe.hmget(self._run_key(run_id.decode()), "writer", "closed")
                states: list[Any] = await pipe.execute()
        taken: list[str] = []
        for (run_id, body), (writer, closed) in zip(asked, states, strict=True):
            ended = closed == b"1" or writer is None  # closed (or pruned): nothing left to cancel
            if not ended and writer.decode() != self._liveness.id:  # another replica's run, or a dead one's
                continue
            if not ended:
                if not await take_cancel(run_id.decode(), CancelRequest.from_json(body)):
                    continue
                taken.append(run_id.decode())
            with self._unavailable():
                await self._client.hdel(cancels, run_id)
        return taken

    async def abandoned_runs(self) -> list[str]:
        """The open runs whose writer's mark of life has expired: safe beside live replicas, at any time."""
        return sorted(await self._dead_writers())

    async def claim_run(self, run_id: str) -> bool:
        """Become the run's writer, in one script: only while it is open and its writer is still dead."""
        writer = (await self._dead_writers([run_id])).get(run_id)
        return writer is not None and await self._claimed(run_id, writer)

    async def _claimed(self, run_id: str, writer: str) -> bool:
        with self._unavailable():
            answer = await self._claim(
                keys=[self._run_key(run_id), self._liveness.key(writer or "none")], args=[self._liveness.id, writer]
            )
        return bool(answer)

    async def _dead_writers(self, run_ids: list[str] | None = None) -> dict[str, str]:
        """The open runs (of ``run_ids``, or all) whose writer has no mark of life: run -> writer ('' for none)."""
        with self._unavailable():
            if run_ids is None:
                members: Any = await self._client.smembers(self._key("runs-open"))
                run_ids = sorted(member.decode() for member in members)
            if not run_ids:
                return {}
            async with self._client.pipeline(transaction=False) as pipe:
                for run_id in run_ids:
                    pipe.hget(self._run_key(run_id), "writer")
                writers: list[Any] = await pipe.execute()
            pairs = zip(run_ids, writers, strict=True)
            named = {run_id: writer.decode() if writer is not None else "" for run_id, writer in pairs}
            alive = {writer: await self._liveness.is_alive(writer) for writer in set(named.values()) if writer}
        return {run_id: writer for run_id, writer in named.items() if not alive.get(writer, False)}

    async def _sweep(self, adopt: Adopt | None) -> list[str]:
        """Each run of a dead writer: claimed and handed to ``adopt``, else closed ``run_failed`` (exactly once)."""
        handled: list[str] = []
        for run_id, writer in (await self._dead_writers()).items():
            if writer == self._liveness.id:  # its own: its mark lapsed while it was busy, and it still runs them
                continue
            if adopt is not None:
                if not await self._claimed(run_id, writer):  # another replica took it (or closed it) first
                    continue
                if not await adopt(run_id):
                    with self._unavailable():
                        await self._close_failed(run_id, self._key("alive:-"), INTERRUPTED, "Interrupted")
                handled.append(run_id)
                continue
            mark = self._liveness.key(writer or "none")
            with self._unavailable():
                if await self._close_failed(run_id, mark, INTERRUPTED, "Interrupted"):
                    handled.append(run_id)
        return handled

    async def _close_failed(self, run_id: str, mark: str, error: str, error_type: str) -> bool:
        """``run_failed`` and the close in one script, unless the run is closed or ``mark`` (a life) exists."""
        failed = Event.create(EventType.RUN_FAILED, run_id, error=error, error_type=error_type)
        keys = [self._run_key(run_id), self._key("runs-open"), self._events_key(run_id), mark]
        return bool(await self._close_abandoned(keys=keys, args=[run_id, failed.to_json()]))

    async def _close_broken(self) -> None:
        """The runs whose writes failed while Redis was away end ``run_failed``, so their readers end too."""
        for run_id in sorted(self._broken):
            with self._unavailable():
                await self._close_failed(run_id, self._key("alive:-"), STORE_LOST, "StoreUnavailable")
            self._broken.discard(run_id)
            logger.warning("run %s could not be written while Redis was away; closed it as run_failed", run_id)

    @contextmanager
    def _broken_on_failure(self, run_id: str) -> Iterator[None]:
        try:
            yield
        except StoreUnavailable:
            self._broken.add(run_id)
            raise

    async def open_run(self, run_id: str, *, owner: str | None = None) -> None:
        keys = [*self._index_keys(run_id), self._key(f"runs-by:{owner or ''}")]
        with self._unavailable():
            await self._open(keys=keys, args=[run_id, now_ms(), owner or "", self._liveness.id])

    async def has_run(self, run_id: str) -> bool:
        """Known from ``open_run`` on, on every replica: a reader may follow a run before its first event."""
        with self._unavailable():
            return bool(await self._client.exists(self._run_key(run_id)))

    async def run_owner(self, run_id: str) -> str | None:
        with self._unavailable():
            owner: Any = await self._client.hget(self._run_key(run_id), "owner")
        return owner.decode() if owner is not None else None

    async def list_runs(self, limit: int = 100, *, owner: str | None = None) -> list[str]:
        index = self._key("runs") if owner is None else self._key(f"runs-by:{owner}")
        with self._unavailable():
            runs: Any = await self._client.zrevrange(index, 0, max(limit, 1) - 1)
        return [run_id.decode() for run_id in runs]

    async def aclose(self) -> None:
        await super().aclose()
        await self._client.aclose()
        await self._reader.aclose()

    async def prune(self) -> list[str]:
        with self._unavailable():
            pruned = []
            for run_id, owner in await self._prunable(self.retention.closed_before_ms(now_ms())):
                keys = [self._run_key(run_id), self._events_key(run_id), self._key("runs")]
                keys.append(self._key(f"runs-by:{owner}"))
                if await self._prune(keys=keys, args=[run_id]):
                    pruned.append(run_id)
        return pruned

    async def _prunable(self, closed_before: int | None) -> list[tuple[str, str]]:
        """Up to a batch of closed runs past the bounds, oldest first, with their owners ("" for none).

        The index is read from its oldest run a page at a time, until a run is within both bounds
        by its place and its creation: every run after it is newer, so closed later too.
        """
        retention = self.retention
        beyond = 0 if retention.max_runs is None else await self._client.zcard(self._key("runs")) - retention.max_runs
        found: list[tuple[str, str]] = []
        start = 0
        while True:
            page: Any = await self._client.zrange(self._key("runs"), start, start + retention.batch - 1)
            if not page:
                return found
            async with self._client.pipeline(transaction=False) as pipe:
                for run_id in page:
                    pipe.hmget(self._run_key(run_id.decode()), "closed", "closed_ms", "created_ms", "owner")
                states: Any = await pipe.execute()
            for place, (run_id, (closed, closed_ms, created_ms, owner)) in enumerate(zip(page, states, strict=True)):
                counted_out = start + place < beyond
                if not counted_out and (closed_before is None or int(created_ms or 0) >= closed_before):
                    return found
                aged_out = closed_before is not None and int(closed_ms or created_ms or 0) < closed_before
                if closed == b"1" and (counted_out or aged_out):
                    found.append((run_id.decode(), (owner or b"").decode()))
                    if len(found) == retention.batch:
                        return found
            start += len(page)

    @asynccontextmanager
    async def running(self, adopt: Adopt | None = None, take_cancel: TakeCancel | None = None) -> AsyncIterator[None]:
        async with super().running(adopt, take_cancel), self._watching(adopt, take_cancel):
            yield

    @asynccontextmanager
    async def _watching(self, adopt: Adopt | None, take_cancel: TakeCancel | None) -> AsyncIterator[None]:
        """Its mark of life kept, dead replicas' runs handed to ``adopt`` or closed, and the cancels asked of its
        runs handed to ``take_cancel`` (see the module docstring)."""
        with self._unavailable():
            await self._liveness.renew()
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(self._keep_watch, adopt)
            if take_cancel is not None:
                task_group.start_soon(self._watch_cancels, take_cancel)
            try:
                yield
            finally:
                task_group.cancel_scope.cancel()
                await self._liveness.forget()

    async def follow(self, run_id: str, after_seq: int = -1) -> AsyncGenerator[Event, None]:
        """Stored events after ``after_seq``, then live ones from any replica; ends at the run's close entry.

        A lost connection is opened again from the last seq read (no gap, no duplicate) for
        up to ``reconnect_s``; then StoreUnavailable.
        """
        async with aclosing(self._follow_reads(run_id, after_seq)) as reads:
            async for events in reads:
                for event in events:
                    yield event

    async def _live_ndjson(self, run_id: str, after_seq: int) -> AsyncGenerator[bytes, None]:
        """Through the stream, which wakes readers on every replica: the lines of each read in one piece."""
        async with aclosing(self._follow_reads(run_id, after_seq)) as reads:
            async for events in reads:
                yield b"".join(event.to_json() + b"\n" for event in events)

    async def _follow_reads(self, run_id: str, after_seq: int) -> AsyncGenerator[list[Event], None]:
        """``follow``, the events of each read of the stream together (none empty)."""
        seen = min(after_seq, _MAX_SEQ)
        key = self._events_key(run_id)
        block_ms: int | None = None  # the first read does not wait: a closed run past its end returns at once
        failing_since: float | None = None
        while not self._closing:
            try:
                with self._unavailable():
                    answer: Any = await self._reader.xread(
                        {key: f"{seen}-1" if seen >= 0 else "0-0"}, count=512, block=block_ms
                    )
                    entries = answer[0][1] if answer else []
                    if not entries and await self.is_closed(run_id):
                        # Closed after that read found nothing: what was written up to the close is still unread.
                        answer = await self._reader.xread({key: f"{seen}-1" if seen >= 0 else "0-0"}, count=512)
                        entries = answer[0][1] if answer else []
                        if not entries:
                            return
            except StoreUnavailable:
                if self._closing:
                    return
                now = anyio.current_time()
                failing_since = failing_since or now
                if now - failing_since > self.settings.reconnect_s:
                    raise
                await anyio.sleep(self.settings.renew_every_s)
                continue
            failing_since = None
            block_ms = max(1, round(self.settings.follow_block_s * 1000))
            events: list[Event] = []
            for entry_id, fields in entries:
                event = _event(entry_id, fields)
                if event is None:  # the close entry: what came before it, then the end
                    if events:
                        yield events
                    return
                seen = event.seq
                events.append(event)
            if events:
                yield events

    async def _keep_watch(self, adopt: Adopt | None) -> None:
        """Renew this process's mark; once connected for a whole lease, take over (``adopt``) or close the runs of
        dead writers.

        Waiting a lease after (re)connecting gives every live replica time to renew its own
        mark, which a long Redis outage may have let expire.
        """
        connected_since: float | None = None
        while True:
            try:
                with self._unavailable():
                    await self._liveness.renew()
                await self._close_broken()
                connected_since = connected_since or anyio.current_time()
                if anyio.current_time() - connected_since >= self.settings.lease_s:
                    for run_id in await self._sweep(adopt):
                        logger.warning("run %s lost the replica that ran it; %s", run_id, _SWEPT[adopt is not None])
            except StoreUnavailable as exc:
                if connected_since is not None:
                    logger.warning("%s; trying again", exc)
                connected_since = None
            except Exception:
                logger.exception("the event log's watch over runs failed; trying again")
            await anyio.sleep(self.settings.renew_every_s)

    async def _watch_cancels(self, take_cancel: TakeCancel) -> None:
        """``take_cancels`` every ``CANCEL_POLL_S``; a failure is said and tried again, never raised."""
        while True:
            try:
                await self.take_cancels(take_cancel)
            except StoreUnavailable as exc:
                logger.debug("cancels asked of this replica's runs could not be read: %s", exc)
            except Exception:
                logger.exception("taking the cancels asked of this replica's runs failed; trying again")
            await anyio.sleep(CANCEL_POLL_S)

    def _key(self, name: str) -> str:
        return f"{self.target.prefix}{name}"

    def _run_key(self, run_id: str) -> str:
        return self._key(f"run:{run_id}")

    def _events_key(self, run_id: str) -> str:
        return self._key(f"events:{run_id}")

    def _index_keys(self, run_id: str) -> list[str]:
        return [self._run_key(run_id), self._key("runs"), self._key("runs-open"), self._key("runs-order")]

    def _unavailable(self) -> AbstractContextManager[None]:
        return unavailable_as("event log", self.target)


def _event(entry_id: bytes, fields: dict[bytes, bytes]) -> Event | None:
    """The event of a stream entry (its seq is the entry id's first part); None for the close entry."""
    body = fields.get(b"e")
    if body is None:
        return None
    return Event.from_dict({**orjson.loads(body), "seq": int(entry_id.split(b"-", 1)[0])})


__all__ = ["RedisEventLog"]
