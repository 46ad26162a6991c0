"""The smallest agent: it answers with what it was told.

switchboard serve examples/echo.py:agent --port 8001
"""

from __future__ import annotations

from agent_server import HostedAgent, TaskContext, create_app


async def echo(ctx: TaskContext) -> str:
    """Repeats the text of the message it receives."""
    return ctx.text


agent = HostedAgent(
    name="echo",
    handler=echo,
    description="Repeats the text of the message it receives.",
    skills=[{"id": "echo", "name": "Echo", "description": "Answers with the input text."}],
)
app = create_app(agent)
