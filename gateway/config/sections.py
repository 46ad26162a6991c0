"""What every section of the configuration file shares: unknown keys refused, values frozen, names as settings."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A section: a key it does not know is an error naming the keys it does."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def as_settings(section: BaseModel) -> dict[str, Any]:
    """A section's fields under the names of the settings it mirrors: the file says ``_secs`` where code says ``_s``."""
    return {
        name.removesuffix("_secs") + "_s" if name.endswith("_secs") else name: value
        for name, value in section.model_dump().items()
    }
