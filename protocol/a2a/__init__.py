"""Standard A2A (v1.0 and v0.3, JSON-RPC binding) in the project's own models; no I/O.

One module per idea: ``v1`` and ``v03`` the two versions' JSON objects (v03 also its
translation to and from v1), ``mapping`` the one mapping between v1 and the task model,
``streams`` a task's stream both ways, ``rpc`` the methods, version rules and error
objects. The names below are imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.lazy import lazy_exports

if TYPE_CHECKING:
    from protocol.a2a import mapping as mapping, rpc as rpc, streams as streams, v03 as v03, v1 as v1
    from protocol.a2a.mapping import (
        reply_task as reply_task,
        send_params_from_v1 as send_params_from_v1,
        send_request_to_v1 as send_request_to_v1,
        task_from_v1 as task_from_v1,
        task_to_v1 as task_to_v1,
    )
    from protocol.a2a.rpc import (
        STREAMING_METHODS as STREAMING_METHODS,
        VERSION_HEADER as VERSION_HEADER,
        check_method as check_method,
        for_version as for_version,
        requested_version as requested_version,
    )
    from protocol.a2a.streams import StreamDecoder as StreamDecoder, StreamEncoder as StreamEncoder

_EXPORTS = {
    "STREAMING_METHODS": "protocol.a2a.rpc",
    "StreamDecoder": "protocol.a2a.streams",
    "StreamEncoder": "protocol.a2a.streams",
    "VERSION_HEADER": "protocol.a2a.rpc",
    "check_method": "protocol.a2a.rpc",
    "for_version": "protocol.a2a.rpc",
    "reply_task": "protocol.a2a.mapping",
    "requested_version": "protocol.a2a.rpc",
    "send_params_from_v1": "protocol.a2a.mapping",
    "send_request_to_v1": "protocol.a2a.mapping",
    "task_from_v1": "protocol.a2a.mapping",
    "task_to_v1": "protocol.a2a.mapping",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names are listed once, above

__getattr__ = lazy_exports(__name__, _EXPORTS)
