"""The standard A2A bindings an agent server speaks beside its own NDJSON one, each over the same
TaskManager: JSON-RPC (jsonrpc.py), HTTP+JSON (rest.py) and gRPC (grpc.py), thin faces over the
v1.0 operations they share (operations.py).
"""

import importlib.util


def grpc_installed() -> bool:
    """Whether gRPC can be spoken here: grpcio and the a2a-sdk's generated service are the ``grpc`` extra.

    Asked without importing them, so a command that only checks its options stays quick.
    """
    return all(importlib.util.find_spec(name) is not None for name in ("grpc", "a2a"))
