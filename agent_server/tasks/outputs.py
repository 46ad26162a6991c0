"""Turning what an agent yields or returns into artifacts, messages and the end of a send."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_server.hosted import DataChunk, Failed, Handoff, InputRequired, TextChunk
from protocol import (
    MAX_JSON_DEPTH,
    Artifact,
    DataPart,
    HandoffRequest,
    Message,
    Part,
    TaskState,
    TextPart,
    join_text_parts,
    json_depth,
)


@dataclass(frozen=True)
class Outcome:
    """How a send ended: its state, status message and any handoff."""

    state: TaskState
    message: Message | None = None
    handoff: HandoffRequest | None = None


@dataclass(slots=True)
class Step:
    """One item the agent produced, sorted into what it means (made for every chunk: not frozen, which costs)."""

    artifact: Artifact | None = None
    cost_usd: float = 0.0
    message: Message | None = None
    handoff: HandoffRequest | None = None
    end: Outcome | None = None
    """The agent ended the send itself (it asks for input, or it failed and says why)."""


_EMPTY = Step()


def interpret(item: Any) -> Step:
    """What one yielded or returned value means; raises TypeError or ValueError for anything else.

    Data nested too deeply for the task holding it to be serialized or stored is refused
    here, its depth computed once on what the agent gave (plain text needs no look).
    """
    if isinstance(item, str):
        return Step(artifact=_chunk([TextPart(text=item)]))
    if isinstance(item, TextChunk):
        return Step(artifact=_chunk([TextPart(text=item.text)]), cost_usd=item.cost_usd)
    if isinstance(item, dict):
        item = DataChunk(item)
    if isinstance(item, DataChunk):
        _check_depth("Artifact", _DATA_IN_ARTIFACT + json_depth(item.data))
        return Step(artifact=_chunk([DataPart(data=item.data)]), cost_usd=item.cost_usd)
    if isinstance(item, Handoff):
        _check_depth("HandoffRequest", _PAYLOAD_IN_HANDOFF + json_depth(item.payload))
        return Step(handoff=HandoffRequest(target=item.target, reason=item.reason, payload=item.payload))
    step = _sorted(item)
    for produced in (step.artifact, step.message):
        if produced is not None:
            _check_depth(type(produced).__name__, json_depth(produced.to_wire()))
    return step


# How deep a chunk's data or a handoff's payload sits in what is stored: artifact -> parts -> part -> data.
_DATA_IN_ARTIFACT = 3
_PAYLOAD_IN_HANDOFF = 1


def _check_depth(what: str, depth: int) -> None:
    """Refuse data so deeply nested that the task holding it could no longer be serialized or stored."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"the agent produced a {what} nested {depth} levels deep; the limit is {MAX_JSON_DEPTH}")


def _sorted(item: Any) -> Step:
    if item is None:
        return _EMPTY
    if isinstance(item, Artifact):
        return Step(artifact=item)
    if isinstance(item, Message):
        return Step(message=item)
    if isinstance(item, InputRequired):
        return Step(end=Outcome(TaskState.INPUT_REQUIRED, Message.agent(item.text)))
    if isinstance(item, Failed):
        return Step(end=Outcome(TaskState.FAILED, Message.agent(item.text)))
    raise TypeError(
        f"the agent produced a {type(item).__name__}; expected str, dict, TextChunk, DataChunk, "
        "Artifact, Message, InputRequired, Failed or Handoff"
    )


def _chunk(parts: list[Part]) -> Artifact:
    return Artifact(index=0, append=True, parts=parts)


def reply_message(artifacts: list[Artifact], outcome: Outcome) -> Message | None:
    """The agent's turn in the task history: what it produced, then its closing words."""
    parts: list[Part] = [part for artifact in artifacts for part in artifact.parts]
    if outcome.message is not None and outcome.state in (TaskState.COMPLETED, TaskState.INPUT_REQUIRED):
        parts.extend(outcome.message.parts)
    return Message(role="agent", parts=join_text_parts(parts)) if parts else None
