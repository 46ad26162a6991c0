"""Calling a peer: the one engine (``engine.py``: the call's lifecycle; ``lines.py``: a stream's lines read
and checked; ``reports.py``: a reply's cost and transfer request checked; ``termination.py``: the gateway
ending a call and its cancel), an agent as a tool (``tool.py``, ``result.py``), its limits (``budget.py``,
``idle_timeout.py``) and ``Gateway``, which owns the peers (``coordinator.py``).
"""
