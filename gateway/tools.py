"""Plain Python functions as tools a model can call.

``@tool`` reads the function's signature, type hints and Google-style docstring once and
builds the JSON schema the model sees; ``invoke`` checks the model's arguments against
the same pydantic model, so the schema and the validation can never disagree. A parameter
without a type is described as a string, as OpenAI swarm's ``function_to_json`` does (a
model offered a parameter of no type has nothing to go on), and takes whatever the model
sends: the function said nothing about it, so nothing is refused on its behalf.

What a tool returns is interpreted by the runner: a plain value becomes the tool result,
an Agent means "transfer the conversation to this agent", and a ``ToolResult`` carries a
value, an optional agent and context-variable updates together.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, overload, runtime_checkable

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, ValidationError, WithJsonSchema, create_model

from gateway.errors import ToolArgumentError
from gateway.models.base import RAW_ARGUMENTS_KEY, ToolSpec

CONTEXT_PARAMETER = "context_variables"
TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
"""Every tool name the gateway accepts (agent tools, function tools, configured tools). It ends in ``\\Z``:
``$`` also matches before a final newline, and a name ending in one breaks the Location header."""
TOOL_NAME_RULE = "1-64 letters, digits, '_' or '-'"
"""``TOOL_NAME_PATTERN`` in words, for error messages."""

_UNTYPED = Annotated[Any, WithJsonSchema({"type": "string"})]
"""What a parameter without a type hint is: described as a string, any value accepted."""

_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SECTION_HEADER = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")


@dataclass
class ToolResult:
    """A tool's answer with side effects: ``agent`` asks for a transfer, ``context_variables`` are merged in."""

    value: Any = None
    agent: Any = None
    context_variables: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Tool(Protocol):
    """Anything the runner can offer to a model and call: FunctionTool, agent-tools, MCP tools."""

    name: str
    description: str

    @property
    def spec(self) -> ToolSpec: ...

    async def invoke(self, arguments: dict[str, Any], context_variables: dict[str, Any]) -> Any: ...


class FunctionTool:
    """A Python function with the JSON schema of its parameters; still callable as the function."""

    def __init__(self, func: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> None:
        if not callable(func):
            raise TypeError(f"a tool must be callable, got {type(func).__name__}")
        self.func = func
        self.name = name or _callable_name(func)
        if not TOOL_NAME_PATTERN.match(self.name):
            raise ValueError(f"tool name {self.name!r} is not valid ({TOOL_NAME_RULE}); pass name= to @tool")
        doc = inspect.getdoc(func) or ""
        self.description = description if description is not None else _summary(doc)
        signature = inspect.signature(func)
        self.takes_context = CONTEXT_PARAMETER in signature.parameters
        self._parameters = [
            p
            for p in signature.parameters.values()
            if p.name != CONTEXT_PARAMETER and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        hints = _type_hints(func, self.name)
        self._arguments_model = _arguments_model(self.name, self._parameters, hints, _arg_docs(doc))
        self.parameters: dict[str, Any] = _tidy_schema(self._arguments_model.model_json_schema())
        self._is_async = _is_async(func)
        if inspect.isroutine(func):
            functools.update_wrapper(self, func)

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool(name={self.name!r})"

    async def invoke(self, arguments: dict[str, Any], context_variables: dict[str, Any] | None = None) -> Any:
        """Validate and coerce ``arguments``, then run the function (sync ones in a worker thread)."""
        arguments = dict(arguments or {})
        arguments.pop(CONTEXT_PARAMETER, None)
        if RAW_ARGUMENTS_KEY in arguments and all(p.name != RAW_ARGUMENTS_KEY for p in self._parameters):
            raw = str(arguments[RAW_ARGUMENTS_KEY])[:200]
            message = f"invalid arguments for tool '{self.name}': they were not valid JSON: {raw!r}"
            raise ToolArgumentError(self.name, message, [])
        try:
            validated = self._arguments_model.model_validate(arguments)
        except ValidationError as exc:
            raise _argument_error(self.name, exc) from exc
        positional: list[Any] = []
        keyword: dict[str, Any] = {}
        for index, parameter in enumerate(self._parameters):
            value = getattr(validated, _field_name(index))
            if parameter.kind == parameter.POSITIONAL_ONLY:
                positional.append(value)
            else:
                keyword[parameter.name] = value
        if self.takes_context:
            keyword[CONTEXT_PARAMETER] = context_variables if context_variables is not None else {}
        if self._is_async:
            result = await self.func(*positional, **keyword)
        else:
            result = await anyio.to_thread.run_sync(functools.partial(self.func, *positional, **keyword))
        if inspect.isawaitable(result):
            result = await result
        return result


@overload
def tool(func: Callable[..., Any], /, *, name: str | None = None, description: str | None = None) -> FunctionTool: ...


@overload
def tool(
    func: None = None, /, *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    func: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function into a FunctionTool; use bare (``@tool``) or with options (``@tool(name=...)``)."""
    if func is None:
        return lambda f: FunctionTool(f, name=name, description=description)
    return FunctionTool(func, name=name, description=description)


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    """What the runner calls on each entry of an agent's tool list: tools pass through, callables are wrapped."""
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return FunctionTool(obj)
    raise TypeError(f"expected a tool or a callable, got {type(obj).__name__}")


def _field_name(index: int) -> str:
    """Internal field names, so parameters like ``json`` or ``model_x`` cannot clash with BaseModel."""
    return f"p{index}"


def _arguments_model(
    tool_name: str, parameters: list[inspect.Parameter], hints: dict[str, Any], docs: dict[str, str]
) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for index, parameter in enumerate(parameters):
        annotation = hints.get(parameter.name, _UNTYPED)
        default = ... if parameter.default is parameter.empty else parameter.default
        field = Field(default, alias=parameter.name, description=docs.get(parameter.name))
        fields[_field_name(index)] = (annotation, field)
    try:
        model = create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="ignore"), **fields)
        model.model_json_schema()
    except (PydanticUserError, TypeError) as exc:
        raise TypeError(f"tool '{tool_name}' has a parameter type that cannot be described as JSON: {exc}") from exc
    return model


def _argument_error(tool_name: str, exc: ValidationError) -> ToolArgumentError:
    problems: list[str] = []
    names: list[str] = []
    for error in exc.errors():
        location = [str(part) for part in error["loc"]]
        parameter = location[0] if location else "?"
        if parameter not in names:
            names.append(parameter)
        where = f"parameter '{parameter}'" + (f" (at {'.'.join(location)})" if len(location) > 1 else "")
        if error["type"] == "missing":
            problems.append(f"{where} is required but missing")
        else:
            problems.append(f"{where}: {error['msg']} (got {error.get('input')!r})")
    return ToolArgumentError(tool_name, f"invalid arguments for tool '{tool_name}': " + "; ".join(problems), names)


def _callable_name(func: Callable[..., Any]) -> str:
    if isinstance(func, functools.partial):
        return _callable_name(func.func)
    return getattr(func, "__name__", None) or type(func).__name__


def _hint_target(func: Callable[..., Any]) -> Any:
    if isinstance(func, functools.partial):
        return _hint_target(func.func)
    if inspect.isroutine(func) or inspect.isclass(func):
        return func
    return type(func).__call__


def _type_hints(func: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(_hint_target(func), include_extras=True)
    except Exception as exc:
        raise TypeError(f"cannot resolve the type hints of tool '{tool_name}': {exc}") from exc


def _is_async(func: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(func):
        return True
    instance: Any = func  # a callable object: its __call__ may be async
    return not inspect.isroutine(func) and inspect.iscoroutinefunction(instance.__call__)


def _summary(doc: str) -> str:
    """The docstring's first paragraph, on one line (empty when the docstring starts with a section)."""
    first = doc.strip().split("\n\n", 1)[0].strip()
    if not first or _SECTION_HEADER.match(first.splitlines()[0].strip()):
        return ""
    return " ".join(line.strip() for line in first.splitlines())


def _arg_docs(doc: str) -> dict[str, str]:
    """Per-parameter descriptions from a Google-style ``Args:`` section."""
    docs: dict[str, str] = {}
    header_indent: int | None = None
    item_indent: int | None = None
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if header_indent is None:
            if _ARGS_HEADER.match(stripped):
                header_indent, item_indent, current = indent, None, None
            continue
        if not stripped:
            continue
        if indent <= header_indent:
            header_indent = indent if _ARGS_HEADER.match(stripped) else None
            item_indent, current = None, None
            continue
        if item_indent is None:
            item_indent = indent
        match = _ARG_LINE.match(stripped)
        if indent <= item_indent and match:
            current = match.group(1)
            docs[current] = match.group(2).strip()
        elif current is not None:
            docs[current] = f"{docs[current]} {stripped}".strip()
    return docs


def _tidy_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles and inline ``$defs`` (kept only for recursive types); small providers choke on refs."""
    defs = schema.pop("$defs", {})
    kept: dict[str, Any] = {}
    tidy: dict[str, Any] = _tidy(schema, defs, (), kept)
    if kept:
        tidy["$defs"] = kept
    return tidy


def _tidy(node: Any, defs: dict[str, Any], stack: tuple[str, ...], kept: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_tidy(item, defs, stack, kept) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        siblings = _tidy({k: v for k, v in node.items() if k != "$ref"}, defs, stack, kept)
        if name in stack:
            if name not in kept:
                kept[name] = {}
                kept[name] = _tidy(defs[name], defs, (name,), kept)
            return {"$ref": ref, **siblings}
        return {**_tidy(defs[name], defs, (*stack, name), kept), **siblings}
    tidied: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "patternProperties") and isinstance(value, dict):
            tidied[key] = {k: _tidy(v, defs, stack, kept) for k, v in value.items()}
        elif key in ("default", "enum", "const", "examples", "required"):
            tidied[key] = value
        else:
            tidied[key] = _tidy(value, defs, stack, kept)
    return tidied
