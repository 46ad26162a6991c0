"""What a peer reports about a task, checked before the call uses it.

A ``metadata.cost_usd`` or a stream line's ``cost_usd`` that is not a finite number >= 0,
or a ``metadata.handoff`` that is not a handoff request, is the peer's error: it fails the
call with ``PeerProtocolError`` (``bad_answer``) rather than being spent or carried out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gateway.errors import PeerProtocolError
from protocol import DataPart, HandoffRequest, Message, Part, Task


@dataclass(frozen=True)
class Reply:
    """A Task's metadata, checked once: its total cost and its transfer request."""

    cost_usd: float
    handoff: HandoffRequest | None


def read_reply(task: Task, agent: str) -> Reply:
    """The reply's ``metadata.cost_usd`` and ``metadata.handoff``, checked; PeerProtocolError when malformed."""
    cost = reported_cost(task.metadata.get("cost_usd"), agent, "answered a task whose metadata.cost_usd")
    handoff: HandoffRequest | None = None
    raw = task.metadata.get("handoff")
    if raw is not None:
        try:
            handoff = HandoffRequest.model_validate(raw)
        except ValidationError as exc:
            raise PeerProtocolError(
                f"{agent} answered a task whose metadata.handoff is not a handoff request "
                f'({{"target": NAME, "reason"?, "payload"?}}): {_first_error(exc)}',
                reason="bad_answer",
            ) from None
    return Reply(cost_usd=cost, handoff=handoff)


def reported_cost(value: object, agent: str, what: str) -> float:
    """A reported cost: missing is 0; anything but a finite number >= 0 is ``agent``'s error (``what`` it sent).

    A float is checked first and the message written only for an error: it is read once per streamed line.
    """
    if type(value) is float and 0.0 <= value < math.inf:
        return value
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise PeerProtocolError(f"{agent} {what} is not a number of dollars >= 0: {value!r}", reason="bad_answer")
    return float(value)


def data_of(parts: list[Part]) -> list[dict[str, Any]]:
    """The data parts' contents, as an event carries them beside the text."""
    return [part.data for part in parts if isinstance(part, DataPart)]


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc", ())) or "value"
    return f"{where}: {error.get('msg', 'invalid')}"


def is_direct_reply(task_id: str, message: Message | None) -> bool:
    """Whether a task's final status message is the agent's direct reply (a Message that started no task).

    A direct reply is read as the completed task it amounts to, named after the message
    (protocol/a2a/mapping.py ``reply_task``); no task of an agent's own has its status
    message named as the task.
    """
    return message is not None and message.message_id == task_id
