"""The subcommands of ``switchboard``: each module adds one parser and its ``run`` function (see gateway/cli.py)."""

from .call_cmd import add_call
from .chat_cmd import add_chat
from .events_cmd import add_events
from .gateway_cmd import add_gateway
from .serve_cmd import add_serve

__all__ = ["add_call", "add_chat", "add_events", "add_gateway", "add_serve"]
