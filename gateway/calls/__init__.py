"""Calling a peer: the one engine (``engine.py``), an agent as a tool (``tool.py``, ``result.py``),
its limits (``budget.py``, ``idle_timeout.py``) and ``Gateway``, which owns the peers
(``coordinator.py``).
"""
