"""The gateway's subcommands of ``switchboard``: each module adds one parser and its ``run`` function."""

from .call_cmd import add_call
from .chat_cmd import add_chat
from .events_cmd import add_events
from .gateway_cmd import add_gateway

__all__ = ["add_call", "add_chat", "add_events", "add_gateway"]
