"""@tool: JSON schema from type hints and docstrings, argument validation, invocation."""

from __future__ import annotations

import enum
import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from gateway.models import ToolSpec
from gateway.tools import FunctionTool, Tool, ToolArgumentError, ToolResult, as_tool, tool

pytestmark = pytest.mark.anyio


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Address(BaseModel):
    """A postal address."""

    street: str
    zip_code: str


class Category(BaseModel):
    name: str
    children: list[Category] = []


@tool
def create_ticket(
    title: str,
    count: int,
    ratio: float,
    urgent: bool,
    tags: list[str],
    extra: dict,
    note: str | None,
    assignee: str | None = None,
    channel: Literal["email", "phone"] = "email",
    priority: Priority = Priority.LOW,
    address: Address | None = None,
    context_variables: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Open a support ticket
    for a customer.

    Longer explanation that must not reach the model.

    Args:
        title: Short summary of the problem,
            shown in the queue.
        count (int): How many items are affected.
        urgent: Whether to page someone.

    Returns:
        The created ticket.
    """
    return {"title": title, "priority": priority, "address": address}


def test_schema_covers_every_supported_type() -> None:
    properties = create_ticket.parameters["properties"]
    assert properties["title"] == {"type": "string", "description": "Short summary of the problem, shown in the queue."}
    assert properties["count"] == {"type": "integer", "description": "How many items are affected."}
    assert properties["ratio"] == {"type": "number"}
    assert properties["urgent"] == {"type": "boolean", "description": "Whether to page someone."}
    assert properties["tags"] == {"type": "array", "items": {"type": "string"}}
    assert properties["extra"] == {"type": "object", "additionalProperties": True}
    assert properties["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert properties["assignee"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert properties["channel"] == {"type": "string", "enum": ["email", "phone"], "default": "email"}
    assert properties["priority"] == {"type": "string", "enum": ["low", "high"], "default": "low"}
    assert properties["address"] == {
        "anyOf": [
            {
                "type": "object",
                "description": "A postal address.",
                "properties": {"street": {"type": "string"}, "zip_code": {"type": "string"}},
                "required": ["street", "zip_code"],
            },
            {"type": "null"},
        ],
        "default": None,
    }
    assert "$defs" not in create_ticket.parameters


def test_defaults_make_parameters_optional_and_context_is_hidden() -> None:
    assert create_ticket.parameters["type"] == "object"
    assert create_ticket.parameters["required"] == ["title", "count", "ratio", "urgent", "tags", "extra", "note"]
    assert "context_variables" not in create_ticket.parameters["properties"]
    assert create_ticket.takes_context


def test_description_is_the_first_docstring_paragraph() -> None:
    assert create_ticket.name == "create_ticket"
    assert create_ticket.description == "Open a support ticket for a customer."


def test_spec_is_the_openai_shape() -> None:
    spec = create_ticket.spec
    assert spec == ToolSpec("create_ticket", "Open a support ticket for a customer.", create_ticket.parameters)
    assert spec.to_openai()["function"]["name"] == "create_ticket"


def test_decorator_options_override_name_and_description() -> None:
    @tool(name="find-order", description="Find an order by id.")
    def lookup(order_id: str) -> str:
        """Ignored docstring."""
        return order_id

    assert isinstance(lookup, FunctionTool)
    assert (lookup.name, lookup.description) == ("find-order", "Find an order by id.")
    assert lookup("ORD-1") == "ORD-1"


def test_no_docstring_gives_an_empty_description_and_no_parameter_docs() -> None:
    @tool
    def ping(host: str) -> str:
        return host

    assert ping.description == ""
    assert ping.parameters == {"type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]}


def test_docstring_that_starts_with_args_has_no_summary() -> None:
    @tool
    def ping(host: str) -> str:
        """Args:
        host: Where to send the ping.
        """
        return host

    assert ping.description == ""


def test_recursive_models_keep_their_definitions() -> None:
    @tool
    def file_under(category: Category) -> str:
        """File a ticket under a category tree."""
        return category.name

    schema = file_under.parameters
    assert schema["properties"]["category"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}
    assert schema["$defs"]["Category"]["required"] == ["name"]


def test_parameters_named_like_basemodel_attributes_work() -> None:
    @tool
    def export(json: str, schema: int = 1, model_config: bool = False) -> str:
        """Export data."""
        return f"{json}-{schema}-{model_config}"

    assert list(export.parameters["properties"]) == ["json", "schema", "model_config"]


async def test_invoke_coerces_and_builds_rich_values() -> None:
    result = await create_ticket.invoke(
        {
            "title": "Broken",
            "count": "3",
            "ratio": 0.5,
            "urgent": "true",
            "tags": [],
            "extra": {},
            "note": None,
            "priority": "high",
            "address": {"street": "Main 1", "zip_code": "1000"},
            "unexpected": "ignored",
        },
        {},
    )
    assert result["priority"] is Priority.HIGH
    assert result["address"] == Address(street="Main 1", zip_code="1000")


async def test_context_variables_are_injected_not_taken_from_the_model() -> None:
    @tool
    def whoami(greeting: str, context_variables: dict[str, Any]) -> str:
        """Greet the current user."""
        context_variables["greeted"] = True
        return f"{greeting}, {context_variables['user']}"

    context = {"user": "Ada"}
    result = await whoami.invoke({"greeting": "Hi", "context_variables": {"user": "Mallory"}}, context)
    assert result == "Hi, Ada"
    assert context["greeted"] is True


async def test_sync_tools_run_in_a_worker_thread_and_async_tools_are_awaited() -> None:
    loop_thread = threading.get_ident()

    @tool
    def sync_tool() -> int:
        """Where am I."""
        return threading.get_ident()

    @tool
    async def async_tool(x: int) -> int:
        """Double it."""
        return x * 2

    assert await sync_tool.invoke({}, {}) != loop_thread
    assert await async_tool.invoke({"x": 21}, {}) == 42


async def test_sync_tool_returning_an_awaitable_is_awaited() -> None:
    async def later() -> str:
        return "done"

    @tool
    def deferred() -> Any:
        """Return a coroutine."""
        return later()

    assert await deferred.invoke({}, {}) == "done"


async def test_bad_type_names_the_parameter() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        await create_ticket.invoke(
            {"title": "x", "count": "many", "ratio": 1, "urgent": True, "tags": [], "extra": {}, "note": None}, {}
        )
    assert caught.value.parameters == ["count"]
    assert caught.value.tool_name == "create_ticket"
    assert "parameter 'count'" in str(caught.value)
    assert "'many'" in str(caught.value)


async def test_missing_and_invalid_enum_are_reported_together() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        await create_ticket.invoke(
            {"count": 1, "ratio": 1, "urgent": True, "tags": [], "extra": {}, "note": None, "priority": "urgent"}, {}
        )
    message = str(caught.value)
    assert "parameter 'title' is required but missing" in message
    assert "parameter 'priority'" in message
    assert caught.value.parameters == ["title", "priority"]


async def test_nested_errors_show_their_path() -> None:
    with pytest.raises(ToolArgumentError, match=r"parameter 'address' \(at address\.zip_code\) is required"):
        await create_ticket.invoke(
            {
                "title": "x",
                "count": 1,
                "ratio": 1,
                "urgent": True,
                "tags": [],
                "extra": {},
                "note": None,
                "address": {"street": "Main 1"},
            },
            {},
        )


async def test_unparseable_model_arguments_are_a_clear_error() -> None:
    with pytest.raises(ToolArgumentError, match="not valid JSON"):
        await create_ticket.invoke({"_raw": '{"title": "x'}, {})


async def test_positional_only_parameters_are_passed_positionally() -> None:
    @tool
    def scale(value: float, /, factor: float = 2.0) -> float:
        """Scale a value."""
        return value * factor

    assert await scale.invoke({"value": 1.5}, {}) == 3.0


async def test_as_tool_wraps_plain_functions_and_passes_tools_through() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    wrapped = as_tool(add)
    assert isinstance(wrapped, FunctionTool)
    assert wrapped.name == "add"
    assert await wrapped.invoke({"a": 1, "b": "2"}, {}) == 3
    assert as_tool(create_ticket) is create_ticket

    class RemoteTool:
        name = "remote"
        description = "A tool defined elsewhere."

        @property
        def spec(self) -> ToolSpec:
            return ToolSpec(self.name, self.description, {"type": "object", "properties": {}})

        async def invoke(self, arguments: dict[str, Any], context_variables: dict[str, Any]) -> Any:
            return "remote"

    remote = RemoteTool()
    assert isinstance(remote, Tool)
    assert as_tool(remote) is remote


def test_as_tool_rejects_what_cannot_be_a_tool() -> None:
    with pytest.raises(ValueError, match="'<lambda>' is not valid.*pass name="):
        as_tool(lambda: None)
    with pytest.raises(TypeError, match="expected a tool or a callable"):
        as_tool(42)  # type: ignore[arg-type]


class Connection:
    """Not something a model can send."""


def test_unsupported_parameter_types_fail_at_decoration() -> None:
    def query(conn: Connection) -> None:
        """Run a query."""

    with pytest.raises(TypeError, match="tool 'query' has a parameter type that cannot be described as JSON"):
        tool(query)


def test_unresolvable_hints_fail_at_decoration() -> None:
    def query(conn: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
        """Run a query."""

    with pytest.raises(TypeError, match="cannot resolve the type hints of tool 'query'"):
        tool(query)


def test_tool_result_defaults_are_independent() -> None:
    first, second = ToolResult(), ToolResult(value=1)
    first.context_variables["x"] = 1
    assert second.context_variables == {}
    assert (first.value, first.agent) == (None, None)


async def test_an_untyped_parameter_is_a_string_to_the_model_and_takes_any_value() -> None:
    def locate(place, radius=None, units: Any = "km"):  # type: ignore[no-untyped-def]
        """Find a place.

        Args:
            place: Where to look.
        """
        return (place, radius, units)

    located = tool(locate)
    assert located.parameters == {
        "type": "object",
        "properties": {
            "place": {"type": "string", "description": "Where to look."},
            "radius": {"type": "string", "default": None},
            "units": {"default": "km"},
        },
        "required": ["place"],
    }
    assert await located.invoke({"place": 12, "radius": [1]}, {}) == (12, [1], "km")
