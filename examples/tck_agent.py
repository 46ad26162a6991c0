"""An agent that plays the A2A TCK's scenarios (branch ``1.0-dev``), so the TCK can be run against Switchboard.

The TCK says what it wants by the ``messageId`` prefix of each message it sends (its
``scenarios/*.feature`` and ``codegen/``): an artifact of a kind, a bare Message, a question,
a failure, a stream in chunks, a slow task to resubscribe to. Anything else is echoed.

    python -m examples.tck_agent --port 9104 --grpc-port 9105
    # then, in the TCK's checkout: python run_tck.py --sut-host http://127.0.0.1:9104 -- --webhook-host 127.0.0.1

Push webhooks go to public hosts only unless allowed: the TCK's receiver listens on
127.0.0.1, so this server allows it (and ``example.com``, the URL some scenarios name).
"""

from __future__ import annotations

import argparse
import base64
from collections.abc import AsyncGenerator
from typing import Any

import anyio

from agent_server import HostedAgent, InputRequired, PushSettings, TaskContext, TextChunk, serve
from protocol import Artifact, Message
from protocol.task import DataPart, FileContent, FilePart, TextPart

SLOW_S = 4.0
"""``test-resubscribe``: twice the TCK's streaming timeout, so its stream is cut and it resubscribes."""

_TEXTS = {
    "tck-artifact-text": "Generated text content",
    "tck-stream-artifact-text": "Streamed text content",
    "tck-stream-001": "Stream hello from TCK",
    "tck-stream-003": "Stream task lifecycle",
    "tck-stream-ordering-001": "Ordered output",
}


def _text(text: str) -> Artifact:
    return Artifact(parts=[TextPart(text=text)])


def _file(uri: str | None = None) -> Artifact:
    data = None if uri else base64.b64encode(b"TCK file content").decode()
    return Artifact(parts=[FilePart(file=FileContent(name="output.txt", mime_type="text/plain", bytes=data, uri=uri))])


async def play(ctx: TaskContext) -> AsyncGenerator[Any, None]:
    """What the scenario named by the message id asks for (the longer prefix first where one holds another)."""
    scenario = ctx.message.message_id or ""
    text = next((text for prefix, text in _TEXTS.items() if scenario.startswith(prefix)), None)
    if text is not None:
        yield _text(text)
    elif scenario.startswith("tck-complete-task"):
        yield "Hello from TCK"
    elif scenario.startswith("tck-artifact-file-url"):
        yield _file("https://example.com/output.txt")
    elif scenario.startswith(("tck-artifact-file", "tck-stream-artifact-file")):
        yield _file()
    elif scenario.startswith("tck-artifact-data"):
        yield Artifact(parts=[DataPart(data={"key": "value", "count": 42})])
    elif scenario.startswith("tck-message-response"):
        yield Message.agent("Direct message response")
    elif scenario.startswith("tck-input-required"):
        yield InputRequired("TCK needs more input")
    elif scenario.startswith("tck-reject-task"):
        raise RuntimeError("the TCK asked for this task to fail")
    elif scenario.startswith("tck-stream-artifact-chunked"):
        yield TextChunk("chunk-1 ")
        yield TextChunk("chunk-2")
    elif scenario.startswith("test-resubscribe"):
        await anyio.sleep(SLOW_S)
        yield "done"
    elif not scenario.startswith("tck-stream-002"):  # that one ends with no output
        yield ctx.text


agent = HostedAgent(name="tck", handler=play, description="Plays the A2A TCK's scenarios, named by message ids.")
PUSH = PushSettings(allowed_hosts=("127.0.0.1", "example.com"))


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the TCK's scenario agent on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=9104)
    parser.add_argument("--grpc-port", type=int, default=9105)
    args = parser.parse_args()
    serve(agent, port=args.port, push=PUSH, grpc_port=args.grpc_port)


if __name__ == "__main__":
    main()
