"""The standard A2A bindings an agent server speaks beside its own NDJSON one, each over the same
TaskManager.
"""
