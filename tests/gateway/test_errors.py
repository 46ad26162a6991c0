"""One error tree: every error the project defines is a SwitchboardError, the tree in gateway/errors.py names
them all, and an error raised inside ``async with Gateway()`` leaves the block as itself."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import gateway.errors
from gateway import BudgetExceeded, Gateway
from gateway.service import GatewayService
from protocol import SwitchboardError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "agent_server", "gateway")


def _error_classes() -> dict[str, type[BaseException]]:
    """Every public exception class defined in the three packages, by name."""
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        for module in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            if module.name.endswith("__main__"):
                continue
            loaded = importlib.import_module(module.name)
            for name, value in vars(loaded).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == module.name
                    and not name.startswith("_")
                ):
                    found[name] = value
    return found


def test_every_error_the_project_defines_is_a_switchboard_error() -> None:
    errors = _error_classes()
    assert len(errors) >= 25
    outside = sorted(name for name, error in errors.items() if not issubclass(error, SwitchboardError))
    assert outside == []


def test_the_tree_in_gateway_errors_names_every_error() -> None:
    tree = gateway.errors.__doc__ or ""
    missing = sorted(name for name in _error_classes() if name not in tree)
    assert missing == []


@pytest.mark.anyio
async def test_an_error_raised_inside_async_with_gateway_leaves_as_itself() -> None:
    with pytest.raises(BudgetExceeded):
        async with Gateway():
            raise BudgetExceeded(1.0, 0.5)
    with pytest.raises(BudgetExceeded):
        async with GatewayService():
            raise BudgetExceeded(1.0, 0.5)
