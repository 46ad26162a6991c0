"""The standard A2A bindings an agent server speaks beside its own NDJSON one, each over the same
TaskManager: JSON-RPC (jsonrpc.py) and HTTP+JSON (rest.py), thin faces over the v1.0 operations
they share (operations.py).
"""
