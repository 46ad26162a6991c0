"""What grpc.aio itself allows: a bare server streaming A2A ``StreamResponse`` messages to a bare client, no
Switchboard code on either side.

    python -m bench._grpc_stack serve PORT
    python -m bench._grpc_stack measure PORT CORE CONCURRENCY CHUNKS COUNT SECONDS

The server's one method streams N text updates (the messages the relayed upstream sends for
N chunks, each built as it is sent); the client, another process pinned to ``CORE`` (the
servers' core, where the gateway runs in the relay), runs ``CONCURRENCY`` streams at once
and prints the messages it received per second (``bench._support.rate``, as every bench). A
relay over gRPC has both ends of this and more to do, so this rate bounds it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import grpc
from a2a.types import a2a_pb2

from bench._support import rate

SERVICE = "bench.Stack"
METHOD = f"/{SERVICE}/Stream"
READY_S = 30.0


def _update(index: int) -> a2a_pb2.StreamResponse:
    message = a2a_pb2.StreamResponse()
    update = message.artifact_update
    update.task_id = "0" * 32
    update.context_id = "1" * 32
    update.artifact.artifact_id = "artifact-0"
    update.artifact.parts.add(text=f"chunk-{index} ")
    update.append = index > 0
    update.metadata.update({"costUsd": 0.0})
    return message


def _request(count: int) -> bytes:
    return str(count).encode()


async def serve(port: int) -> None:
    """The server on 127.0.0.1:``port`` until the process is stopped."""

    async def stream(count: int, context: Any) -> AsyncIterator[a2a_pb2.StreamResponse]:
        for index in range(count):
            yield _update(index)

    method = grpc.unary_stream_rpc_method_handler(
        stream, request_deserializer=int, response_serializer=a2a_pb2.StreamResponse.SerializeToString
    )
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Stream": method}),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


async def measure(port: int, concurrency: int, chunks: int, count: int, seconds: float) -> float:
    """Messages per second over at most ``count`` streams of ``chunks`` messages or ``seconds``."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        with anyio.fail_after(READY_S):
            await channel.channel_ready()
        call = channel.unary_stream(
            METHOD,
            request_serializer=lambda n: str(n).encode(),
            response_deserializer=a2a_pb2.StreamResponse.FromString,
        )

        async def one_stream() -> int:
            received = 0
            async for _ in call(chunks):
                received += 1
            return received

        return await rate(one_stream, concurrency=concurrency, count=count, seconds=seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve").add_argument("port", type=int)
    measuring = commands.add_parser("measure")
    for name in ("port", "core", "concurrency", "chunks", "count"):
        measuring.add_argument(name, type=int)
    measuring.add_argument("seconds", type=float)
    args = parser.parse_args(argv)
    if args.command == "serve":
        anyio.run(serve, args.port)
        return
    if args.core >= 0:
        os.sched_setaffinity(0, {args.core})
    print(anyio.run(measure, args.port, args.concurrency, args.chunks, args.count, args.seconds), flush=True)


if __name__ == "__main__":
    main()
