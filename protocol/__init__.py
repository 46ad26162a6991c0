"""The wire contract of Switchboard: A2A task models, stream events, NDJSON and SSE, the card, tool naming. No I/O.

Standard A2A (v1.0, v0.3) is the subpackage ``protocol.a2a``.

The names below, listed once (the type checker reads them, and so does ``protocol.lazy``), are
imported on first use (PEP 562).
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
        GRPC_BINDING as GRPC_BINDING,
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


__getattr__ = lazy_exports(__name__)
