"""The wire contract of Switchboard: A2A task models, stream events, NDJSON and SSE, the card, tool naming. No I/O.

Standard A2A (v1.0, v0.3) is the subpackage ``protocol.a2a``.

The names below are imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.lazy import lazy_exports

if TYPE_CHECKING:
    from protocol._wire import WireModel as WireModel
    from protocol.artifacts import (
        ArtifactFold as ArtifactFold,
        join_text_parts as join_text_parts,
        merge_artifact as merge_artifact,
        merge_artifacts as merge_artifacts,
        merged_artifacts as merged_artifacts,
    )
    from protocol.card import (
        A2A_V03 as A2A_V03,
        A2A_V1 as A2A_V1,
        JSONRPC_BINDING as JSONRPC_BINDING,
        NDJSON_BINDING as NDJSON_BINDING,
        AgentCapabilities as AgentCapabilities,
        AgentCard as AgentCard,
        AgentInterface as AgentInterface,
        AgentSkill as AgentSkill,
        major_minor as major_minor,
    )
    from protocol.error_body import ErrorBody as ErrorBody, ErrorDetail as ErrorDetail
    from protocol.errors import (
        MAX_LISTED_PROBLEMS as MAX_LISTED_PROBLEMS,
        ErrorCode as ErrorCode,
        ProtocolError as ProtocolError,
        SwitchboardError as SwitchboardError,
        dotted_path as dotted_path,
        more_problems as more_problems,
    )
    from protocol.events import (
        ArtifactEvent as ArtifactEvent,
        HandoffEvent as HandoffEvent,
        HandoffRequest as HandoffRequest,
        StatusEvent as StatusEvent,
        StreamEvent as StreamEvent,
        parse_stream_event as parse_stream_event,
    )
    from protocol.handoff_names import (
        MAX_TOOL_NAME_LENGTH as MAX_TOOL_NAME_LENGTH,
        sanitize_agent_name as sanitize_agent_name,
        transfer_tool_name as transfer_tool_name,
        transfer_tool_names as transfer_tool_names,
    )
    from protocol.jsonrpc import (
        MAX_JSON_DEPTH as MAX_JSON_DEPTH,
        Call as Call,
        Envelope as Envelope,
        EnvelopedProtocolError as EnvelopedProtocolError,
        ParsedRequest as ParsedRequest,
        json_depth as json_depth,
        parse_call as parse_call,
        parse_json_object as parse_json_object,
        parse_params as parse_params,
        parse_request as parse_request,
    )
    from protocol.ndjson import (
        DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES,
        MEDIA_TYPE as NDJSON_MEDIA_TYPE,  # noqa: F401 - exported under this name
        DecodedLine as DecodedLine,
        MalformedLine as MalformedLine,
        NDJSONDecoder as NDJSONDecoder,
        OversizedLine as OversizedLine,
        SkippedBytes as SkippedBytes,
        aiter_ndjson as aiter_ndjson,
        encode_line as encode_line,
    )
    from protocol.sse import (
        MEDIA_TYPE as SSE_MEDIA_TYPE,  # noqa: F401 - exported under this name
        OversizedEvent as OversizedEvent,
        SSEDecoder as SSEDecoder,
        SSEEvent as SSEEvent,
        encode_event as encode_event,
    )
    from protocol.task import (
        Artifact as Artifact,
        DataPart as DataPart,
        FileContent as FileContent,
        FilePart as FilePart,
        Message as Message,
        Part as Part,
        Task as Task,
        TaskIdParams as TaskIdParams,
        TaskQueryParams as TaskQueryParams,
        TaskResubscribeParams as TaskResubscribeParams,
        TaskSendParams as TaskSendParams,
        TaskState as TaskState,
        TaskStatus as TaskStatus,
        TextPart as TextPart,
        parts_text as parts_text,
        utc_now_iso as utc_now_iso,
    )

_EXPORTS = {
    "A2A_V03": ("protocol.card", "A2A_V03"),
    "A2A_V1": ("protocol.card", "A2A_V1"),
    "AgentCapabilities": ("protocol.card", "AgentCapabilities"),
    "AgentCard": ("protocol.card", "AgentCard"),
    "AgentInterface": ("protocol.card", "AgentInterface"),
    "AgentSkill": ("protocol.card", "AgentSkill"),
    "Call": ("protocol.jsonrpc", "Call"),
    "Artifact": ("protocol.task", "Artifact"),
    "ArtifactEvent": ("protocol.events", "ArtifactEvent"),
    "DEFAULT_MAX_LINE_BYTES": ("protocol.ndjson", "DEFAULT_MAX_LINE_BYTES"),
    "DataPart": ("protocol.task", "DataPart"),
    "DecodedLine": ("protocol.ndjson", "DecodedLine"),
    "Envelope": ("protocol.jsonrpc", "Envelope"),
    "EnvelopedProtocolError": ("protocol.jsonrpc", "EnvelopedProtocolError"),
    "ErrorBody": ("protocol.error_body", "ErrorBody"),
    "ErrorCode": ("protocol.errors", "ErrorCode"),
    "ErrorDetail": ("protocol.error_body", "ErrorDetail"),
    "FileContent": ("protocol.task", "FileContent"),
    "FilePart": ("protocol.task", "FilePart"),
    "HandoffEvent": ("protocol.events", "HandoffEvent"),
    "HandoffRequest": ("protocol.events", "HandoffRequest"),
    "JSONRPC_BINDING": ("protocol.card", "JSONRPC_BINDING"),
    "MAX_JSON_DEPTH": ("protocol.jsonrpc", "MAX_JSON_DEPTH"),
    "MAX_LISTED_PROBLEMS": ("protocol.errors", "MAX_LISTED_PROBLEMS"),
    "MAX_TOOL_NAME_LENGTH": ("protocol.handoff_names", "MAX_TOOL_NAME_LENGTH"),
    "MalformedLine": ("protocol.ndjson", "MalformedLine"),
    "Message": ("protocol.task", "Message"),
    "NDJSON_BINDING": ("protocol.card", "NDJSON_BINDING"),
    "NDJSONDecoder": ("protocol.ndjson", "NDJSONDecoder"),
    "NDJSON_MEDIA_TYPE": ("protocol.ndjson", "MEDIA_TYPE"),
    "OversizedEvent": ("protocol.sse", "OversizedEvent"),
    "OversizedLine": ("protocol.ndjson", "OversizedLine"),
    "ParsedRequest": ("protocol.jsonrpc", "ParsedRequest"),
    "Part": ("protocol.task", "Part"),
    "ProtocolError": ("protocol.errors", "ProtocolError"),
    "SSEDecoder": ("protocol.sse", "SSEDecoder"),
    "SSEEvent": ("protocol.sse", "SSEEvent"),
    "SSE_MEDIA_TYPE": ("protocol.sse", "MEDIA_TYPE"),
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
    "encode_event": ("protocol.sse", "encode_event"),
    "encode_line": ("protocol.ndjson", "encode_line"),
    "join_text_parts": ("protocol.artifacts", "join_text_parts"),
    "json_depth": ("protocol.jsonrpc", "json_depth"),
    "major_minor": ("protocol.card", "major_minor"),
    "ArtifactFold": ("protocol.artifacts", "ArtifactFold"),
    "merge_artifact": ("protocol.artifacts", "merge_artifact"),
    "merge_artifacts": ("protocol.artifacts", "merge_artifacts"),
    "merged_artifacts": ("protocol.artifacts", "merged_artifacts"),
    "more_problems": ("protocol.errors", "more_problems"),
    "parse_call": ("protocol.jsonrpc", "parse_call"),
    "parse_json_object": ("protocol.jsonrpc", "parse_json_object"),
    "parse_params": ("protocol.jsonrpc", "parse_params"),
    "parse_request": ("protocol.jsonrpc", "parse_request"),
    "parse_stream_event": ("protocol.events", "parse_stream_event"),
    "parts_text": ("protocol.task", "parts_text"),
    "sanitize_agent_name": ("protocol.handoff_names", "sanitize_agent_name"),
    "transfer_tool_name": ("protocol.handoff_names", "transfer_tool_name"),
    "transfer_tool_names": ("protocol.handoff_names", "transfer_tool_names"),
    "utc_now_iso": ("protocol.task", "utc_now_iso"),
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names are listed once, above

__getattr__ = lazy_exports(__name__, _EXPORTS)
