"""What ``MODULE:ATTR`` names: the object ``switchboard serve`` hosts, or one line saying why it cannot be had.

A target that cannot be imported (a file with a syntax error, an import that fails, an
exception while the module runs) is the user's mistake, not Switchboard's: it is reported
as a ``UsageError`` naming the file, the line and the error, without a traceback through
the command's own code and importlib.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from gateway.cli.client import UsageError
from gateway.config.python_refs import import_from_cwd

_OWN_CODE = tuple(
    str(Path(__file__).resolve().parents[2] / package) for package in ("gateway", "agent_server", "protocol")
)


def load_target(spec: str, default_attr: str | None = None) -> Any:
    """The object named by ``MODULE:ATTR``; MODULE is dotted (``examples.echo``) or a file (``examples/echo.py``)."""
    module_ref, sep, attr = spec.partition(":")
    if not sep:
        if default_attr is None:
            raise UsageError(f"{spec!r} is not MODULE:ATTR (e.g. examples.echo:agent or examples/echo.py:agent)")
        attr = default_attr
    if not module_ref or not attr:
        raise UsageError(f"{spec!r} is not MODULE:ATTR (e.g. examples.echo:agent or examples/echo.py:agent)")
    try:
        module = _import_module(module_ref)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(f"cannot import {module_ref}: {import_failure(exc)}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            public = sorted(name for name in vars(module) if not name.startswith("_"))
            raise UsageError(f"{module_ref} has no attribute {attr!r}; it defines: {', '.join(public) or 'nothing'}")
        target = getattr(target, part)
    return target


def _import_module(ref: str) -> Any:
    if ref.endswith(".py") or "/" in ref or "\\" in ref:
        return _import_file(Path(ref))
    try:
        return import_from_cwd(ref)
    except ModuleNotFoundError as exc:
        if exc.name and ref.startswith(exc.name):
            raise UsageError(
                f"cannot import module {ref!r}: {exc} (run from the project folder, or give a file path)"
            ) from None
        raise


def _import_file(path: Path) -> Any:
    """Import a file as a module; under the working directory, by its dotted name (examples/echo.py: examples.echo)."""
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    resolved = path.resolve()
    try:
        relative = resolved.relative_to(Path.cwd().resolve())
    except ValueError:
        relative = None
    if relative is not None and all(part.isidentifier() for part in relative.with_suffix("").parts):
        return _import_module(".".join(relative.with_suffix("").parts))
    name = resolved.stem if resolved.stem.isidentifier() else "_switchboard_target"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(resolved.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def import_failure(exc: BaseException) -> str:
    """``FILE, line N: Type: message`` for an exception raised while a module was imported.

    A syntax error names where the parser stopped; anything else the outermost line of the
    user's code it went through (the agent file's own line, not importlib's or ours).
    """
    if isinstance(exc, SyntaxError):
        where = f"{_shown(exc.filename)}, line {exc.lineno}: " if exc.filename else ""
        return f"{where}SyntaxError: {exc.msg}"
    frame = _first_user_frame(exc.__traceback__)
    where = f"{frame[0]}, line {frame[1]}: " if frame is not None else ""
    return f"{where}{type(exc).__name__}: {exc}"


def _first_user_frame(tb: TracebackType | None) -> tuple[str, int] | None:
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith(("<", *_OWN_CODE)):
            return _shown(filename), tb.tb_lineno
        tb = tb.tb_next
    return None


def _shown(filename: str) -> str:
    """A path under the working directory relative to it, as the user typed it."""
    try:
        return str(Path(filename).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return filename
