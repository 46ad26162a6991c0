"""The wire models: camelCase out, both spellings in, parts, events, errors, envelopes."""

from __future__ import annotations

import orjson
import pytest
from pydantic import BaseModel, ValidationError

from protocol import (
    MAX_JSON_DEPTH,
    MAX_LISTED_PROBLEMS,
    AgentCard,
    Artifact,
    ArtifactEvent,
    ArtifactFold,
    DataPart,
    EnvelopedProtocolError,
    ErrorCode,
    FileContent,
    HandoffEvent,
    Message,
    ProtocolError,
    StatusEvent,
    Task,
    TaskQueryParams,
    TaskSendParams,
    TaskState,
    TaskStatus,
    TextPart,
    json_depth,
    merge_artifact,
    merge_artifacts,
    merged_artifacts,
    parse_request,
    parse_stream_event,
)


def test_task_is_camel_case_on_the_wire_and_reads_both_spellings() -> None:
    task = Task(id="t1", session_id="s1", status=TaskStatus(state=TaskState.INPUT_REQUIRED), metadata={"cost_usd": 0.5})
    wire = task.to_wire()
    assert wire["sessionId"] == "s1" and "session_id" not in wire
    assert wire["status"]["state"] == "input-required"
    assert wire["metadata"] == {"cost_usd": 0.5}
    assert "history" not in wire  # unset optionals are left out
    assert Task.model_validate(wire) == task
    assert Task.model_validate({**wire, "session_id": "s1"}).session_id == "s1"


def test_send_params_read_camel_case_fields() -> None:
    params = TaskSendParams.model_validate(
        {"id": "t", "sessionId": "s", "historyLength": 2, "message": {"parts": [{"type": "text", "text": "hi"}]}}
    )
    assert (params.session_id, params.history_length) == ("s", 2)
    assert params.message.role == "user"  # role defaults to user


def test_a_part_without_type_but_with_text_is_a_text_part() -> None:
    message = Message.model_validate({"parts": [{"text": "hello"}, {"type": "data", "data": {"a": 1}}]})
    assert isinstance(message.parts[0], TextPart)
    assert message.text == "hello"


def test_a_part_without_type_or_text_is_refused_with_a_readable_error() -> None:
    with pytest.raises(ValidationError) as caught:
        Message.model_validate({"parts": [{"data": {"a": 1}}]})
    assert "a part needs a type of 'text', 'data' or 'file'" in str(caught.value)


def test_stream_events_keep_cost_usd_snake_case_and_parse_by_type() -> None:
    line = ArtifactEvent.model_validate(
        {"seq": 1, "id": "t", "artifact": {"index": 0, "append": True, "parts": [{"text": "x"}]}, "cost_usd": 0.25}
    ).to_wire()
    assert line["cost_usd"] == 0.25 and line["type"] == "artifact" and line["artifact"]["append"] is True
    assert isinstance(parse_stream_event(line), ArtifactEvent)
    status = parse_stream_event(
        {"seq": 2, "id": "t", "type": "status", "status": {"state": "completed"}, "final": True}
    )
    assert isinstance(status, StatusEvent) and status.final
    handoff = parse_stream_event({"seq": 3, "id": "t", "type": "handoff", "handoff": {"target": "billing"}})
    assert isinstance(handoff, HandoffEvent) and handoff.handoff.target == "billing"
    with pytest.raises(ValidationError):
        parse_stream_event({"seq": 0, "id": "t", "type": "nonsense"})


def test_agent_card_is_camel_case() -> None:
    wire = AgentCard(name="a", url="http://x").to_wire()
    assert wire["capabilities"]["streaming"] is True
    assert wire["defaultInputModes"] == ["text/plain", "application/json"]  # media types, as A2A v1.0 has them


def test_protocol_error_statuses_and_body() -> None:
    assert ProtocolError(ErrorCode.TASK_NOT_FOUND, "x").http_status == 404
    assert ProtocolError(ErrorCode.TASK_NOT_CANCELABLE, "x").http_status == 409
    assert ProtocolError(ErrorCode.PARSE_ERROR, "x").http_status == 400
    assert ProtocolError(ErrorCode.INVALID_REQUEST, "x", http_status=413).http_status == 413
    assert ProtocolError(-32002, "gone", data={"a": 1}).to_body().to_wire() == {
        "error": {"code": -32002, "message": "gone", "data": {"a": 1}}
    }


_SEND = {"message": {"parts": [{"text": "hi"}]}}


def test_parse_request_plain_body() -> None:
    parsed = parse_request(orjson.dumps(_SEND), TaskSendParams, "tasks/send")
    assert parsed.envelope is None and parsed.params.message.text == "hi"


@pytest.mark.parametrize("rpc_id", [7, "abc", None])
def test_parse_request_envelope_with_and_without_id(rpc_id: int | str | None) -> None:
    envelope = {"jsonrpc": "2.0", "method": "tasks/send", "params": _SEND}
    if rpc_id is not None:
        envelope["id"] = rpc_id
    parsed = parse_request(orjson.dumps(envelope), TaskSendParams, "tasks/send")
    assert parsed.envelope is not None and parsed.envelope.rpc_id == rpc_id
    assert parsed.envelope.wrap_result({"x": 1}) == {"jsonrpc": "2.0", "id": rpc_id, "result": {"x": 1}}


def test_parse_request_envelope_without_method_is_accepted() -> None:
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "params": {"id": "t"}})
    assert parse_request(body, TaskQueryParams, "tasks/get").params.id == "t"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", ErrorCode.PARSE_ERROR),
        (b"", ErrorCode.INVALID_REQUEST),
        (b"[1, 2]", ErrorCode.INVALID_REQUEST),
        (b"null", ErrorCode.INVALID_REQUEST),
        (b'{"message": {"parts": [{"text": "\xff"}]}}', ErrorCode.PARSE_ERROR),
        (b"{}", ErrorCode.INVALID_PARAMS),
    ],
)
def test_parse_request_refusals(body: bytes, code: ErrorCode) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_request(body, TaskSendParams, "tasks/send")
    assert caught.value.code == code


def test_parse_request_names_the_offending_field() -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_request(b'{"message": {"parts": []}}', TaskSendParams, "tasks/send")
    assert caught.value.code == ErrorCode.INVALID_PARAMS
    assert "message.parts" in caught.value.message
    assert caught.value.data[0]["field"] == "message.parts"


def test_a_million_bad_parts_are_refused_with_the_first_one() -> None:
    """``parts`` stops at its first bad part: naming every one took seconds and answered megabytes."""
    with pytest.raises(ProtocolError) as caught:
        parse_request(b'{"message": {"parts": [%s]}}' % b",".join([b"1"] * 1_000_000), TaskSendParams, "tasks/send")
    assert caught.value.message == "invalid params: message.parts[0]: a part needs a type of 'text', 'data' or 'file'"
    assert len(caught.value.data) == 1


class _Numbers(BaseModel):
    values: list[int]


def test_a_validation_error_names_its_first_problems_and_counts_the_rest() -> None:
    with pytest.raises(ValidationError) as caught:
        _Numbers.model_validate({"values": ["x"] * 25})
    error = ProtocolError.from_validation_error(caught.value)
    assert [problem["field"] for problem in error.data] == [f"values[{i}]" for i in range(MAX_LISTED_PROBLEMS)]
    assert error.message.startswith("invalid params: values[0]: Input should be a valid integer")
    assert error.message.endswith(f"; and {25 - MAX_LISTED_PROBLEMS} more")


@pytest.mark.parametrize(
    ("envelope", "code"),
    [
        ({"jsonrpc": "1.0", "id": 1, "params": _SEND}, ErrorCode.INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": _SEND}, ErrorCode.METHOD_NOT_FOUND),
        ({"jsonrpc": "2.0", "id": 1, "method": "tasks/send"}, ErrorCode.INVALID_PARAMS),
        ({"jsonrpc": "2.0", "id": 1, "params": {"message": {}}}, ErrorCode.INVALID_PARAMS),
    ],
)
def test_envelope_refusals_keep_the_envelope(envelope: dict, code: ErrorCode) -> None:
    with pytest.raises(EnvelopedProtocolError) as caught:
        parse_request(orjson.dumps(envelope), TaskSendParams, "tasks/send")
    assert caught.value.code == code
    assert caught.value.envelope.wrap_error(caught.value)["id"] == 1


def test_json_depth_counts_nesting_without_recursing() -> None:
    assert json_depth(1) == 0 and json_depth({}) == 1 and json_depth([[], {"a": [1]}]) == 3
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    assert json_depth(deep) == 100_001


def test_parse_request_refuses_deep_nesting_with_the_depth_and_the_limit() -> None:
    body = b'{"message": {"parts": [{"type": "data", "data": ' + b'{"a":' * 70 + b"1" + b"}" * 70 + b"}]}}"
    with pytest.raises(ProtocolError) as caught:
        parse_request(body, TaskSendParams, "tasks/send")
    assert caught.value.code == ErrorCode.INVALID_REQUEST
    assert f"nests 74 levels deep; the limit is {MAX_JSON_DEPTH}" in caught.value.message


@pytest.mark.parametrize("rpc_id", [{"a": 1}, [1], False])
def test_an_envelope_id_must_be_a_string_a_number_or_null(rpc_id: object) -> None:
    body = orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": "tasks/send", "params": _SEND})
    with pytest.raises(EnvelopedProtocolError) as caught:
        parse_request(body, TaskSendParams, "tasks/send")
    assert caught.value.code == ErrorCode.INVALID_REQUEST and caught.value.envelope.rpc_id is None


def test_file_content_is_base64_bytes_or_a_uri_exactly() -> None:
    assert FileContent(bytes="aGk=").bytes == "aGk=" and FileContent(uri="https://x/y").uri == "https://x/y"
    for bad in ({"bytes": "%%%"}, {}, {"bytes": "aGk=", "uri": "https://x/y"}):
        with pytest.raises(ValidationError):
            FileContent.model_validate(bad)


def test_query_params_are_strict_about_numbers_but_read_query_strings() -> None:
    assert TaskQueryParams.model_validate_strings({"id": "t", "historyLength": "3"}).history_length == 3
    for bad in (True, "3", 2.5):
        with pytest.raises(ValidationError):
            TaskQueryParams.model_validate({"id": "t", "historyLength": bad})


def _text(text: str, index: int = 0, append: bool | None = True, **extra: object) -> Artifact:
    return Artifact(index=index, append=append, parts=[TextPart(text=text)], **extra)  # type: ignore[arg-type]


def test_merge_artifact_appends_by_index_and_joins_adjacent_text() -> None:
    artifacts = merged_artifacts(
        [_text("a"), _text("b"), Artifact(index=0, append=True, parts=[DataPart(data={"n": 1})]), _text("c")]
    )
    assert artifacts == [Artifact(index=0, parts=[TextPart(text="ab"), DataPart(data={"n": 1}), TextPart(text="c")])]
    assert artifacts[0].append is None


def test_merge_artifact_replaces_in_place_keeps_index_order_and_takes_last_chunk() -> None:
    artifacts = merged_artifacts(
        [
            _text("draft", index=2, append=None),
            _text("x", index=1, append=None, name="notes"),
            _text("final", index=2, append=None),
            _text("y", index=1, last_chunk=True),
            _text("z", index=0),
        ]
    )
    assert [(a.index, a.name, a.parts[0].text, a.last_chunk) for a in artifacts] == [  # type: ignore[union-attr]
        (0, None, "z", None),
        (1, "notes", "xy", True),
        (2, None, "final", None),
    ]


def test_merge_artifacts_folds_many_chunks_as_one_by_one_would() -> None:
    data = Artifact(index=0, append=True, parts=[DataPart(data={"n": 1})])
    tagged = Artifact(index=0, append=True, parts=[TextPart(text="t", metadata={"lang": "en"})])
    chunks = [
        _text("a"),
        _text("b"),
        data,
        _text("c"),
        _text("d", last_chunk=False),
        _text("x", index=1, append=None),
        _text("e", last_chunk=True),
        tagged,
        _text("f"),
        _text("y", index=1),
        _text("new", index=2),
        _text("g", append=None),
        _text("h"),
    ]
    one_by_one: list[Artifact] = []
    for chunk in chunks:
        merge_artifact(one_by_one, chunk)
    for split in range(len(chunks) + 1):  # already-folded artifacts extended by the rest, at every cut
        folded = merged_artifacts(chunks[:split])
        merge_artifacts(folded, chunks[split:])
        assert folded == one_by_one
    fold = ArtifactFold()  # read after every chunk, as a task is read while it streams
    for count, chunk in enumerate(chunks, 1):
        fold.add(chunk)
        assert fold.artifacts == merged_artifacts(chunks[:count])
    assert fold.artifacts == one_by_one
    assert [a.parts for a in one_by_one] == [[TextPart(text="gh")], [TextPart(text="xy")], [TextPart(text="new")]]


def test_merge_artifact_never_modifies_or_keeps_the_chunk() -> None:
    chunk = _text("a")
    artifacts: list[Artifact] = []
    merge_artifact(artifacts, chunk)
    merge_artifact(artifacts, _text("b"))
    assert chunk == _text("a") and artifacts[0] is not chunk
    assert artifacts[0].parts[0].text == "ab"  # type: ignore[union-attr]


def test_merge_artifact_keeps_text_parts_with_metadata_apart() -> None:
    tagged = Artifact(index=0, append=True, parts=[TextPart(text="b", metadata={"lang": "en"})])
    artifacts = merged_artifacts([_text("a"), tagged, _text("c")])
    assert [p.text for p in artifacts[0].parts] == ["a", "b", "c"]  # type: ignore[union-attr]
