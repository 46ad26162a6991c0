"""Every route of the gateway API against real servers on loopback, with its error cases."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from protocol import MAX_LISTED_PROBLEMS
from tests.support.gateway_service import client, error_of, gateway_server, lines_of, triage_service


@pytest.fixture(scope="module")
def api(scripted_url: str) -> Iterator[httpx.Client]:
    with gateway_server(triage_service()) as url, client(url) as http:
        yield http


def test_health_says_ok_and_counts_agents_and_tools(api: httpx.Client) -> None:
    response = api.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["starting_agent"] == "triage" and body["agents"] >= 1


def test_the_index_lists_the_endpoints(api: httpx.Client) -> None:
    assert "POST /sessions/{id}/messages" in api.get("/").json()["endpoints"]


def test_register_list_get_and_remove_an_agent_by_url(api: httpx.Client, scripted_url: str) -> None:
    created = api.post("/agents", json={"url": scripted_url, "name": "helper", "description": "Helps with tests."})
    assert created.status_code == 201, created.text
    info = created.json()
    assert info["name"] == "helper" and info["kind"] == "remote" and info["url"] == scripted_url
    assert info["card"]["name"] == "scripted" and info["handoff_from"] == ["triage"]
    assert created.headers["location"] == "/agents/helper"
    listed = {a["name"]: a for a in api.get("/agents").json()["agents"]}
    assert "helper" in listed["triage"]["handoffs"] and listed["triage"]["starting"] is True
    assert api.get("/agents/helper").json()["description"] == "Helps with tests."

    removed = api.delete("/agents/helper")
    assert removed.status_code == 200 and removed.json() == {"removed": "helper", "url": scripted_url}
    listed = {a["name"]: a for a in api.get("/agents").json()["agents"]}
    assert "helper" not in listed and "helper" not in listed["triage"]["handoffs"]


def test_registering_without_handoff_sources_adds_no_transfer(api: httpx.Client, scripted_url: str) -> None:
    created = api.post("/agents", json={"url": scripted_url, "name": "loner", "handoff_from": []})
    assert created.status_code == 201 and created.json()["handoff_from"] == []
    assert "loner" in [a["name"] for a in api.get("/agents").json()["agents"]]
    assert api.delete("/agents/loner").status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "code", "fragment"),
    [
        ({"url": "ftp://127.0.0.1:1"}, 400, -32602, "'ftp://127.0.0.1:1' is not an http:// or https:// URL"),
        ({"url": "http://"}, 400, -32602, "invalid agent URI 'http://': it names no host"),
        (
            {"url": "http://127.0.0.1:1"},
            502,
            -32012,
            "cannot fetch the agent card from http://127.0.0.1:1: cannot reach",
        ),
        ({}, 400, -32602, "invalid body: url: is required"),
        ({"url": 5}, 400, -32602, "invalid body: url: Input should be a valid string (got 5)"),
        (
            {"url": "http://x", "nmae": "a"},
            400,
            -32602,
            "invalid body: nmae: unknown key 'nmae' (expected one of: url, name",
        ),
        ({"url": "http://x", "name": "a/b"}, 400, -32602, "invalid body: name: agent name 'a/b' may not contain '/'"),
        (
            {"url": "http://127.0.0.1:1", "handoff_from": ["ghost"]},
            400,
            -32602,
            "handoff_from names 'ghost', which is not a local agent",
        ),
        ({"url": "http://127.0.0.1:1", "name": "triage"}, 409, -32011, "an agent named 'triage' is already registered"),
    ],
)
def test_registering_refuses_bad_bodies_and_unreachable_agents(
    api: httpx.Client, body: dict[str, object], status: int, code: int, fragment: str
) -> None:
    response = api.post("/agents", json=body)
    assert response.status_code == status
    error = error_of(response)
    assert error["code"] == code and fragment in error["message"], error


def test_a_body_with_thousands_of_bad_values_is_refused_in_a_few_lines(api: httpx.Client) -> None:
    """Every bad value was named, in the message and again in data: megabytes for a body under the limit."""
    names = api.post("/agents", json={"url": "http://127.0.0.1:1", "handoff_from": list(range(100_000))})
    assert names.status_code == 400 and [p["field"] for p in error_of(names)["data"]] == ["handoff_from[0]"]
    keys = api.post("/tools", json={"name": "t1", "agent": "http://127.0.0.1:9", **{f"k{i}": i for i in range(1000)}})
    error = error_of(keys)
    assert keys.status_code == 400 and len(error["data"]) == MAX_LISTED_PROBLEMS
    assert error["message"].endswith(f"; and {1000 - MAX_LISTED_PROBLEMS} more")


def test_a_duplicate_name_from_the_card_is_refused_after_the_fetch(api: httpx.Client, scripted_url: str) -> None:
    assert api.post("/agents", json={"url": scripted_url}).status_code == 201
    again = api.post("/agents", json={"url": scripted_url})
    assert again.status_code == 409 and "'scripted' is already registered" in error_of(again)["message"]
    assert api.delete("/agents/scripted").status_code == 200


def test_malformed_json_wrong_content_type_and_a_body_that_is_no_object(api: httpx.Client) -> None:
    broken = api.post("/agents", content=b"{nope", headers={"content-type": "application/json"})
    assert broken.status_code == 400 and error_of(broken)["code"] == -32700
    form = api.post("/agents", content=b"url=x", headers={"content-type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415 and "Content-Type: application/json" in error_of(form)["message"]
    listing = api.post("/agents", json=["http://x"])
    assert listing.status_code == 400 and "must be a JSON object, got an array" in error_of(listing)["message"]
    null = api.post("/agents", content=b"null", headers={"content-type": "application/json"})
    assert null.status_code == 400 and error_of(null)["message"] == "request body must be a JSON object, got null"
    huge = api.post("/sessions/s1/messages", json={"message": "x" * (1 << 20)})
    assert huge.status_code == 413 and "larger than the limit of 1048576 bytes" in error_of(huge)["message"]


def test_removing_refuses_unknown_and_local_agents(api: httpx.Client) -> None:
    unknown = api.delete("/agents/ghost")
    assert unknown.status_code == 404 and error_of(unknown)["message"].startswith("no agent named 'ghost' (agents: ")
    local = api.delete("/agents/triage")
    assert local.status_code == 409 and "is a local agent" in error_of(local)["message"]
    assert api.get("/agents/ghost").status_code == 404


def test_define_list_get_and_remove_an_agent_tool(api: httpx.Client, scripted_url: str) -> None:
    body = {"name": "ask", "agent": scripted_url, "mode": "conversational", "max_turns": 2, "attach_to": ["triage"]}
    created = api.post("/tools", json=body)
    assert created.status_code == 201, created.text
    info = created.json()
    assert (info["mode"], info["max_turns"], info["used_by"]) == ("conversational", 2, ["triage"])
    assert "ask" in [t["name"] for t in api.get("/tools").json()["tools"]]
    assert "ask" in api.get("/agents/triage").json()["tools"]
    assert api.get("/tools/ask").json()["agent"] == scripted_url
    assert api.delete("/tools/ask").json() == {"removed": "ask"}
    assert "ask" not in api.get("/agents/triage").json()["tools"]
    assert api.get("/tools/ask").status_code == 404


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (
            {"name": "t1", "agent": "http://127.0.0.1:9", "mode": "fast"},
            400,
            "mode: unknown mode 'fast' (expected sync, streaming, conversational)",
        ),
        ({"name": "t1", "agent": "gopher://x"}, 400, "agent: invalid agent URI 'gopher://x'"),
        ({"name": "no spaces", "agent": "http://127.0.0.1:9"}, 400, "name: tool name 'no spaces' is not valid"),
        (
            {"name": "t1", "agent": "http://127.0.0.1:9", "max_cost_usd": -1},
            400,
            "max_cost_usd: Input should be greater than or equal to 0",
        ),
        (
            {"name": "t1", "agent": "http://127.0.0.1:9", "attach_to": ["ghost"]},
            400,
            "attach_to names 'ghost', which is not a local agent",
        ),
    ],
)
def test_defining_a_tool_refuses_bad_bodies(
    api: httpx.Client, body: dict[str, object], status: int, fragment: str
) -> None:
    response = api.post("/tools", json=body)
    assert response.status_code == status and fragment in error_of(response)["message"], response.text
    assert api.get("/tools/t1").status_code == 404


def test_a_tool_name_or_session_id_ending_in_a_newline_is_refused_and_leaves_nothing(
    api: httpx.Client, scripted_url: str
) -> None:
    """``$`` also matches before a final newline: such names were taken, then broke the answer's headers."""
    tool = api.post("/tools", json={"name": "nl\n", "agent": scripted_url})
    assert tool.status_code == 400 and "tool name 'nl\\n' is not valid" in error_of(tool)["message"]
    assert api.get("/tools/nl%0A").status_code == 404
    turn = api.post("/sessions/nl%0A/messages", json={"message": "hi", "stream": False})
    assert turn.status_code == 400 and "session id 'nl\\n' is not valid" in error_of(turn)["message"]
    assert "nl\n" not in [run["session_id"] for run in api.get("/runs").json()["runs"]]


def test_a_duplicate_tool_is_a_conflict_and_unknown_tools_are_not_found(api: httpx.Client, scripted_url: str) -> None:
    assert api.post("/tools", json={"name": "dup", "agent": scripted_url}).status_code == 201
    again = api.post("/tools", json={"name": "dup", "agent": scripted_url})
    assert again.status_code == 409 and error_of(again)["code"] == -32011
    assert api.delete("/tools/dup").status_code == 200
    assert api.delete("/tools/dup").status_code == 404
    called = api.post("/tools/dup/call", json={"input": "echo hi"})
    assert called.status_code == 404 and "no agent tool named 'dup'" in error_of(called)["message"]
    streamed = api.post("/tools/dup/call", json={"input": "echo hi", "stream": True})
    assert streamed.status_code == 404


def test_calling_a_tool_sync_answers_json_with_the_run_id(api: httpx.Client, scripted_url: str) -> None:
    api.post("/tools", json={"name": "echo_sync", "agent": scripted_url})
    response = api.post("/tools/echo_sync/call", json={"input": "echo hello gateway"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["result"]["text"] == "hello gateway" and body["result"]["state"] == "completed"
    assert response.headers["x-run-id"] == body["run_id"] == body["result"]["run_id"]
    events = lines_of(api.get(f"/runs/{body['run_id']}/events"))
    assert [e["type"] for e in events] == ["agent_tool_invoked", "agent_tool_completed"]


def test_calling_a_tool_streaming_answers_its_events_as_ndjson(api: httpx.Client, scripted_url: str) -> None:
    api.post("/tools", json={"name": "streamer", "agent": scripted_url, "mode": "streaming"})
    response = api.post("/tools/streamer/call", json={"input": "stream 3 0.01 0.002", "stream": True})
    assert response.status_code == 200 and response.headers["content-type"] == "application/x-ndjson"
    events = lines_of(response)
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "agent_tool_invoked" and events[-1]["type"] == "agent_tool_completed"
    assert {e["run_id"] for e in events} == {response.headers["x-run-id"]}
    artifacts = [e for e in events if e["type"] == "agent_tool_progress" and e.get("kind") == "artifact"]
    assert [e["accumulated_cost_usd"] for e in artifacts] == pytest.approx([0.002, 0.004, 0.006])


def test_a_failed_sync_call_is_502_with_the_partial_result_and_a_timeout_504(
    api: httpx.Client, scripted_url: str
) -> None:
    api.post("/tools", json={"name": "capped", "agent": scripted_url, "mode": "streaming", "max_cost_usd": 0.0015})
    capped = api.post("/tools/capped/call", json={"input": "stream 5 0.01 0.001"})
    assert capped.status_code == 502
    error = error_of(capped)
    assert error["code"] == -32013 and error["data"]["reason"] == "budget_exceeded"
    assert error["data"]["partial"]["text"] == "chunk-0 " and error["data"]["run_id"]
    api.post("/tools", json={"name": "slow", "agent": scripted_url, "timeout_ms": 200})
    slow = api.post("/tools/slow/call", json={"input": "sleep 5"})
    assert slow.status_code == 504 and error_of(slow)["data"]["reason"] == "timeout"


@pytest.mark.parametrize("value", [42, None, ["a"]])
def test_a_tool_call_refuses_a_bad_input_with_one_reason(api: httpx.Client, scripted_url: str, value: object) -> None:
    api.post("/tools", json={"name": "picky", "agent": scripted_url})
    response = api.post("/tools/picky/call", json={"input": value})
    assert response.status_code == 400
    assert error_of(response)["message"] == (
        f"invalid body: input: must be a string (the message text) or a JSON object (a data part), got {value!r}"
    )


def test_a_tool_whose_agent_is_down_fails_with_the_run_to_read(api: httpx.Client) -> None:
    api.post("/tools", json={"name": "down", "agent": "http://127.0.0.1:1"})
    response = api.post("/tools/down/call", json={"input": "hi"})
    assert response.status_code == 502
    error = error_of(response)
    assert error["data"]["reason"] == "connection_error" and "cannot reach http://127.0.0.1:1" in error["message"]
    events = lines_of(api.get(f"/runs/{error['data']['run_id']}/events"))
    assert [e["type"] for e in events] == ["agent_tool_invoked", "agent_tool_error"]


def test_a_message_streams_the_runs_events_and_the_session_keeps_them(api: httpx.Client) -> None:
    response = api.post(
        "/sessions/s-basic/messages", json={"message": "hello there", "context_variables": {"tier": "gold"}}
    )
    assert response.status_code == 200 and response.headers["content-type"] == "application/x-ndjson"
    events = lines_of(response)
    run_id = response.headers["x-run-id"]
    assert response.headers["x-session-id"] == "s-basic"
    assert [e["seq"] for e in events] == list(range(len(events))) and {e["run_id"] for e in events} == {run_id}
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_completed"
    assert "hello there" in events[-1]["content"]
    session = api.get("/sessions/s-basic").json()
    assert session["active_agent"] == "triage" and session["context_variables"] == {"tier": "gold"}
    assert session["history"][0] == {"role": "user", "content": "hello there"}
    runs = {r["run_id"]: r for r in api.get("/runs").json()["runs"]}
    assert runs[run_id]["session_id"] == "s-basic" and runs[run_id]["closed"] is True


def test_a_message_with_stream_false_answers_one_json_summary(api: httpx.Client) -> None:
    response = api.post("/sessions/s-json/messages", json={"message": "hi", "stream": False})
    assert response.status_code == 200
    body = response.json()
    assert (
        body["active_agent_name"] == "triage"
        and "hi" in body["content"]
        and body["run_id"] == response.headers["x-run-id"]
    )


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        ("/sessions/bad%20id/messages", {"message": "x"}, "session id 'bad id' is not valid"),
        ("/sessions/s1/messages", {"message": ""}, "invalid body: message: String should have at least 1 character"),
        ("/sessions/s1/messages", {"text": "x"}, "message: is required"),
        (
            "/sessions/s1/messages",
            {"message": "x", "context_variables": [1]},
            "context_variables: Input should be a valid dictionary",
        ),
    ],
)
def test_a_bad_message_is_refused(api: httpx.Client, path: str, body: dict[str, object], fragment: str) -> None:
    response = api.post(path, json=body)
    assert response.status_code == 400 and fragment in error_of(response)["message"]


def test_sessions_can_be_read_and_forgotten(api: httpx.Client) -> None:
    assert api.get("/sessions/never").status_code == 404
    api.post("/sessions/s-forget/messages", json={"message": "hi", "stream": False})
    assert api.get("/sessions/s-forget").status_code == 200
    assert api.delete("/sessions/s-forget").json() == {"deleted": "s-forget"}
    assert api.get("/sessions/s-forget").status_code == 404
    again = api.delete("/sessions/s-forget")
    assert again.status_code == 404 and error_of(again)["message"].startswith("no session 's-forget' yet")


def test_run_events_from_a_seq_and_the_errors_of_the_runs_routes(api: httpx.Client) -> None:
    run_id = api.post("/sessions/s-runs/messages", json={"message": "hi", "stream": False}).json()["run_id"]
    everything = lines_of(api.get(f"/runs/{run_id}/events"))
    later = lines_of(api.get(f"/runs/{run_id}/events", params={"after_seq": 2, "follow": "1"}))
    assert later == everything[3:] and later[-1]["type"] == "run_completed"
    missing = api.get("/runs/run_nope/events")
    assert missing.status_code == 404 and "no run 'run_nope'" in error_of(missing)["message"]
    bad_seq = api.get(f"/runs/{run_id}/events", params={"after_seq": "x"})
    assert bad_seq.status_code == 400 and "after_seq must be an integer >= -1" in error_of(bad_seq)["message"]
    bad_follow = api.get(f"/runs/{run_id}/events", params={"follow": "maybe"})
    assert bad_follow.status_code == 400
    assert api.get("/runs", params={"limit": 0}).status_code == 400
    assert len(api.get("/runs", params={"limit": 1}).json()["runs"]) == 1


def test_unknown_paths_and_methods_get_json_errors(api: httpx.Client) -> None:
    missing = api.get("/nowhere")
    assert missing.status_code == 404 and "the gateway serves GET /health" in error_of(missing)["message"]
    wrong = api.put("/agents")
    assert wrong.status_code == 405 and "PUT is not allowed on /agents" in error_of(wrong)["message"]


def test_the_gateway_serves_the_a2a_binding_on_the_same_port(api: httpx.Client) -> None:
    card = api.get("/.well-known/agent.json").json()
    assert card["name"] == "switchboard" and "triage" in [s["name"] for s in card["skills"]]
    task = api.post(
        "/tasks/send", json={"sessionId": "a2a-1", "message": {"parts": [{"text": "hello binding"}]}}
    ).json()
    assert task["status"]["state"] == "completed" and "hello binding" in task["artifacts"][0]["parts"][0]["text"]
    assert api.get("/sessions/a2a-1").json()["history"][0]["content"] == "hello binding"
    assert api.get(f"/tasks/{task['id']}").json()["id"] == task["id"]
    unknown = api.post("/tasks/get", json={"id": "nope"})
    assert unknown.status_code == 404 and error_of(unknown)["code"] == -32001


def test_a_tool_added_through_the_api_is_attached_to_the_starting_agent_unless_told(
    scripted_url: str, triage_gateway_url: str
) -> None:
    default = httpx.post(f"{triage_gateway_url}/tools", json={"name": "ask", "agent": scripted_url}, timeout=10).json()
    alone = httpx.post(
        f"{triage_gateway_url}/tools", json={"name": "alone", "agent": scripted_url, "attach_to": []}, timeout=10
    )
    tools = httpx.get(f"{triage_gateway_url}/agents/triage", timeout=10).json()["tools"]
    assert default["used_by"] == ["triage"]
    assert alone.json()["used_by"] == []
    assert "ask" in tools and "alone" not in tools
