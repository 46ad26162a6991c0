"""In-memory sessions: the default store, for tests and single-process use."""

from __future__ import annotations

from gateway.errors import SessionConflictError
from gateway.swarm.sessions.base import Session, SessionStore


class MemorySessionStore(SessionStore):
    """Keeps deep copies, so a turn's edits reach the store only through ``save``."""

    def __init__(self) -> None:
        super().__init__()
        self._sessions: dict[str, Session] = {}

    async def load(self, session_id: str) -> Session:
        stored = self._sessions.get(session_id)
        return stored.copy() if stored is not None else Session(id=session_id)

    async def save(self, session: Session) -> Session:
        stored = self._sessions.get(session.id)
        actual = stored.version if stored is not None else 0
        if actual != session.version:
            raise SessionConflictError(session.id, session.version, actual)
        session.version += 1
        self._sessions[session.id] = session.copy()
        return session

    async def delete(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
