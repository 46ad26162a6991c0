"""The import graph: no cycle anywhere in the three packages, and the layers point one way only.

protocol <- agent_server <- gateway: nothing in protocol imports the other two, nothing in
agent_server imports gateway. Every import counts, also one inside a function or under
``TYPE_CHECKING`` (a cycle hidden there is still a cycle a reader has to hold in mind).
An import of ``package.module`` depends on that module, not on the packages around it.
And what an import costs: a program that drives a ``Gateway`` does not load the HTTP clients
and SDKs it has not used yet, and ``switchboard --help`` loads none of the libraries a command runs on.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "agent_server", "gateway")
LAYERS = {"protocol": set(), "agent_server": {"protocol"}, "gateway": {"protocol", "agent_server"}}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
                ]
            graph[name].update(target for target in targets if target in modules and target != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_through_others() -> None:
    graph = _graph()
    assert len(graph) > 60
    assert _cycles(graph) == []


def test_the_layers_point_one_way() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in targets
        if target.split(".")[0] not in LAYERS[module.split(".")[0]] | {module.split(".")[0]}
    ]
    assert wrong == []


def test_a_cycle_is_found_when_there_is_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_program_that_drives_a_gateway_loads_no_http_client_or_sdk_it_has_not_used() -> None:
    """aiohttp comes with the first Gateway, httpx with a model provider, MCP with an MCP target: not at import."""
    heavy = ("aiohttp", "httpx", "httpx2", "mcp")
    script = f"import sys; from gateway import Gateway; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "[]"
    script = "import sys; from gateway import Gateway; Gateway(); print('aiohttp' in sys.modules)"
    made = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert made.stdout.strip() == "True"


def test_the_help_of_switchboard_and_of_each_command_loads_no_library_a_command_runs_on() -> None:
    """pydantic, starlette and the rest come with the command that runs, not with its help."""
    heavy = ("aiohttp", "anyio", "httpx", "mcp", "pydantic", "starlette", "uvicorn")
    helps = [["--help"], *([command, "--help"] for command in ("serve", "gateway", "call", "chat", "events"))]
    script = (
        "import contextlib, io, sys\n"
        "from gateway.cli.main import main\n"
        f"for argv in {helps!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
        "        main(argv)\n"
        "    assert 'usage: switchboard' in out.getvalue(), argv\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "[]"


def test_grpc_loads_only_with_a_grpc_binding() -> None:
    """grpcio and the a2a-sdk (the grpc extra) come with a gRPC port or a gRPC agent, not with a server, a gateway
    or a help."""
    script = (
        "import contextlib, io, sys\n"
        "from gateway.cli.main import main\n"
        "for argv in (['--help'], ['serve', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main(argv)\n"
        "from agent_server import create_app\n"
        "from agent_server.testing import scripted_agent\n"
        "from gateway import Gateway\n"
        "create_app(scripted_agent()); Gateway()\n"
        "print(sorted(m for m in ('grpc', 'a2a', 'google.protobuf') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "[]"
