"""A text update (protocol/a2a/text_updates.py) to and from its protobuf ``StreamResponse`` by its fields, without
ProtoJSON.

Both gRPC ends otherwise go through ProtoJSON (``ParseDict`` / ``MessageToDict``, pure Python
walking the descriptors) and the v1.0 models, for every chunk of a stream; the commonest
event skips both here. The message made is the one ``ParseDict`` makes of the update's wire
JSON, and a message is read as a ``TextUpdate`` only when ``MessageToDict`` would give
exactly that shape, so either end reads what the slow path reads
(tests/agent_server/bindings/test_grpc_text.py). The gateway's gRPC peer reads with it too.
"""

from __future__ import annotations

import math
from typing import Any

from a2a.types import a2a_pb2

from protocol.a2a.mapping import COST_KEY
from protocol.a2a.text_updates import TextUpdate


def text_update_message(update: TextUpdate) -> a2a_pb2.StreamResponse:
    """The ``StreamResponse`` of ``update`` (with no ``lastChunk``, as a ``TextUpdate`` has none)."""
    message = a2a_pb2.StreamResponse()
    event = message.artifact_update
    event.task_id = update.task_id
    if update.context_id is not None:
        event.context_id = update.context_id
    event.artifact.artifact_id = update.artifact_id
    event.artifact.parts.add(text=update.text)
    if update.append:
        event.append = True
    if update.cost_usd is not None:
        event.metadata.update({COST_KEY: update.cost_usd})
    return message


def text_update_of(message: Any) -> TextUpdate | None:
    """``message`` (a ``StreamResponse``) as a ``TextUpdate`` when it is one; None for any other message.

    Proto3 strings and booleans have no presence: an empty string reads as absent and
    ``false`` as unset, as ``MessageToDict`` leaves them out (an empty task or artifact id,
    which the models refuse, is left to them).
    """
    if message.WhichOneof("payload") != "artifact_update":
        return None
    event = message.artifact_update
    artifact = event.artifact
    if event.last_chunk or not event.task_id or not artifact.artifact_id or len(artifact.parts) != 1:
        return None
    if artifact.name or artifact.description or artifact.extensions or artifact.HasField("metadata"):
        return None
    part = artifact.parts[0]
    if part.WhichOneof("content") != "text" or part.HasField("metadata") or part.filename or part.media_type:
        return None
    cost: float | None = None
    if event.HasField("metadata"):
        fields = event.metadata.fields
        if len(fields) != 1 or COST_KEY not in fields or fields[COST_KEY].WhichOneof("kind") != "number_value":
            return None
        cost = fields[COST_KEY].number_value
        if not 0.0 <= cost < math.inf:
            return None
    append = event.append or None
    return TextUpdate(event.task_id, event.context_id or None, artifact.artifact_id, part.text, append, cost)
