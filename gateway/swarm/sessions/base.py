"""Sessions: what a conversation keeps between turns, behind a small store interface.

A session holds the full history (OpenAI-shaped messages; assistant messages carry the
``sender`` agent name), the name of the agent that holds the conversation, the context
variables, the last handoff (so history policies know where it happened), the task
ids of remote agents waiting for input (``input-required``: the next turn continues that
task), its owner (the caller that started it; None where nobody is authenticated), the run
of a turn that started and has not ended (``open_run``: a turn is saved as it starts, so a
crash leaves the user's message and this mark) and a version. Stores save with
compare-and-set on that version: a turn that lost a race gets SessionConflictError instead
of overwriting the winner.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
import orjson

from gateway.models.base import ChatMessage
from gateway.swarm.member import SwarmMember


@dataclass
class HandoffRecord:
    """The transfer that gave the current agent the conversation; ``at`` indexes the history."""

    source: str
    target: str
    reason: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    at: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HandoffRecord:
        return cls(**data)


@dataclass
class Session:
    id: str
    history: list[ChatMessage] = field(default_factory=list)
    active_agent: str | None = None
    active_agent_uri: str | None = None
    context_variables: dict[str, Any] = field(default_factory=dict)
    handoff: HandoffRecord | None = None
    remote_tasks: dict[str, str] = field(default_factory=dict)
    owner: str | None = None
    open_run: str | None = None
    version: int = 0

    def to_state(self) -> dict[str, Any]:
        """Everything but id and version, as plain data (what stores persist)."""
        state = asdict(self)
        del state["id"], state["version"]
        return state

    @classmethod
    def from_state(cls, session_id: str, version: int, state: dict[str, Any]) -> Session:
        handoff = state.get("handoff")
        return cls(
            id=session_id,
            history=list(state.get("history") or []),
            active_agent=state.get("active_agent"),
            active_agent_uri=state.get("active_agent_uri"),
            context_variables=dict(state.get("context_variables") or {}),
            handoff=HandoffRecord.from_dict(handoff) if handoff else None,
            remote_tasks=dict(state.get("remote_tasks") or {}),
            owner=state.get("owner"),
            open_run=state.get("open_run"),
            version=version,
        )

    def copy(self) -> Session:
        return copy.deepcopy(self)

    def set_active_agent(
        self,
        agent: SwarmMember,
        context_updates: dict[str, Any] | None = None,
        *,
        reason: str | None = None,
        payload: dict[str, Any] | None = None,
        source: str | None = None,
    ) -> HandoffRecord:
        """Hand the conversation to ``agent`` (chatflow's name for a transfer): the runner's transfers come here.

        The context variables take ``context_updates``; the record of the transfer (from the
        agent that held the conversation) tells history policies where ``agent``'s part
        begins; ``source`` names that agent when it is not the stored active one (a new
        session's starting agent). Outside a turn, save the session afterwards; the next turn
        goes to ``agent`` if the runner knows it by name. No URI is kept: only the runner knows
        whether an agent was found by its URI (and records it when the turn ends).
        """
        origin = source if source is not None else self.active_agent or ""
        record = HandoffRecord(origin, agent.name, reason, dict(payload or {}), at=len(self.history))
        self.active_agent = agent.name
        self.active_agent_uri = None
        self.context_variables.update(context_updates or {})
        self.handoff = record
        return record

    def state_json(self, what: str) -> bytes:
        """``to_state`` as JSON; a context variable JSON cannot hold fails here, before anything is written."""
        try:
            return orjson.dumps(self.to_state(), option=orjson.OPT_NON_STR_KEYS)
        except TypeError as exc:
            raise TypeError(f"session {self.id!r} holds a value {what} cannot store as JSON: {exc}") from exc


class SessionStore(abc.ABC):
    """Load and compare-and-set sessions; ``lock`` serializes turns within one process (across processes on Redis)."""

    def __init__(self) -> None:
        self._locks: dict[str, _LockEntry] = {}

    @abc.abstractmethod
    async def load(self, session_id: str) -> Session:
        """The stored session, or a new empty one at version 0."""

    @abc.abstractmethod
    async def save(self, session: Session) -> Session:
        """Write if the stored version still equals ``session.version``; bumps the version.

        Raises SessionConflictError otherwise, leaving the stored session untouched.
        """

    @abc.abstractmethod
    async def delete(self, session_id: str) -> None: ...

    async def close(self) -> None:
        """Release resources; the default has none."""

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Held while turns use the store: a store shared by processes renews the leases of its locks meanwhile.

        A store of one process has nothing to do.
        """
        yield

    @asynccontextmanager
    async def lock(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session for one turn, so turns on one session in this process queue up.

        Entries are dropped when unused, so no lock outlives the event loop that made it.
        """
        entry = self._locks.setdefault(session_id, _LockEntry())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                self._locks.pop(session_id, None)


class _LockEntry:
    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0
