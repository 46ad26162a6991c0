"""The commonest event of a stream, an artifact update of one plain text part, written and read as its v1.0 wire
JSON without the models.

A streaming agent sends mostly chunks of text, and a relay pays for every one of them on both
sides: four models built and validated per chunk (the StreamResponse, the update, its
artifact, its part) cost far more than the JSON itself. So such an update is written straight
as the dict the models' ``to_wire()`` gives (the same keys, in the same order), and read
straight when its JSON has exactly that shape, every value of its exact JSON type. Anything
else (another event, a field more, a cost that is not a float, snake_case keys, a
``lastChunk``) is left to the models, which read it as before: a fast path never reads an
event differently, it only reads fewer of them (tests/protocol/test_a2a_text_updates.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from protocol.a2a.mapping import COST_KEY

_UPDATE_KEYS = frozenset({"taskId", "contextId", "artifact", "append", "metadata"})
_ARTIFACT_KEYS = frozenset({"artifactId", "parts"})


@dataclass(frozen=True, slots=True)
class TextUpdate:
    """An ``artifactUpdate`` of one plain text part, no ``lastChunk``, its only metadata its cost (a float >= 0)."""

    task_id: str
    context_id: str | None
    artifact_id: str
    text: str
    append: bool | None
    cost_usd: float | None


def text_update_wire(update: TextUpdate, *, last_chunk: bool | None) -> dict[str, Any]:
    """The StreamResponse's wire JSON, as ``v1.StreamResponse(artifact_update=...).to_wire()`` writes it."""
    event: dict[str, Any] = {"taskId": update.task_id}
    if update.context_id is not None:
        event["contextId"] = update.context_id
    event["artifact"] = {"artifactId": update.artifact_id, "parts": [{"text": update.text}]}
    if update.append is not None:
        event["append"] = update.append
    if last_chunk is not None:
        event["lastChunk"] = last_chunk
    if update.cost_usd is not None:
        event["metadata"] = {COST_KEY: update.cost_usd}
    return {"artifactUpdate": event}


def writable_cost(cost: float | None) -> bool:
    """A cost the fast path writes as the models would: none, or a finite float (the models write the others as
    null)."""
    return cost is None or math.isfinite(cost)


def read_text_update(result: Any) -> TextUpdate | None:
    """``result`` (a StreamResponse's JSON) as a ``TextUpdate`` when it has exactly that shape; None otherwise."""
    if type(result) is not dict or len(result) != 1:
        return None
    event = result.get("artifactUpdate")
    if type(event) is not dict or not event.keys() <= _UPDATE_KEYS:
        return None
    task_id, context_id, artifact = event.get("taskId"), event.get("contextId"), event.get("artifact")
    if type(task_id) is not str or (context_id is not None and type(context_id) is not str):
        return None
    append = event.get("append")
    if append is not None and type(append) is not bool:
        return None
    cost = None
    if "metadata" in event and (cost := _plain_cost(event["metadata"])) is None:
        return None
    if type(artifact) is not dict or not artifact.keys() <= _ARTIFACT_KEYS:
        return None
    artifact_id, parts = artifact.get("artifactId"), artifact.get("parts")
    if type(artifact_id) is not str or type(parts) is not list or len(parts) != 1:
        return None
    part = parts[0]
    if type(part) is not dict or len(part) != 1 or type(text := part.get("text")) is not str:
        return None
    return TextUpdate(task_id, context_id, artifact_id, text, append, cost)


def _plain_cost(metadata: Any) -> float | None:
    """The cost when ``metadata`` holds a cost and nothing else, a float the caller's engine takes (finite,
    >= 0); None for any other metadata."""
    if type(metadata) is not dict or len(metadata) != 1:
        return None
    cost = metadata.get(COST_KEY)
    return cost if type(cost) is float and 0.0 <= cost < math.inf else None
