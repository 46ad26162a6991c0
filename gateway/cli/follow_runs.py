"""``switchboard events --session ID`` and ``--all``: the events of many runs, and with ``--follow`` of runs to come.

A run's session is what its first event (``run_started``) says, as ``GET /runs`` lists it.
Without ``--follow``: the stored events of every listed run that matches, oldest run first.
With it: the runs still going when the command starts, from their first event, then every
run that begins later, each followed live until it ends; the command stays until Ctrl-C.
New runs are found by asking ``GET /runs`` every ``defaults.FOLLOW_POLL_S`` (a run listed
before its first event is written is asked about again at the next poll).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from gateway import defaults
from gateway.cli.client import GatewayAddress, refused, unreachable

if TYPE_CHECKING:
    import httpx

Matches = Callable[[dict[str, Any]], bool]
"""Whether a run, as ``GET /runs`` lists it, is one to show."""
Show = Callable[[bytes], None]
"""What is done with each event line, in the order they arrive."""

_LISTED = 1000
_BUFFERED_LINES = 1000
_BUFFERED_RUNS = 1000


async def show_runs(address: GatewayAddress, matches: Matches, show: Show, *, follow: bool, in_order: bool) -> None:
    """Every event of the matching runs through ``show``; with ``follow``, forever (see the module docstring).

    ``in_order``: one run after the other, as they began (a session's runs never overlap);
    else every run as it happens, their lines interleaved.
    """
    import httpx

    timeout = httpx.Timeout(10.0, read=None)
    try:
        async with httpx.AsyncClient(
            base_url=address.url.rstrip("/"), headers=address.headers, timeout=timeout
        ) as client:
            if not follow:
                for run in reversed(await _runs(client)):
                    if matches(run):
                        await _events(client, run["run_id"], False, _direct(show))
                return
            await _follow(client, matches, show, in_order)
    except httpx.TransportError as exc:
        raise unreachable(address.url, exc) from None


async def _follow(client: httpx.AsyncClient, matches: Matches, show: Show, in_order: bool) -> None:
    lines_in, lines_out = anyio.create_memory_object_stream[bytes](_BUFFERED_LINES)
    runs_in, runs_out = anyio.create_memory_object_stream[str](_BUFFERED_RUNS)
    async with anyio.create_task_group() as group, lines_out:
        group.start_soon(_watch, client, matches, runs_in)
        group.start_soon(_start_followers, client, runs_out, lines_in, in_order)
        async for line in lines_out:
            show(line)


async def _watch(client: httpx.AsyncClient, matches: Matches, runs: MemoryObjectSendStream[str]) -> None:
    """Hand on each run that matches, as it begins: the open ones at once, then each new one as it is listed."""
    async with runs:
        seen = {run["run_id"] for run in await _runs(client) if run.get("closed")}
        while True:
            for run in reversed(await _runs(client)):
                run_id = run["run_id"]
                if run_id in seen or (run.get("first_event") is None and not run.get("closed")):
                    continue
                seen.add(run_id)
                if matches(run):
                    await runs.send(run_id)
            await anyio.sleep(defaults.FOLLOW_POLL_S)


async def _start_followers(
    client: httpx.AsyncClient,
    runs: MemoryObjectReceiveStream[str],
    lines: MemoryObjectSendStream[bytes],
    in_order: bool,
) -> None:
    async with runs, lines, anyio.create_task_group() as group:
        async for run_id in runs:
            if in_order:
                await _events(client, run_id, True, lines.send)
            else:
                group.start_soon(_follow_one, client, run_id, lines.clone())


async def _runs(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get("/runs", params={"limit": str(_LISTED)})
    if response.status_code != 200:
        raise refused(response)
    runs: list[dict[str, Any]] = orjson.loads(response.content)["runs"]
    return runs


async def _events(
    client: httpx.AsyncClient, run_id: str, follow: bool, put: Callable[[bytes], Awaitable[None]]
) -> None:
    params = {"follow": "1" if follow else "0"}
    async with client.stream("GET", f"/runs/{quote(run_id, safe='')}/events", params=params) as response:
        if response.status_code != 200:
            raise refused(response)
        async for line in response.aiter_lines():
            if line:
                await put(line.encode())


async def _follow_one(client: httpx.AsyncClient, run_id: str, send: MemoryObjectSendStream[bytes]) -> None:
    async with send:
        await _events(client, run_id, True, send.send)


def _direct(show: Show) -> Callable[[bytes], Awaitable[None]]:
    async def put(line: bytes) -> None:
        show(line)

    return put
