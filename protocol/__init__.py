"""The wire contract of Switchboard: A2A task models, stream events, NDJSON, tool naming. No I/O.

The names below are imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from protocol._wire import WireModel
    from protocol.artifacts import join_text_parts, merge_artifact, merged_artifacts
    from protocol.card import AgentCapabilities, AgentCard, AgentSkill
    from protocol.errors import ErrorBody, ErrorCode, ErrorDetail, MAX_LISTED_PROBLEMS, ProtocolError, SwitchboardError, dotted_path, more_problems
    from protocol.events import ArtifactEvent, HandoffEvent, HandoffRequest, StatusEvent, StreamEvent, parse_stream_event
    from protocol.handoff_names import MAX_TOOL_NAME_LENGTH, sanitize_agent_name, transfer_tool_name, transfer_tool_names
    from protocol.jsonrpc import Envelope, EnvelopedProtocolError, MAX_JSON_DEPTH, ParsedRequest, json_depth, parse_json_object, parse_request
    from protocol.ndjson import DEFAULT_MAX_LINE_BYTES, DecodedLine, MEDIA_TYPE as NDJSON_MEDIA_TYPE, MalformedLine, NDJSONDecoder, OversizedLine, SkippedBytes, aiter_ndjson, encode_line
    from protocol.task import Artifact, DataPart, FileContent, FilePart, Message, Part, Task, TaskIdParams, TaskQueryParams, TaskResubscribeParams, TaskSendParams, TaskState, TaskStatus, TextPart, parts_text, utc_now_iso

_EXPORTS = {
    "AgentCapabilities": ("protocol.card", "AgentCapabilities"),
    "AgentCard": ("protocol.card", "AgentCard"),
    "AgentSkill": ("protocol.card", "AgentSkill"),
    "Artifact": ("protocol.task", "Artifact"),
    "ArtifactEvent": ("protocol.events", "ArtifactEvent"),
    "DEFAULT_MAX_LINE_BYTES": ("protocol.ndjson", "DEFAULT_MAX_LINE_BYTES"),
    "DataPart": ("protocol.task", "DataPart"),
    "DecodedLine": ("protocol.ndjson", "DecodedLine"),
    "Envelope": ("protocol.jsonrpc", "Envelope"),
    "EnvelopedProtocolError": ("protocol.jsonrpc", "EnvelopedProtocolError"),
    "ErrorBody": ("protocol.errors", "ErrorBody"),
    "ErrorCode": ("protocol.errors", "ErrorCode"),
    "ErrorDetail": ("protocol.errors", "ErrorDetail"),
    "FileContent": ("protocol.task", "FileContent"),
    "FilePart": ("protocol.task", "FilePart"),
    "HandoffEvent": ("protocol.events", "HandoffEvent"),
    "HandoffRequest": ("protocol.events", "HandoffRequest"),
    "MAX_JSON_DEPTH": ("protocol.jsonrpc", "MAX_JSON_DEPTH"),
    "MAX_LISTED_PROBLEMS": ("protocol.errors", "MAX_LISTED_PROBLEMS"),
    "MAX_TOOL_NAME_LENGTH": ("protocol.handoff_names", "MAX_TOOL_NAME_LENGTH"),
    "MalformedLine": ("protocol.ndjson", "MalformedLine"),
    "Message": ("protocol.task", "Message"),
    "NDJSONDecoder": ("protocol.ndjson", "NDJSONDecoder"),
    "NDJSON_MEDIA_TYPE": ("protocol.ndjson", "MEDIA_TYPE"),
    "OversizedLine": ("protocol.ndjson", "OversizedLine"),
    "ParsedRequest": ("protocol.jsonrpc", "ParsedRequest"),
    "Part": ("protocol.task", "Part"),
    "ProtocolError": ("protocol.errors", "ProtocolError"),
    "SkippedBytes": ("protocol.ndjson", "SkippedBytes"),
    "StatusEvent": ("protocol.events", "StatusEvent"),
    "StreamEvent": ("protocol.events", "StreamEvent"),
    "SwitchboardError": ("protocol.errors", "SwitchboardError"),
    "Task": ("protocol.task", "Task"),
    "TaskIdParams": ("protocol.task", "TaskIdParams"),
    "TaskQueryParams": ("protocol.task", "TaskQueryParams"),
    "TaskResubscribeParams": ("protocol.task", "TaskResubscribeParams"),
    "TaskSendParams": ("protocol.task", "TaskSendParams"),
    "TaskState": ("protocol.task", "TaskState"),
    "TaskStatus": ("protocol.task", "TaskStatus"),
    "TextPart": ("protocol.task", "TextPart"),
    "WireModel": ("protocol._wire", "WireModel"),
    "aiter_ndjson": ("protocol.ndjson", "aiter_ndjson"),
    "dotted_path": ("protocol.errors", "dotted_path"),
    "encode_line": ("protocol.ndjson", "encode_line"),
    "join_text_parts": ("protocol.artifacts", "join_text_parts"),
    "json_depth": ("protocol.jsonrpc", "json_depth"),
    "merge_artifact": ("protocol.artifacts", "merge_artifact"),
    "merged_artifacts": ("protocol.artifacts", "merged_artifacts"),
    "more_problems": ("protocol.errors", "more_problems"),
    "parse_json_object": ("protocol.jsonrpc", "parse_json_object"),
    "parse_request": ("protocol.jsonrpc", "parse_request"),
    "parse_stream_event": ("protocol.events", "parse_stream_event"),
    "parts_text": ("protocol.task", "parts_text"),
    "sanitize_agent_name": ("protocol.handoff_names", "sanitize_agent_name"),
    "transfer_tool_name": ("protocol.handoff_names", "transfer_tool_name"),
    "transfer_tool_names": ("protocol.handoff_names", "transfer_tool_names"),
    "utc_now_iso": ("protocol.task", "utc_now_iso"),
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
