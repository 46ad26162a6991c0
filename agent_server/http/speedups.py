"""The event loop and the HTTP parser a server runs on: uvloop and httptools come with the ``speed`` extra.

Cheap to import, unlike the server: the commands' options and the gateway's configuration name these.
"""

from __future__ import annotations

import importlib.util
from typing import Literal

EventLoop = Literal["auto", "asyncio", "uvloop"]
"""``auto`` (the default): uvloop when it is installed, else asyncio."""
HttpParser = Literal["h11", "httptools"]
"""h11 (the default) or httptools (faster); the limits and fuzz suites (tests/agent_server/http/test_server_limits.py,
tests/e2e/test_fuzz_servers.py) run on both."""
EVENT_LOOPS: tuple[EventLoop, ...] = ("auto", "asyncio", "uvloop")
HTTP_PARSERS: tuple[HttpParser, ...] = ("h11", "httptools")
DEFAULT_LOOP: EventLoop = "auto"
DEFAULT_HTTP: HttpParser = "h11"


def not_installed(*choices: EventLoop | HttpParser) -> str | None:
    """Why a server cannot run on these (its loop, its parser) here, said for a person; None when it can."""
    for module in choices:
        if module in ("uvloop", "httptools") and not _installed(module):
            return f"{module} is not installed: pip install 'a2a-switchboard[speed]'"
    return None


def on_uvloop(loop: EventLoop) -> bool:
    return loop == "uvloop" or (loop == "auto" and _installed("uvloop"))


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
