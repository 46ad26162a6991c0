"""Sessions in Redis, shared by every gateway replica: compare-and-set, and a lock that holds across processes.

A session is a hash ``PREFIX:session:ID`` (version and JSON state). Its lock is
``PREFIX:session-lock:ID``, holding a fencing token: a number taken from the session's
own counter ``PREFIX:session-fence:ID``, so no two holders, ever, share one. The lock
expires ``lease_s`` after its last renewal; while the store is ``running`` the process
renews the locks it holds every third of that, so a live turn keeps its session however
long it runs, and a process that dies (or freezes) lets it go after at most ``lease_s``.

Every save and delete runs in one Lua script that checks the lock before the version: a
process holding the lock must still be its holder (its token is the lock's value), and a
process not holding it may write only while nobody holds it. So the late write of a
process whose lease ran out is refused (``SessionLockLost``), even when nobody changed the
session since, and whatever the next holder does is never overwritten.

Turns waiting for a session queue in their process (the base class's lock), and the
first of each process asks Redis every few milliseconds, for at most ``lock_wait_s``
(``SessionBusy``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any

import anyio
import orjson

from agent_server.stores.redis_client import connect, unavailable_as
from agent_server.stores.redis_leases import renew_forever
from agent_server.stores.redis_settings import RedisSettings, RedisTarget, parse_redis_spec
from gateway.errors import SessionBusy, SessionConflictError, SessionLockLost
from gateway.recording.events import now_ms
from gateway.swarm.sessions.base import Session, SessionStore

logger = logging.getLogger("gateway.swarm")

_FIRST_PAUSE_S = 0.002
_MAX_PAUSE_S = 0.05
_LOST = -2

# KEYS: lock, fence; ARGV: lease ms. Returns the token, or 0 while another holds the lock.
_TAKE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
return token
"""
# KEYS: lock; ARGV: token, lease ms
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_FENCE = """
local holder = redis.call('GET', KEYS[2])
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if ARGV[1] ~= '' then
  if holder ~= ARGV[1] then return {-2, version} end
elseif holder then
  return {-3, version}
end
"""
# KEYS: session, lock; ARGV: token ('' when not held), expected version, state, now
_SAVE = (
    _FENCE
    + """
if version ~= tonumber(ARGV[2]) then return {-1, version} end
redis.call('HSET', KEYS[1], 'version', version + 1, 'state', ARGV[3], 'updated_ms', ARGV[4])
return {version + 1, version + 1}
"""
)
# KEYS: session, lock; ARGV: token ('' when not held)
_DELETE = (
    _FENCE
    + """
redis.call('DEL', KEYS[1])
return {0, version}
"""
)


class RedisSessionStore(SessionStore):
    """Sessions in Redis at ``spec`` (``redis://HOST:PORT/DB[?prefix=NAME]``); see the module docstring."""

    def __init__(self, spec: str, *, settings: RedisSettings | None = None) -> None:
        super().__init__()
        self.target: RedisTarget = parse_redis_spec(spec, "session store")
        self.settings = settings or RedisSettings()
        self._client = connect(self.target, self.settings)
        self._take = self._client.register_script(_TAKE)
        self._renew = self._client.register_script(_RENEW)
        self._release = self._client.register_script(_RELEASE)
        self._save = self._client.register_script(_SAVE)
        self._delete = self._client.register_script(_DELETE)
        self._held: dict[str, str] = {}
        """Session id -> the token of the lock this process holds on it."""
        self._running = 0

    async def load(self, session_id: str) -> Session:
        with self._unavailable():
            found: Any = await self._client.hmget(self._key(session_id), ["version", "state"])
        version, state = found
        if version is None:
            return Session(id=session_id)
        return Session.from_state(session_id, int(version), orjson.loads(state))

    async def save(self, session: Session) -> Session:
        state = session.state_json("Redis sessions")
        token = self._held.get(session.id, "")
        with self._unavailable():
            answer: Any = await self._save(
                keys=[self._key(session.id), self._lock_key(session.id)],
                args=[token, session.version, state, now_ms()],
            )
        code, version = int(answer[0]), int(answer[1])
        if code < 0:
            raise self._refusal(session.id, session.version, code, version)
        session.version = version
        return session

    async def delete(self, session_id: str) -> None:
        with self._unavailable():
            answer: Any = await self._delete(
                keys=[self._key(session_id), self._lock_key(session_id)], args=[self._held.get(session_id, "")]
            )
        if int(answer[0]) < 0:
            raise self._refusal(session_id, int(answer[1]), int(answer[0]), int(answer[1]))

    async def close(self) -> None:
        await self._client.aclose()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(renew_forever, self._renew_held, self.settings.renew_every_s, "the session store")
            self._running += 1
            try:
                yield
            finally:
                self._running -= 1
                task_group.cancel_scope.cancel()

    @asynccontextmanager
    async def lock(self, session_id: str) -> AsyncIterator[None]:
        """The turn's hold on the session, in this process and across processes; see the module docstring."""
        if not self._running:
            raise RuntimeError(
                "a RedisSessionStore's locks are renewed only while it runs: use `async with store.running():` "
                "(a GatewayService does it)"
            )
        async with super().lock(session_id):
            token = await self._acquire(session_id)
            self._held[session_id] = token
            try:
                yield
            finally:
                del self._held[session_id]
                with anyio.CancelScope(shield=True), anyio.move_on_after(self.settings.command_timeout_s):
                    try:
                        await self._release(keys=[self._lock_key(session_id)], args=[token])
                    except Exception as exc:  # the lease frees it anyway
                        logger.warning("could not release the lock of session %s: %s", session_id, exc)

    async def _acquire(self, session_id: str) -> str:
        deadline = anyio.current_time() + self.settings.lock_wait_s
        pause = _FIRST_PAUSE_S
        keys = [self._lock_key(session_id), self._key(session_id, "session-fence")]
        while True:
            with self._unavailable():
                token = int(await self._take(keys=keys, args=[self.settings.lease_ms]))
            if token:
                return str(token)
            if anyio.current_time() > deadline:
                raise SessionBusy(session_id, self.settings.lock_wait_s)
            await anyio.sleep(pause)
            pause = min(pause * 2, _MAX_PAUSE_S)

    async def _renew_held(self) -> None:
        held = list(self._held.items())
        if not held:
            return
        with self._unavailable():
            async with self._client.pipeline(transaction=False) as pipe:
                for session_id, token in held:
                    await self._renew(
                        keys=[self._lock_key(session_id)], args=[token, self.settings.lease_ms], client=pipe
                    )
                renewed: list[Any] = await pipe.execute()
        for (session_id, _), ok in zip(held, renewed, strict=True):
            if not ok and self._held.get(session_id) is not None:
                logger.warning("session %s: this process's lock on it expired; its turn will not be saved", session_id)

    def _refusal(self, session_id: str, expected: int, code: int, actual: int) -> SessionConflictError:
        """-2: this process's lock expired; -3: another process holds the lock; -1: another turn saved first."""
        if code == _LOST:
            return SessionLockLost(session_id, expected, actual)
        return SessionConflictError(session_id, expected, actual)

    def _key(self, session_id: str, kind: str = "session") -> str:
        return f"{self.target.prefix}{kind}:{session_id}"

    def _lock_key(self, session_id: str) -> str:
        return self._key(session_id, "session-lock")

    def _unavailable(self) -> AbstractContextManager[None]:
        return unavailable_as("session store", self.target)


__all__ = ["RedisSessionStore"]
