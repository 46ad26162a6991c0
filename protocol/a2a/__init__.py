"""Standard A2A (v1.0 and v0.3; the JSON-RPC and HTTP+JSON bindings) in the project's own models; no I/O.

One module per idea: ``v1`` and ``v03`` the two versions' JSON objects (v03 also its
translation to and from v1), ``mapping`` the one mapping between v1 and the task model,
``streams`` a task's stream both ways, ``rpc`` the JSON-RPC methods, version rules and error
objects, ``errors`` how each binding names an error (reason, HTTP status, gRPC status). The
names below, listed once (the type checker reads them, and so does ``protocol.lazy``), are
imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.lazy import lazy_exports

if TYPE_CHECKING:
    from protocol.a2a import (
        errors as errors,
        mapping as mapping,
        rpc as rpc,
        streams as streams,
        v03 as v03,
        v1 as v1,
    )
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


__getattr__ = lazy_exports(__name__)
