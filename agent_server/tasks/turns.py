"""The task a send works on: a new task, the next turn of one that waits for input, or a send repeated; and what its
agent is handed."""

from __future__ import annotations

import os

from agent_server.hosted import TaskContext
from agent_server.http.auth import Principal
from protocol import ErrorCode, Message, ProtocolError, Task, TaskSendParams, TaskState, TaskStatus
from protocol.hop_limits import HopLimits


def new_id() -> str:
    """32 random hex digits, as ``uuid4().hex`` but cheaper (no UUID object, no version bits)."""
    return os.urandom(16).hex()


def next_turn(existing: Task | None, task_id: str, params: TaskSendParams) -> Task:
    """The task snapshot for a new send: a new task, or ``existing`` taking the message it waits for."""
    if existing is None:
        return Task(
            id=task_id,
            session_id=params.session_id or new_id(),
            status=TaskStatus(state=TaskState.WORKING),
            history=[params.message],
            metadata={"cost_usd": 0.0},
        )
    state = existing.status.state
    if state is not TaskState.INPUT_REQUIRED:
        raise ProtocolError(
            ErrorCode.INVALID_REQUEST,
            f"task {task_id!r} is {state.value} and takes no more messages; "
            "send without an id to start a new task (same sessionId to stay in the session)",
            http_status=409,
        )
    if params.session_id is not None and params.session_id != existing.session_id:
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS,
            f"invalid params: sessionId: task {task_id!r} is in session {existing.session_id!r}, "
            f"not {params.session_id!r}; leave sessionId out to continue the task",
            data=[{"field": "sessionId", "problem": "not the session of the task"}],
        )
    task = existing.copied()
    task.status = TaskStatus(state=TaskState.WORKING)
    task.artifacts = []
    task.history = [*(task.history or []), params.message]
    return task


def handed_to_agent(task: Task, params: TaskSendParams, caller: Principal | None) -> TaskContext:
    """What the agent's handler is called with: this turn's message, the history before it, the caller."""
    history = task.history or []
    try:
        limits = HopLimits.of_metadata(params.metadata)
    except ValueError as exc:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, f"invalid params: metadata: {exc}") from None
    return TaskContext(
        task_id=task.id,
        session_id=task.session_id or task.id,
        message=params.message,
        history=list(history[:-1]),
        metadata=dict(params.metadata or {}),
        caller=caller,
        limits=limits,
    )


def repeats(task: Task, message: Message) -> bool:
    """Whether ``message`` is the one the task's latest turn began with: a send retried, not a new turn.

    The same ``messageId`` with the same parts says so whatever the task's state (the same
    id on other parts is a client that reuses ids, as the A2A TCK's scenarios do: a new turn).
    Without one, an identical message says so only while the task is not waiting for input:
    a reply that repeats the last one word for word may be meant (``yes`` twice), a send into
    a working or finished task never is.
    """
    asked = next((sent for sent in reversed(task.history or []) if sent.role == "user"), None)
    if asked is None:
        return False
    if message.message_id is not None:
        return asked.message_id == message.message_id and asked.parts == message.parts
    return task.status.state is not TaskState.INPUT_REQUIRED and asked == message
