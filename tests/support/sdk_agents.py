"""A real a2a-sdk 1.3 server for the interoperability tests: its own executor, its own task store, its own routes.

The agent does what the message text says (the scripted agent's words, where they exist):

- ``stream N DELAY COST``: N text chunks ``chunk-<i> `` as artifact updates ``DELAY`` seconds
  apart, each reporting ``COST`` in ``metadata.cost_usd``, then completed;
- ``sleep S``: one working status, then silence for S seconds (an idle timeout or a
  deadline cancels it first), then completed;
- ``reply``: a direct answer, the Message ``replied`` and no task;
- ``ask``: ``input-required`` with the question ``which one?``; the task's next message
  completes it with ``got <text>``;
- anything else: completed with its text echoed (``echo: <text>``).

``SdkAgent.canceled`` holds the ids of the tasks the executor saw canceled (its own
``cancel`` hook ran), so a test knows the cancel reached the agent's code;
``SdkAgent.message_ids`` the ``messageId`` of each message it was handed. ``v03=True``
serves a card that offers only A2A 0.3 (the SDK's v0.3 compatibility on the same endpoint),
so a client that follows the card speaks 0.3; ``rest=True`` serves only the SDK's HTTP+JSON
routes (v1.0) and a card that offers only them. ``serve_sdk_grpc_agent`` serves the same
agent over gRPC only (the SDK's GrpcHandler), its card over HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Part, Role, TaskState
from starlette.applications import Starlette

from agent_server.http.loopback import free_port
from tests.support.servers import serve_app


class SdkAgent(AgentExecutor):
    """The executor: one behaviour per message, as the module docstring lists."""

    def __init__(self) -> None:
        self.canceled: list[str] = []
        self.message_ids: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.message is not None:
            self.message_ids.append(context.message.message_id)
        text = context.get_user_input()
        words = text.split()
        if text == "reply" and context.current_task is None:  # a direct answer: a Message, no task
            reply = Message(role=Role.ROLE_AGENT, message_id="reply-" + context.task_id, parts=[Part(text="replied")])
            reply.context_id = context.context_id
            await event_queue.enqueue_event(reply)
            return
        if context.current_task is None:
            assert context.message is not None
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await updater.start_work()
        if words[:1] == ["stream"] and len(words) == 4:
            count, delay, cost = int(words[1]), float(words[2]), float(words[3])
            for index in range(count):
                await asyncio.sleep(delay)
                await updater.add_artifact(
                    [Part(text=f"chunk-{index} ")],
                    artifact_id="out",
                    append=index > 0,
                    last_chunk=index == count - 1,
                    metadata={"cost_usd": cost},
                )
            await updater.complete()
        elif words[:1] == ["sleep"] and len(words) == 2:
            await asyncio.sleep(float(words[1]))
            await updater.complete()
        elif text == "ask":
            await updater.requires_input(updater.new_agent_message([Part(text="which one?")]))
        elif context.current_task is not None:
            await updater.add_artifact([Part(text=f"got {text}")], artifact_id="answer")
            await updater.complete()
        else:
            await updater.add_artifact([Part(text=f"echo: {text}")], artifact_id="answer")
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        self.canceled.append(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id).update_status(TaskState.TASK_STATE_CANCELED)


def sdk_card(interface: AgentInterface) -> AgentCard:
    return AgentCard(
        name="sdk_helper",
        description="An a2a-sdk agent: streams, sleeps, asks, echoes.",
        version="1.0.0",
        supported_interfaces=[interface],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["test"])],
    )


def sdk_app(executor: SdkAgent, url: str, *, v03: bool = False, rest: bool = False) -> Starlette:
    version = "0.3" if v03 else "1.0"
    interface = (
        AgentInterface(url=url, protocol_binding="HTTP+JSON", protocol_version="1.0")
        if rest
        else AgentInterface(url=url + "/", protocol_binding="JSONRPC", protocol_version=version)
    )
    card = sdk_card(interface)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    served = create_rest_routes(handler) if rest else create_jsonrpc_routes(handler, "/", enable_v0_3_compat=v03)
    routes = [*create_agent_card_routes(card), *served]
    return Starlette(routes=routes)


@contextmanager
def serve_sdk_agent(*, v03: bool = False, rest: bool = False) -> Iterator[tuple[str, SdkAgent]]:
    """The a2a-sdk agent on a loopback port: its base URL and its executor."""
    port = free_port()
    executor = SdkAgent()
    with serve_app(sdk_app(executor, f"http://127.0.0.1:{port}", v03=v03, rest=rest), port=port) as url:
        yield url, executor


def sdk_grpc_app(executor: SdkAgent, grpc_port: int) -> Starlette:
    """The card over HTTP, offering only gRPC; the SDK's gRPC server on ``grpc_port`` for the app's lifespan."""
    import grpc
    from a2a.server.request_handlers import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    card = sdk_card(AgentInterface(url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"))
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        server.add_insecure_port(f"127.0.0.1:{grpc_port}")
        await server.start()
        try:
            yield
        finally:
            await server.stop(None)

    return Starlette(routes=create_agent_card_routes(card), lifespan=lifespan)


@contextmanager
def serve_sdk_grpc_agent() -> Iterator[tuple[str, SdkAgent]]:
    """The a2a-sdk agent over gRPC only, on loopback ports: the base URL of its card and its executor."""
    executor = SdkAgent()
    with serve_app(sdk_grpc_app(executor, free_port())) as url:
        yield url, executor
