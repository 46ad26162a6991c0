"""A text update to and from its protobuf message by its fields (agent_server/bindings/grpc_text.py) is what
ProtoJSON and the v1.0 models make of it: the message written is ``ParseDict``'s, and a message read fast reads as
``MessageToDict`` and the models read it; a message of another shape is left to them."""

from __future__ import annotations

import math
from typing import Any

from a2a.types import a2a_pb2
from google.protobuf import json_format
from hypothesis import given, settings, strategies as st

from agent_server.bindings.grpc_text import text_update_message, text_update_of
from protocol.a2a import StreamDecoder, v1
from protocol.a2a.text_updates import TextUpdate, text_update_wire
from tests.support.fast_paths import read_alike

_UPDATES = st.builds(
    TextUpdate,
    task_id=st.sampled_from(["t", "52064e2c2b658dc95c089ad2670c2a0e"]),
    context_id=st.sampled_from([None, "c"]),
    artifact_id=st.sampled_from(["artifact-0", "artifact-1"]),
    text=st.text(max_size=8),
    append=st.sampled_from([None, True]),
    cost_usd=st.sampled_from([None, 0.0, 0.125, 3.5]),
)


@settings(max_examples=200, deadline=None)
@given(update=_UPDATES)
def test_a_text_update_is_written_as_protojson_writes_it(update: TextUpdate) -> None:
    parsed = a2a_pb2.StreamResponse()
    json_format.ParseDict(text_update_wire(update, last_chunk=None), parsed)
    assert text_update_message(update) == parsed
    assert text_update_of(parsed) == update


def _bent(draw: st.DrawFn) -> a2a_pb2.StreamResponse:
    """A text update's message, now and then given a field the fast path leaves to the models."""
    message = text_update_message(draw(_UPDATES))
    event = message.artifact_update
    bend = draw(st.sampled_from(["none"] * 4 + ["last", "name", "part", "media", "meta", "cost", "empty", "two"]))
    if bend == "last":
        event.last_chunk = True
    elif bend == "name":
        event.artifact.name = "answer"
    elif bend == "part":
        event.artifact.parts[0].Clear()
        event.artifact.parts[0].url = "https://example.com/a"
    elif bend == "media":
        event.artifact.parts[0].media_type = "text/plain"
    elif bend == "meta":
        event.metadata.update({"costUsd": 0.5, "other": 1})
    elif bend == "cost":
        event.metadata.update({"costUsd": draw(st.sampled_from([-1.0, math.inf, "0.5"]))})
    elif bend == "empty":
        event.task_id = ""
    elif bend == "two":
        event.artifact.parts.add(text="more")
    return message


def _decoded(decoder: StreamDecoder, message: a2a_pb2.StreamResponse) -> list[Any] | None:
    """What ProtoJSON and the models read of ``message`` (None: they refuse it)."""
    try:
        return decoder.decode(v1.StreamResponse.model_validate(json_format.MessageToDict(message)))
    except (ValueError, json_format.Error):  # pydantic's ValidationError included
        return None


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_message_is_read_as_protojson_and_the_models_read_it(data: st.DataObject) -> None:
    messages = [data.draw(st.composite(_bent)()) for _ in range(3)]
    read_alike(messages, _decoded, text_update_of)
