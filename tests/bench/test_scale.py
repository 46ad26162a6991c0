"""What a burst of many streams needs (bench/_scale.py) and the concurrent-streams bench spread over agents.

No timing is asserted: the machine is shared and noisy; only that every stream completed and the
settings the burst needs were set and said.
"""

from __future__ import annotations

import resource

import pytest

from bench import concurrent_streams
from bench._scale import LimitTooLow, Scale, default_agents, file_limits

pytestmark = pytest.mark.timeout(600)


def test_the_agents_default_to_one_per_two_thousand_streams_and_the_caps_follow_the_burst() -> None:
    assert [default_agents(n) for n in (1, 2000, 2001, 10_000)] == [1, 1, 2, 5]
    scale = Scale(streams=10_000, agents=5)
    assert scale.per_agent == 2000
    assert scale.server_connections > 10_000 and scale.pool_connections > 10_000 and scale.agent_connections > 2000
    small = Scale(streams=50, agents=1)  # the caps are raised for a burst, never lowered below the defaults
    assert (small.server_connections, small.pool_connections, small.agent_connections) == (2048, 1024, 2048)
    assert scale.middle_files > 2 * 10_000


def test_a_burst_past_what_the_hard_fd_limit_allows_is_refused_saying_what_to_raise() -> None:
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    if before[1] == resource.RLIM_INFINITY:
        pytest.skip("no hard open-file limit here")
    with pytest.raises(LimitTooLow) as refused:
        file_limits(Scale(streams=10**8, agents=1))  # beyond fs.nr_open, whoever runs it
    assert "ulimit -Hn" in str(refused.value) and "--streams" in str(refused.value)
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == before


def test_a_small_burst_spread_over_two_agents_completes_every_stream_on_every_path() -> None:
    argv = ["--quick", "--streams", "20", "--agents", "2", "--rounds", "1", "--connect-timeout", "7"]
    settings = concurrent_streams.parse_settings(argv)
    assert (settings.streams, settings.agents, settings.connect_timeout_s) == (20, 2, 7.0)
    lines: list[str] = []

    bursts = concurrent_streams.measure(settings, lines.append)

    assert [b.path for b in bursts] == ["gateway", "relay", "direct"]
    for burst in bursts:
        assert burst.failures == {}, (burst.path, burst.failures)
        assert burst.max_open == settings.streams
        assert burst.client_cpu_s >= 0 and burst.listen_overflows >= 0
    report = "\n".join(lines)
    assert "round-robin over 2 agent server(s)" in report
    assert f"[gateway] max_connections {settings.scale.server_connections}" in report
    peers = f"[peers] max_connections {settings.scale.pool_connections}, connect_timeout_secs 7 (not the default)"
    assert peers in report
    assert "connection attempts dropped on a full backlog" in report
