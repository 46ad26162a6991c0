"""The base model for wire types: snake_case in Python, camelCase on the wire."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """Accepts both spellings on input, emits camelCase and drops unset optionals on output."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def copied(self) -> Self:
        """A deep copy, built by pydantic's core from a dump, not by ``copy.deepcopy`` as ``model_copy(deep=True)``."""
        return self.model_validate(self.model_dump())

    def to_json(self) -> bytes:
        """``to_wire()`` as JSON, written by pydantic's serializer straight from the model."""
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_none=True)
