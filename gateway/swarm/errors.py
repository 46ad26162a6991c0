"""Errors of the swarm runner, so callers can tell a wiring mistake from a lost race."""

from __future__ import annotations


class SwarmError(Exception):
    """Base class of the swarm's own errors."""


class AgentHandoffError(SwarmError):
    """A transfer named an agent the runner cannot resolve (not registered, bad URI)."""

    def __init__(self, message: str, *, target: str | None = None) -> None:
        super().__init__(message)
        self.target = target


class SessionNotFound(SwarmError):
    """The session belongs to another caller: to this one it does not exist."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionConflictError(SwarmError):
    """Another turn saved the session first; this turn's changes were not written.

    Raised instead of overwriting, so no update is ever lost silently. The caller decides
    whether to resend the user message (the turn may have had side effects already).
    """

    def __init__(self, session_id: str, expected_version: int, actual_version: int) -> None:
        super().__init__(
            f"session {session_id!r} changed while this turn ran "
            f"(expected version {expected_version}, found {actual_version}); nothing was saved"
        )
        self.session_id = session_id
        self.expected_version = expected_version
        self.actual_version = actual_version
