"""The A2A JSON-RPC binding's methods, its ``A2A-Version`` rules and its error objects.

A request names its protocol version in the ``A2A-Version`` header (``MAJOR.MINOR``; a
patch number is ignored); a request without one (or with an empty one) is A2A 0.3. This
project speaks 1.0 and 0.3; anything else is ``VersionNotSupportedError`` (-32009), and so
is a method of the other version (``SendMessage`` sent as 0.3, ``message/send`` as 1.0).
In 1.0, an A2A-specific error's ``data`` holds a ``google.rpc.ErrorInfo`` naming its reason.
"""

from __future__ import annotations

from protocol.a2a.errors import ERROR_KINDS, error_info
from protocol.card import A2A_V03, A2A_V1, major_minor
from protocol.errors import ErrorCode, ProtocolError

VERSION_HEADER = "A2A-Version"
SUPPORTED_VERSIONS = (A2A_V1, A2A_V03)

V1_METHODS = frozenset(
    {
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "GetExtendedAgentCard",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    }
)
V03_METHODS = frozenset(
    {
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "agent/getAuthenticatedExtendedCard",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
    }
)
STREAMING_METHODS = frozenset({"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"})


def requested_version(header: str | None) -> str:
    """The version a request asks for: ``1.0`` or ``0.3`` (no header, or an empty one); else -32009."""
    if header is None or not header.strip():
        return A2A_V03
    version = major_minor(header)
    if version in SUPPORTED_VERSIONS:
        return version
    raise ProtocolError(
        ErrorCode.VERSION_NOT_SUPPORTED,
        f"A2A-Version {header.strip()!r} is not supported; this agent speaks A2A {' and '.join(SUPPORTED_VERSIONS)} "
        f"(send 'A2A-Version: {A2A_V1}', or no header for {A2A_V03})",
        data={"supportedVersions": list(SUPPORTED_VERSIONS)},
    )


def check_method(method: str, version: str) -> None:
    """``method`` exists in ``version``: -32009 when it belongs to the other one, -32601 when to neither."""
    own, other = (V1_METHODS, V03_METHODS) if version == A2A_V1 else (V03_METHODS, V1_METHODS)
    if method in own:
        return
    if method in other:
        needed = A2A_V03 if version == A2A_V1 else A2A_V1
        said = "says A2A-Version 1.0" if version == A2A_V1 else "has no A2A-Version header, which means 0.3"
        raise ProtocolError(
            ErrorCode.VERSION_NOT_SUPPORTED,
            f"{method} is an A2A {needed} method and this request {said}; send 'A2A-Version: {needed}'",
            data={"supportedVersions": list(SUPPORTED_VERSIONS)},
        )
    known = ", ".join(sorted(own))
    raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"no method {method!r} in A2A {version}; the methods are {known}")


def for_version(error: ProtocolError, version: str) -> ProtocolError:
    """The error as ``version`` spells it: in 1.0, an A2A-specific one carries its ErrorInfo first in ``data``."""
    kind = ERROR_KINDS.get(error.code)
    if version != A2A_V1 or kind is None or not kind.a2a_specific:
        return error
    info = error_info(kind.reason)
    details = error.data if isinstance(error.data, list) else ([] if error.data is None else [error.data])
    return ProtocolError(error.code, error.message, data=[info, *details], http_status=error.http_status)
