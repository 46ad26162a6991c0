"""The bare gRPC stack of the binding relay bench (bench/_grpc_stack.py) measures a rate, in its own processes.

No timing is asserted: the machine is shared and noisy; only that the figure was measured.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import pytest

from bench import binding_relay
from bench._chunks import Settings

pytestmark = pytest.mark.timeout(300)


def test_the_bare_grpc_stack_streams_and_reports_a_rate() -> None:
    with tempfile.TemporaryDirectory() as tmp, binding_relay.stack_server(Path(tmp) / "stack.log") as port:
        rate = anyio.run(binding_relay.stack_rate, port, Settings(rounds=1, seconds=0.3, streams=4))
    assert rate > 0
    rates = {"ndjson": [2.0, 2.0], binding_relay.STACK: [1.0, 1.0]}
    assert binding_relay.report(rates).splitlines()[-1].split() == [binding_relay.STACK, "1", "0.50"]
