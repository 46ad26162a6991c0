"""The subcommands of ``switchboard``: each module adds one parser and its ``run`` function (see gateway/cli.py)."""

from gateway.cli_commands.call_cmd import add_call
from gateway.cli_commands.chat_cmd import add_chat
from gateway.cli_commands.events_cmd import add_events
from gateway.cli_commands.gateway_cmd import add_gateway
from gateway.cli_commands.serve_cmd import add_serve

__all__ = ["add_call", "add_chat", "add_events", "add_gateway", "add_serve"]
