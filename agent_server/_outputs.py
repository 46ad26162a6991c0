"""Turning what an agent yields or returns into artifacts, messages and the end of a send."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol import (
    MAX_JSON_DEPTH,
    Artifact,
    DataPart,
    HandoffRequest,
    Message,
    Part,
    TaskState,
    TextPart,
    WireModel,
    join_text_parts,
    json_depth,
)

from .agent import DataChunk, Handoff, InputRequired, TextChunk


@dataclass(frozen=True)
class Outcome:
    """How a send ended: its state, status message and any handoff."""

    state: TaskState
    message: Message | None = None
    handoff: HandoffRequest | None = None


@dataclass(frozen=True)
class Step:
    """One item the agent produced, sorted into what it means."""

    artifact: Artifact | None = None
    cost_usd: float = 0.0
    message: Message | None = None
    handoff: HandoffRequest | None = None
    input_required: str | None = None


_EMPTY = Step()


def interpret(item: Any) -> Step:
    """What one yielded or returned value means; raises TypeError or ValueError for anything else."""
    step = _sorted(item)
    for produced in (step.artifact, step.message, step.handoff):
        if produced is not None:
            _check_depth(produced)
    return step


def _check_depth(produced: WireModel) -> None:
    """Refuse data so deeply nested that the task holding it could no longer be serialized or stored."""
    depth = json_depth(produced.to_wire())
    if depth > MAX_JSON_DEPTH:
        raise ValueError(
            f"the agent produced a {type(produced).__name__} nested {depth} levels deep; the limit is {MAX_JSON_DEPTH}"
        )


def _sorted(item: Any) -> Step:
    if item is None:
        return _EMPTY
    if isinstance(item, str):
        item = TextChunk(item)
    elif isinstance(item, dict):
        item = DataChunk(item)
    if isinstance(item, TextChunk):
        return Step(artifact=_chunk([TextPart(text=item.text)]), cost_usd=item.cost_usd)
    if isinstance(item, DataChunk):
        return Step(artifact=_chunk([DataPart(data=item.data)]), cost_usd=item.cost_usd)
    if isinstance(item, Artifact):
        return Step(artifact=item)
    if isinstance(item, Message):
        return Step(message=item)
    if isinstance(item, InputRequired):
        return Step(input_required=item.text)
    if isinstance(item, Handoff):
        return Step(handoff=HandoffRequest(target=item.target, reason=item.reason, payload=item.payload))
    raise TypeError(
        f"the agent produced a {type(item).__name__}; expected str, dict, TextChunk, DataChunk, "
        "Artifact, Message, InputRequired or Handoff"
    )


def _chunk(parts: list[Part]) -> Artifact:
    return Artifact(index=0, append=True, parts=parts)


def reply_message(artifacts: list[Artifact], outcome: Outcome) -> Message | None:
    """The agent's turn in the task history: what it produced, then its closing words."""
    parts: list[Part] = [part for artifact in artifacts for part in artifact.parts]
    if outcome.message is not None and outcome.state in (TaskState.COMPLETED, TaskState.INPUT_REQUIRED):
        parts.extend(outcome.message.parts)
    return Message(role="agent", parts=join_text_parts(parts)) if parts else None
