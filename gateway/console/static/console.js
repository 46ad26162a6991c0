// The Switchboard console: reads the gateway's public HTTP API only (the same one the CLI uses).
// Views are picked by the location's hash: #/agents, #/tools, #/sessions, #/sessions/ID, #/runs, #/runs/ID, #/chat.
// Every text that comes from the gateway goes into the page as text (textContent), never as HTML.
// Management actions (register, remove, move, reset, cancel) call the same API; the gateway decides
// who may do what, and its refusal is shown as it words it, so the page holds no rules of its own.

const TOKEN_KEY = "switchboard.token";
const SVG = "http://www.w3.org/2000/svg";
const RUNS_LIMITS = [50, 200, 1000];

// -- small helpers ---------------------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") element.className = value;
    else if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

function svg(tag, attrs = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) element.setAttribute(key, String(value));
  for (const child of children) element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return element;
}

export function usd(value) {
  // Costs are shown rounded; the event log keeps full precision.
  if (typeof value !== "number" || !Number.isFinite(value)) return "–";
  return "$" + (value !== 0 && Math.abs(value) < 0.0001 ? value.toPrecision(2) : value.toFixed(4));
}

function when(ms) {
  return typeof ms === "number" ? new Date(ms).toLocaleString() : "–";
}

function short(text, width = 90) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  return flat.length <= width ? flat : flat.slice(0, width - 1) + "…";
}

function newSessionId() {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  return "console-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// -- management actions ---------------------------------------------------------------------------

let flash = null; // a line saying what the last action did, shown once on the page drawn after it

// What a failed action shows: the gateway's own words, marked as a refusal when the token lacks the scope.
function problemText(error) {
  return error.status === 403 ? `Refused by the gateway: ${error.message}` : error.message;
}

// Runs an action and shows its refusal in `problem`; once done, draws the page again (or `goTo`) with
// `done(answer)` as its notice, so what is shown is the API's state after the action, not a guess of it.
async function act(problem, call, done, goTo = null) {
  problem.textContent = "";
  try {
    const answer = await call();
    flash = done(answer);
    if (goTo && location.hash !== goTo) location.hash = goTo; // hashchange draws it
    else render();
  } catch (error) {
    problem.textContent = problemText(error);
  }
}

// A destructive action takes two clicks: the first arms the button and says what the second will do.
function armedButton(label, armedLabel, fire) {
  const button = h("button", { type: "button", class: "danger" }, label);
  button.addEventListener("click", () => {
    if (button.dataset.armed) fire();
    else {
      button.dataset.armed = "1";
      button.textContent = armedLabel;
    }
  });
  return button;
}

// The form's fields that were filled in, trimmed: a field left empty is left out, so the API's default holds.
function filled(form, names) {
  const body = {};
  for (const name of names) {
    const value = form.elements.namedItem(name).value.trim();
    if (value) body[name] = value;
  }
  return body;
}

function field(label, name, attrs = {}) {
  return h("label", {}, `${label} `, h("input", { type: "text", name, autocomplete: "off", ...attrs }));
}

// -- the API ------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { ...extra, authorization: `Bearer ${token}` } : extra;
}

async function refusal(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch {
    // not JSON: the status line says it
  }
  if (response.status === 401) askForToken("The gateway refused the token: " + message);
  return new ApiError(response.status, message);
}

async function api(path, { method = "GET", body, signal } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "content-type": "application/json" }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (!response.ok) throw await refusal(response);
  return response.json();
}

// Reads an NDJSON response line by line, calling onEvent for each object as it arrives.
async function readNdjson(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line) onEvent(JSON.parse(line));
    }
  }
  if (buffered.trim()) onEvent(JSON.parse(buffered));
}

// Follows a run: its events from the start, then live until it ends (GET /runs/{id}/events?follow=1).
async function followRun(runId, onEvent, signal) {
  const path = `/runs/${encodeURIComponent(runId)}/events?after_seq=-1&follow=1`;
  const response = await fetch(path, { headers: headers(), signal });
  if (!response.ok) throw await refusal(response);
  await readNdjson(response, onEvent);
}

// Posts a chat message; resolves with the run id as soon as the gateway has started the run.
async function postMessage(sessionId, message) {
  const response = await fetch(`/sessions/${encodeURIComponent(sessionId)}/messages`, {
    method: "POST",
    headers: headers({ "content-type": "application/json" }),
    body: JSON.stringify({ message }),
  });
  if (!response.ok) throw await refusal(response);
  const runId = response.headers.get("x-run-id");
  await response.body.cancel(); // the run page follows the run itself; the run goes on in the gateway
  return runId;
}

// -- the token ----------------------------------------------------------------------------------

function askForToken(problem = "") {
  const dialog = document.getElementById("token-dialog");
  document.getElementById("token-problem").textContent = problem;
  document.getElementById("token-input").value = "";
  if (!dialog.open) dialog.showModal();
}

function setUpToken() {
  const dialog = document.getElementById("token-dialog");
  document.getElementById("token-button").addEventListener("click", () => askForToken());
  document.getElementById("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = document.getElementById("token-input").value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    dialog.close();
    render();
  });
  document.getElementById("token-clear").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    dialog.close();
  });
}

// The card is public and says whether the gateway wants a bearer token: ask before the first refusal.
async function needsToken() {
  try {
    const response = await fetch("/.well-known/agent.json");
    const card = await response.json();
    return Boolean(card.securitySchemes && Object.keys(card.securitySchemes).length);
  } catch {
    return false;
  }
}

// -- the run model: everything the run page shows, from the events alone --------------------------

const CALL_ENDINGS = new Set(["agent_tool_completed", "agent_tool_terminated", "agent_tool_error"]);

export class RunModel {
  constructor(runId) {
    this.runId = runId;
    this.events = [];
    this.kind = null; // "turn" or "tool"
    this.sessionId = null;
    this.userMessage = null;
    this.nodes = []; // agents in the order the conversation reached them
    this.edges = []; // {source, target, hop, reason, refused}
    this.calls = new Map(); // call_id -> call
    this.agents = new Map(); // agent -> {cost, tokens: {name: n}, calls}
    this.answers = []; // {agent, text}
    this.terminations = []; // {what, reason, detail}
    this.current = null; // the agent holding the conversation now
    this.state = "running";
    this.ending = null;
    this.cancel = null; // the run_cancelled event, once a cancel was accepted
  }

  add(event) {
    this.events.push(event);
    const handler = this[`on_${event.type}`];
    if (handler) handler.call(this, event);
    this.countTokens(event);
  }

  reach(agent) {
    if (agent && !this.nodes.includes(agent)) this.nodes.push(agent);
  }

  agent(name) {
    const key = name || "(gateway)";
    if (!this.agents.has(key)) this.agents.set(key, { cost: 0, tokens: {}, calls: 0 });
    return this.agents.get(key);
  }

  on_run_started(event) {
    this.kind = "turn";
    this.sessionId = event.session_id;
    this.userMessage = event.user_message;
    this.current = event.agent;
    this.reach(event.agent);
    this.agent(event.agent);
  }

  on_agent_changed(event) {
    this.current = event.agent;
    this.reach(event.agent);
    if (event.cause) this.terminations.push({ what: `agent ${event.previous} is gone`, reason: event.cause });
  }

  on_handoff(event) {
    this.reach(event.source);
    this.reach(event.target);
    this.edges.push({ source: event.source, target: event.target, hop: event.hop, reason: event.reason });
    this.current = event.target;
    this.agent(event.target);
  }

  on_handoff_refused(event) {
    this.reach(event.source);
    this.edges.push({ source: event.source, target: event.target, reason: event.cause, refused: true });
    this.terminations.push({ what: `handoff ${event.source} -> ${event.target} refused`, reason: event.cause });
  }

  on_cycle_detected(event) {
    this.terminations.push({ what: "cycle detected", reason: (event.path || []).join(" -> ") });
  }

  on_limit_reached(event) {
    this.terminations.push({ what: `limit reached by ${event.agent}`, reason: `${event.limit} = ${event.value}` });
  }

  on_text_delta(event) {
    const last = this.answers[this.answers.length - 1];
    if (last && last.agent === event.agent && last.streaming) last.text += event.text || "";
    else this.answers.push({ agent: event.agent, text: event.text || "", streaming: true });
  }

  on_message(event) {
    const last = this.answers[this.answers.length - 1];
    if (last && last.agent === event.agent && last.streaming) {
      last.streaming = false;
      if (event.content) last.text = event.content;
    } else if (event.content) {
      this.answers.push({ agent: event.agent, text: event.content, streaming: false });
    }
  }

  on_agent_tool_invoked(event) {
    if (this.kind === null) this.kind = "tool";
    const call = {
      id: event.call_id || `call-${this.calls.size}`,
      tool: event.tool,
      member: event.member,
      agent: event.agent,
      mode: event.mode,
      caller: event.member ? event.member : this.current,
      maxCost: event.max_cost_usd ?? null,
      chunks: 0,
      cost: 0,
      state: "running",
      reason: null,
      message: null,
      text: "",
      cancelAcknowledged: null,
    };
    this.calls.set(call.id, call);
    this.agent(call.caller).calls += 1;
  }

  on_agent_tool_progress(event) {
    const call = this.calls.get(event.call_id);
    if (!call) return;
    call.chunks = (event.chunk_index ?? call.chunks - 1) + 1;
    if (typeof event.accumulated_cost_usd === "number") call.cost = event.accumulated_cost_usd;
    if (event.text) call.text += event.text;
  }

  endCall(event, state) {
    const call = this.calls.get(event.call_id);
    if (!call) return;
    call.state = state;
    if (typeof event.accumulated_cost_usd === "number") call.cost = event.accumulated_cost_usd;
    if (typeof event.max_cost_usd === "number") call.maxCost = event.max_cost_usd;
    call.reason = event.reason || null;
    call.message = event.message || null;
    call.cancelAcknowledged = event.cancel_acknowledged ?? null;
    this.agent(call.caller).cost += call.cost;
    if (state !== "completed") {
      this.terminations.push({ what: `${call.tool ? "tool " + call.tool : "agent " + call.member}`, reason: call.reason, detail: call.message });
    }
  }

  on_agent_tool_completed(event) {
    this.endCall(event, "completed");
  }

  on_agent_tool_terminated(event) {
    this.endCall(event, event.reason || "terminated");
  }

  on_agent_tool_error(event) {
    this.endCall(event, event.reason || "error");
  }

  on_run_completed(event) {
    this.state = event.state === "input-required" ? "input-required" : "completed"; // an agent asked the user
    this.ending = event;
    this.current = event.active_agent_name || this.current;
  }

  // A cancel was accepted: the run's own ending (run_failed, or each call's agent_tool_terminated) follows.
  on_run_cancelled(event) {
    this.state = "cancelled";
    this.cancel = event;
    this.terminations.push({ what: `cancelled${event.by ? " by " + event.by : ""}`, reason: "cancelled", detail: event.reason });
  }

  on_run_failed(event) {
    this.ending = event;
    if (this.state === "cancelled") return; // the cancel's own ending, already said
    this.state = "failed";
    this.terminations.push({ what: "the run failed", reason: event.error_type, detail: event.error });
  }

  // Token counts, where events carry them (fields named *tokens*, or a usage object), per agent.
  countTokens(event) {
    const counts = {};
    for (const [key, value] of Object.entries(event)) {
      if (typeof value === "number" && key.includes("tokens")) counts[key] = value;
    }
    if (event.usage && typeof event.usage === "object") {
      for (const [key, value] of Object.entries(event.usage)) if (typeof value === "number") counts[key] = value;
    }
    if (!Object.keys(counts).length) return;
    const owner = event.type.startsWith("agent_tool_") ? event.member || this.current : event.agent || this.current;
    const tokens = this.agent(owner).tokens;
    for (const [key, value] of Object.entries(counts)) tokens[key] = (tokens[key] || 0) + value;
  }
}

// -- views --------------------------------------------------------------------------------------

let directory = null; // GET /agents, for the kind and service of each agent on the graph

async function agentDirectory() {
  if (directory === null) {
    const listing = await api("/agents");
    directory = new Map(listing.agents.map((agent) => [agent.name, agent]));
  }
  return directory;
}

function serviceOf(agent) {
  if (!agent) return "not registered";
  if (agent.kind !== "remote") return "this gateway";
  try {
    return new URL(agent.url).host;
  } catch {
    return agent.url;
  }
}

function table(columns, rows, attrs = {}) {
  return h(
    "table",
    attrs,
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, "none"))),
  );
}

const BINDINGS = { "a2a-ndjson": "A2A-NDJSON", "jsonrpc-1.0": "JSON-RPC 1.0", "jsonrpc-0.3": "JSON-RPC 0.3", "http+json-1.0": "HTTP+JSON", "grpc-1.0": "gRPC" };

async function agentsView(view) {
  const [listing, tools] = await Promise.all([api("/agents"), api("/tools")]);
  directory = new Map(listing.agents.map((agent) => [agent.name, agent]));
  const problem = h("p", { class: "problem", id: "agents-problem" });
  const usedBy = new Map();
  for (const tool of tools.tools) for (const user of tool.used_by) usedBy.set(user, [...(usedBy.get(user) || []), tool.name]);
  const rows = listing.agents.map((agent) => {
    const reach = h("td", { class: "reach", "data-reach": agent.name }, "…");
    probe(agent.name, reach);
    const binding =
      agent.kind === "remote"
        ? [
            h("code", {}, agent.url),
            h("div", { class: "muted" }, `${BINDINGS[agent.binding] || agent.binding}, ${agent.streaming ? "streaming" : "sync"}${agent.authenticated ? ", token" : ""}`),
            h("div", { class: `circuit circuit-${agent.health.state}`, title: agent.health.last_error || "" }, `circuit ${agent.health.state}${agent.health.failures ? `, ${agent.health.failures} failed in a row` : ""}`),
          ]
        : [h("span", {}, "local, "), h("code", {}, agent.model)];
    const card = agent.card
      ? h("details", {}, h("summary", {}, "card"), h("pre", {}, JSON.stringify(agent.card, null, 2)))
      : null;
    return h(
      "tr",
      { "data-agent": agent.name },
      h("td", {}, h("strong", {}, agent.name), agent.starting ? h("span", { class: "badge" }, "starting") : null),
      h("td", {}, h("span", { class: `kind kind-${agent.kind}` }, agent.kind)),
      h("td", {}, binding),
      h("td", {}, short(agent.description, 120), card),
      h("td", {}, (agent.handoffs || []).join(", ") || "–", h("div", { class: "muted" }, agent.handoff_from.length ? "from " + agent.handoff_from.join(", ") : "")),
      h("td", {}, [...(agent.tools || []), ...(usedBy.get(agent.name) || []).filter((t) => !(agent.tools || []).includes(t))].join(", ") || "–"),
      reach,
      h("td", {}, agent.kind === "remote" ? removeAgentButton(agent.name, problem) : h("span", { class: "muted", title: "a local agent is defined in the configuration file" }, "local: kept")),
    );
  });
  view.replaceChildren(
    h("h2", {}, "Agents"),
    h("p", { class: "muted" }, `Starting agent: ${listing.starting_agent}. `, h("a", { href: "#/tools" }, `${tools.tools.length} tool${tools.tools.length === 1 ? "" : "s"}`)),
    problem,
    table(["name", "kind", "binding", "description", "handoffs", "tools", "reachable", ""], rows, { id: "agents" }),
    registerAgentForm(),
  );
}

// DELETE /agents/{name} (admin): a remote agent leaves the swarm, on every replica and after a restart.
function removeAgentButton(name, problem) {
  const remove = () => act(problem, () => api(`/agents/${encodeURIComponent(name)}`, { method: "DELETE" }), (answer) => `Removed agent ${answer.removed} (${answer.url}).`);
  return armedButton("Remove", `Remove ${name}?`, remove);
}

// POST /agents (admin): the gateway fetches the agent's card, so a URL is enough; the name defaults to the card's.
function registerAgentForm() {
  const problem = h("p", { class: "problem" });
  const submit = (event) => {
    event.preventDefault();
    const body = filled(event.target, ["url", "name", "description"]);
    act(problem, () => api("/agents", { method: "POST", body }), (agent) => `Registered agent ${agent.name} (${agent.url}).`);
  };
  return h(
    "form",
    { class: "manage", id: "register-agent", onsubmit: submit },
    h("h3", {}, "Register an agent"),
    field("URL", "url", { type: "url", required: true, placeholder: "http://127.0.0.1:9101" }),
    field("name", "name", { placeholder: "from its card" }),
    field("description", "description", { placeholder: "from its card" }),
    h("button", { type: "submit" }, "Register"),
    problem,
  );
}

async function probe(name, cell) {
  try {
    const answer = await api(`/agents/${encodeURIComponent(name)}/reachable`);
    cell.textContent = answer.reachable ? (answer.latency_ms !== undefined ? `yes, ${answer.latency_ms} ms` : "yes (in process)") : `no: ${answer.reason}`;
    cell.className = answer.reachable ? "reach ok" : "reach down";
    if (!answer.reachable) cell.title = answer.message;
  } catch (error) {
    cell.textContent = error.message;
  }
}

async function toolsView(view) {
  const tools = await api("/tools");
  const problem = h("p", { class: "problem", id: "tools-problem" });
  const rows = tools.tools.map((tool) =>
    h(
      "tr",
      { "data-tool": tool.name },
      h("td", {}, h("strong", {}, tool.name), h("div", { class: "muted" }, short(tool.description, 100))),
      h("td", {}, h("code", {}, tool.agent)),
      h("td", {}, tool.mode + (tool.max_turns ? ` (${tool.max_turns} turns)` : "")),
      h("td", {}, tool.max_cost_usd === null ? "none" : usd(tool.max_cost_usd)),
      h("td", {}, `${tool.idle_timeout_secs} s idle, ${tool.timeout_ms} ms per request`),
      h("td", {}, tool.used_by.join(", ") || h("span", { class: "muted" }, "no agent (call it directly)")),
      h("td", {}, removeToolButton(tool.name, problem)),
    ),
  );
  view.replaceChildren(h("h2", {}, "Tools"), problem, table(["name", "agent", "mode", "budget", "limits", "used by", ""], rows, { id: "tools" }), defineToolForm());
}

// DELETE /tools/{name} (admin): the agents that used it stop being offered it.
function removeToolButton(name, problem) {
  const remove = () => act(problem, () => api(`/tools/${encodeURIComponent(name)}`, { method: "DELETE" }), (answer) => `Removed tool ${answer.removed}.`);
  return armedButton("Remove", `Remove ${name}?`, remove);
}

// POST /tools (admin): a [[tools]] entry; the starting agent gets it unless it is only to be called directly.
function defineToolForm() {
  const problem = h("p", { class: "problem" });
  const submit = (event) => {
    event.preventDefault();
    const body = filled(event.target, ["name", "agent", "mode", "description"]);
    const budget = event.target.elements.namedItem("max_cost_usd").value;
    if (budget !== "") body.max_cost_usd = Number(budget);
    act(problem, () => api("/tools", { method: "POST", body }), (tool) => `Defined tool ${tool.name} (${tool.agent}).`);
  };
  return h(
    "form",
    { class: "manage", id: "define-tool", onsubmit: submit },
    h("h3", {}, "Define a tool"),
    field("name", "name", { required: true, placeholder: "research" }),
    field("agent URL", "agent", { type: "url", required: true, placeholder: "http://127.0.0.1:9102" }),
    h("label", {}, "mode ", h("select", { name: "mode" }, ["sync", "streaming", "conversational"].map((mode) => h("option", { value: mode }, mode)))),
    field("budget (USD)", "max_cost_usd", { type: "number", min: 0, step: "any" }),
    field("description", "description"),
    h("button", { type: "submit" }, "Define"),
    problem,
  );
}

async function sessionsView(view) {
  const listing = await api("/sessions");
  const rows = listing.sessions.map((session) =>
    h(
      "tr",
      { "data-session": session.session_id },
      h("td", {}, h("a", { href: `#/sessions/${encodeURIComponent(session.session_id)}` }, session.session_id)),
      h("td", {}, when(session.last_started_ms)),
      h("td", {}, short(session.last_message, 80)),
      h("td", {}, String(session.runs)),
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(session.last_run_id)}` }, session.closed ? "ended" : "running")),
    ),
  );
  view.replaceChildren(
    h("h2", {}, "Sessions"),
    h("p", { class: "muted" }, "Newest first, from your recent runs. ", h("a", { href: "#/chat" }, "Start a new one")),
    table(["session", "last turn", "last message", "turns", "last run"], rows, { id: "sessions" }),
  );
}

async function sessionView(view, sessionId) {
  const path = `/sessions/${encodeURIComponent(sessionId)}`;
  const [session, runs, agents] = await Promise.all([api(path), api("/runs?limit=1000"), api("/agents")]);
  const mine = runs.runs.filter((run) => run.session_id === sessionId);
  const holder = session.active_agent || agents.starting_agent;
  const problem = h("p", { class: "problem", id: "session-problem" });
  const choice = h("select", { name: "agent" }, agents.agents.map((agent) => h("option", { value: agent.name, selected: agent.name === holder }, agent.name)));
  const move = (event) => {
    event.preventDefault();
    act(problem, () => api(`${path}/agent`, { method: "PUT", body: { agent: choice.value } }), (answer) => `Session ${answer.session_id} moved to ${answer.active_agent}: its next turn goes there.`);
  };
  const reset = () =>
    act(problem, () => api(path, { method: "DELETE" }), (answer) => `Session ${answer.deleted} reset: its history is forgotten; a new message starts it again.`, "#/sessions");
  view.replaceChildren(
    h("h2", {}, "Session ", h("code", {}, sessionId)),
    h("p", { id: "session-holder", "data-agent": holder }, `Held by ${holder}${session.active_agent ? "" : " (the starting agent)"}; version ${session.version}`, session.open_run ? `; a turn is ${session.open_run.state}` : ""),
    h(
      "form",
      { class: "manage", id: "move-session", onsubmit: move },
      h("label", {}, "Move to ", choice),
      h("button", { type: "submit" }, "Move"),
      armedButton("Reset", "Forget its history?", reset),
    ),
    problem,
    h("h3", {}, "Conversation"),
    conversation(session.history),
    ...(session.context_variables && Object.keys(session.context_variables).length
      ? [h("details", {}, h("summary", {}, "context variables"), h("pre", {}, JSON.stringify(session.context_variables, null, 2)))]
      : []),
    h("h3", {}, "Runs"),
    runsTable(mine),
    chatBox(sessionId),
  );
}

// The session's history as the agents see it: who said what, the tools they called and what came back.
function conversation(history) {
  const lines = history.map((message, index) => {
    const who = message.role === "user" ? "you" : message.role === "tool" ? `tool ${message.name || ""}`.trim() : message.sender || message.role;
    const calls = (message.tool_calls || []).map((call) => h("div", { class: "muted" }, `calls ${call.function ? call.function.name : "?"}(${short(call.function ? call.function.arguments : "", 80)})`));
    return h("div", { class: `said role-${message.role}`, "data-index": index, "data-role": message.role }, h("strong", {}, `${who}> `), message.content ?? "", calls);
  });
  return h("div", { id: "conversation" }, lines.length ? lines : h("p", { class: "muted" }, "no message yet"));
}

function runsTable(runs) {
  const rows = runs.map((run) =>
    h(
      "tr",
      { "data-run": run.run_id },
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, h("code", {}, run.run_id))),
      h("td", {}, when(run.started_ms)),
      h("td", {}, run.tool ? "tool call" : run.session_id ? "turn" : run.first_event || "–"),
      h("td", {}, run.tool ? run.tool : run.session_id ? h("a", { href: `#/sessions/${encodeURIComponent(run.session_id)}` }, run.session_id) : "–"),
      h("td", {}, run.agent || "–"),
      h("td", {}, run.closed ? "ended" : "open"),
    ),
  );
  return table(["run", "started", "kind", "session or tool", "agent", "state"], rows, { id: "runs" });
}

async function runsView(view, query) {
  const limit = Number(query.get("limit")) || RUNS_LIMITS[0];
  const listing = await api(`/runs?limit=${limit}`);
  const filters = { text: query.get("q") || "", kind: query.get("kind") || "", state: query.get("state") || "" };
  const body = h("div");
  const draw = () => {
    const text = filters.text.toLowerCase();
    const shown = listing.runs.filter(
      (run) =>
        (!text || [run.run_id, run.session_id, run.agent, run.tool].some((v) => v && v.toLowerCase().includes(text))) &&
        (!filters.kind || (filters.kind === "tool" ? Boolean(run.tool) : Boolean(run.session_id))) &&
        (!filters.state || (filters.state === "open" ? !run.closed : run.closed)),
    );
    body.replaceChildren(h("p", { class: "muted" }, `${shown.length} of ${listing.runs.length} runs`), runsTable(shown));
  };
  const select = (name, options) =>
    h(
      "select",
      { name, oninput: (event) => ((filters[name] = event.target.value), draw()) },
      options.map(([value, label]) => h("option", { value, selected: filters[name] === value }, label)),
    );
  const limits = h(
    "select",
    { name: "limit", oninput: (event) => (location.hash = `#/runs?limit=${event.target.value}`) },
    RUNS_LIMITS.map((n) => h("option", { value: n, selected: n === limit }, `newest ${n}`)),
  );
  view.replaceChildren(
    h("h2", {}, "Runs"),
    h(
      "form",
      { class: "filters", onsubmit: (event) => event.preventDefault() },
      h("input", { type: "search", name: "q", placeholder: "run, session, agent or tool", value: filters.text, oninput: (event) => ((filters.text = event.target.value), draw()) }),
      select("kind", [["", "turns and tool calls"], ["turn", "turns"], ["tool", "tool calls"]]),
      select("state", [["", "open and ended"], ["open", "open"], ["closed", "ended"]]),
      limits,
    ),
    body,
  );
  draw();
}

function chatBox(sessionId) {
  const input = h("input", { type: "text", name: "message", placeholder: "Message the swarm…", required: true, autocomplete: "off" });
  const session = h("input", { type: "text", name: "session", value: sessionId || newSessionId(), required: true, pattern: "[A-Za-z0-9._:~\\-]{1,128}" });
  const problem = h("p", { class: "problem" });
  const send = async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    problem.textContent = "";
    try {
      const runId = await postMessage(session.value, text);
      location.hash = `#/runs/${encodeURIComponent(runId)}`;
    } catch (error) {
      problem.textContent = error.message;
    }
  };
  return h(
    "form",
    { class: "chat", id: "chat", onsubmit: send },
    h("label", {}, "Session ", session),
    input,
    h("button", { type: "submit" }, "Send"),
    problem,
  );
}

function chatView(view) {
  view.replaceChildren(
    h("h2", {}, "Chat"),
    h("p", { class: "muted" }, "Each message is one turn of the swarm; its run page follows it live."),
    chatBox(null),
  );
}

// -- the run page ------------------------------------------------------------------------------

function graph(model, agents) {
  const width = 190;
  const gap = 70;
  const height = 150;
  const x = (name) => 20 + model.nodes.indexOf(name) * (width + gap);
  const total = Math.max(1, model.nodes.length) * (width + gap);
  const drawing = svg("svg", { viewBox: `0 0 ${total} ${height}`, width: total, height, role: "img", "aria-label": "handoff graph", id: "graph" });
  drawing.append(
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))),
  );
  model.edges.forEach((edge, index) => {
    if (!model.nodes.includes(edge.target)) return;
    const from = x(edge.source);
    const to = x(edge.target);
    const forward = to > from;
    const y = forward ? 55 : 95;
    const startX = forward ? from + width : from;
    const endX = forward ? to : to + width;
    const bend = forward ? -30 : 30;
    const path = svg("path", {
      d: `M ${startX} ${y} C ${startX + (endX - startX) / 3} ${y + bend}, ${startX + (2 * (endX - startX)) / 3} ${y + bend}, ${endX} ${y}`,
      class: edge.refused ? "edge refused" : "edge",
      "marker-end": "url(#arrow)",
      "data-edge": `${edge.source}->${edge.target}`,
    });
    path.append(svg("title", {}, `${edge.refused ? "refused: " : `hop ${edge.hop}: `}${edge.reason || ""}`));
    drawing.append(path, svg("text", { x: (startX + endX) / 2, y: y + bend - 4, class: "edge-label" }, edge.refused ? "refused" : `${index + 1}`));
  });
  for (const name of model.nodes) {
    const agent = agents.get(name);
    const group = svg("g", { class: `node kind-${agent ? agent.kind : "unknown"}${name === model.current ? " current" : ""}`, "data-agent": name, transform: `translate(${x(name)}, 50)` });
    group.append(
      svg("rect", { width, height: 50, rx: 8 }),
      svg("text", { x: width / 2, y: 22, class: "node-name" }, name),
      svg("text", { x: width / 2, y: 40, class: "node-service" }, serviceOf(agent)),
    );
    drawing.append(group);
  }
  return drawing;
}

function callCard(call) {
  const budget = typeof call.maxCost === "number" ? call.maxCost : null;
  const share = budget ? Math.min(1, call.cost / budget) : 0;
  const bar = h("div", { class: "bar" }, h("div", { class: `fill${call.state === "budget_exceeded" ? " over" : ""}` }));
  bar.firstChild.style.width = `${Math.round(share * 100)}%`;
  return h(
    "div",
    { class: `call state-${call.state}`, "data-call": call.id, "data-tool": call.tool || call.member, "data-call-state": call.state, "data-chunks": call.chunks },
    h("div", { class: "call-head" }, h("strong", {}, call.tool ? `tool ${call.tool}` : `agent ${call.member}`), ` ${call.mode || ""} `, h("code", {}, call.agent || ""), h("span", { class: "call-state" }, call.state)),
    h("div", {}, `${call.chunks} chunk${call.chunks === 1 ? "" : "s"} · ${usd(call.cost)}${budget !== null ? ` of ${usd(budget)} budget` : ""}`, call.caller ? ` · for ${call.caller}` : ""),
    budget !== null ? bar : null,
    call.reason ? h("div", { class: "reason" }, `${call.reason}${call.cancelAcknowledged === null ? "" : call.cancelAcknowledged ? "; tasks/cancel acknowledged" : "; tasks/cancel not acknowledged"}`) : null,
    call.message ? h("div", { class: "muted" }, short(call.message, 200)) : null,
  );
}

function perAgentTable(model) {
  const tokenNames = [...new Set([...model.agents.values()].flatMap((a) => Object.keys(a.tokens)))];
  const rows = [...model.agents.entries()].map(([name, totals]) =>
    h("tr", { "data-agent": name }, h("td", {}, name), h("td", {}, String(totals.calls)), h("td", {}, usd(totals.cost)), tokenNames.map((t) => h("td", {}, String(totals.tokens[t] ?? "–")))),
  );
  return table(["agent", "calls", "cost", ...tokenNames], rows, { id: "per-agent" });
}

function timeline(model) {
  const start = model.events.length ? model.events[0].timestamp_ms : 0;
  const rows = model.events.map((event) =>
    h(
      "tr",
      { "data-seq": event.seq, class: `event type-${event.type}` },
      h("td", {}, String(event.seq)),
      h("td", {}, `+${event.timestamp_ms - start} ms`),
      h("td", {}, event.type),
      h("td", {}, speaker(event)),
      h("td", {}, summary(event)),
    ),
  );
  return table(["seq", "at", "event", "agent", "what"], rows, { id: "timeline" });
}

// Who an event is about: agent-tool events name the agent called by its URI, so show the member or tool instead.
function speaker(event) {
  if (event.type.startsWith("agent_tool_")) return event.member || event.tool || "";
  return event.agent || event.source || "";
}

function summary(event) {
  switch (event.type) {
    case "run_started":
      return `session ${event.session_id}: ${short(event.user_message)}`;
    case "handoff":
      return `${event.source} -> ${event.target}: ${short(event.reason, 70)}`;
    case "handoff_refused":
      return `${event.source} -> ${event.target} refused (${event.cause})`;
    case "agent_tool_invoked":
      return `${event.tool || event.member} (${event.mode})${typeof event.max_cost_usd === "number" ? ` budget ${usd(event.max_cost_usd)}` : ""}`;
    case "agent_tool_progress":
      return `${event.kind} ${event.chunk_index ?? ""} ${usd(event.accumulated_cost_usd)} ${short(event.text || event.state || "", 50)}`;
    case "agent_tool_completed":
      return `completed ${usd(event.accumulated_cost_usd)}`;
    case "agent_tool_terminated":
    case "agent_tool_error":
      return `${event.reason}: ${short(event.message, 80)}`;
    case "tool_call":
      return `${event.tool}(${short(JSON.stringify(event.arguments || {}), 60)})`;
    case "tool_result":
      return short(event.content, 90);
    case "message":
      return short(event.content, 90);
    case "text_delta":
      return short(event.text, 90);
    case "run_completed":
      return `answered by ${event.active_agent_name}: ${short(event.content, 70)}`;
    case "run_failed":
      return `${event.error_type}: ${short(event.error, 80)}`;
    default:
      return "";
  }
}

async function runView(view, runId, signal) {
  const agents = await agentDirectory();
  const model = new RunModel(runId);
  const status = h("p", { id: "run-state", "data-run-state": "running" }, "following…");
  const parts = {
    graph: h("section", { id: "graph-section" }),
    calls: h("section", { id: "calls" }),
    agents: h("section", { id: "agents-section" }),
    chat: h("section", { id: "transcript" }),
    endings: h("section", { id: "terminations" }),
    timeline: h("section", { id: "timeline-section" }),
  };
  const cancel = cancelControl(runId);
  view.replaceChildren(
    h("h2", {}, "Run ", h("code", {}, runId)),
    status,
    cancel.box,
    parts.chat,
    h("h3", {}, "Handoffs"),
    parts.graph,
    h("h3", {}, "Agent-tool calls"),
    parts.calls,
    h("h3", {}, "Cost and tokens per agent"),
    parts.agents,
    parts.endings,
    h("h3", {}, "Timeline"),
    parts.timeline,
  );
  let scheduled = false;
  const draw = () => {
    scheduled = false;
    const state = model.state;
    status.dataset.runState = state;
    cancel.box.hidden = state !== "running" || !model.events.length; // nothing to cancel before the run is seen
    status.replaceChildren(
      h(
        "span",
        {},
        h("span", { class: `state state-${state}` }, state),
        model.sessionId ? [" · session ", h("a", { href: `#/sessions/${encodeURIComponent(model.sessionId)}` }, model.sessionId)] : "",
        model.current ? ` · held by ${model.current}` : "",
        ` · ${model.events.length} events`,
      ),
    );
    parts.chat.replaceChildren(
      h(
        "div",
        {},
        model.userMessage ? h("p", { class: "said user" }, h("strong", {}, "you> "), model.userMessage) : "",
        model.answers.map((a) => h("p", { class: "said", "data-agent": a.agent }, h("strong", {}, `${a.agent}> `), a.text)),
      ),
    );
    parts.graph.replaceChildren(model.nodes.length ? graph(model, agents) : h("p", { class: "muted" }, "no agent yet"));
    parts.calls.replaceChildren(...(model.calls.size ? [...model.calls.values()].map(callCard) : [h("p", { class: "muted" }, "none")]));
    parts.agents.replaceChildren(perAgentTable(model));
    parts.endings.replaceChildren(
      ...(model.terminations.length
        ? [h("h3", {}, "Terminations"), h("ul", {}, model.terminations.map((t) => h("li", { "data-reason": t.reason || "" }, `${t.what}: ${t.reason || ""}`, t.detail ? h("span", { class: "muted" }, ` (${short(t.detail, 160)})`) : "")))]
        : []),
    );
    parts.timeline.replaceChildren(timeline(model));
  };
  const schedule = () => {
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(draw);
    }
  };
  draw();
  await followRun(runId, (event) => {
    model.add(event);
    schedule();
  }, signal);
  if (model.state === "running") model.state = "ended"; // a tool call's run ends without run_completed
  draw();
  if (model.sessionId) view.append(h("h3", {}, "Continue this session"), chatBox(model.sessionId));
}

// POST /runs/{id}/cancel (chat: a caller's own runs; admin: any): 202, then the run's events end it.
// The page changes nothing itself: the run_cancelled event it follows is what says the cancel took.
function cancelControl(runId) {
  const problem = h("span", { class: "problem" });
  const button = h("button", { type: "button", id: "run-cancel", class: "danger" }, "Cancel this run");
  button.addEventListener("click", async () => {
    button.disabled = true;
    problem.textContent = "";
    try {
      await api(`/runs/${encodeURIComponent(runId)}/cancel`, { method: "POST" });
      button.textContent = "cancel requested…";
    } catch (error) {
      problem.textContent = problemText(error);
      button.disabled = false;
    }
  });
  return { box: h("p", { id: "run-cancel-box" }, button, " ", problem) };
}

// -- the router ---------------------------------------------------------------------------------

let current = null; // the AbortController of the view on screen

async function render() {
  if (current) current.abort();
  const controller = new AbortController();
  current = controller;
  const view = document.getElementById("view");
  const [path, rawQuery] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(rawQuery || "");
  const page = parts[0] || "agents";
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.nav === page);
  const notice = document.getElementById("notice");
  notice.textContent = flash || "";
  notice.hidden = !flash;
  flash = null;
  try {
    if (page === "agents") await agentsView(view);
    else if (page === "tools") await toolsView(view);
    else if (page === "sessions" && parts[1]) await sessionView(view, parts[1]);
    else if (page === "sessions") await sessionsView(view);
    else if (page === "runs" && parts[1]) await runView(view, parts[1], controller.signal);
    else if (page === "runs") await runsView(view, query);
    else if (page === "chat") chatView(view);
    else view.replaceChildren(h("p", {}, "No such page. "), h("a", { href: "#/agents" }, "Agents"));
  } catch (error) {
    if (error.name === "AbortError" || controller.signal.aborted) return;
    view.replaceChildren(h("h2", {}, "Could not load this page"), h("p", { class: "problem", id: "problem" }, error.message));
  }
}

async function start() {
  setUpToken();
  window.addEventListener("hashchange", render);
  if ((await needsToken()) && !sessionStorage.getItem(TOKEN_KEY)) {
    askForToken();
    return;
  }
  try {
    const health = await (await fetch("/health")).json();
    document.getElementById("gateway-name").textContent = health.name;
  } catch {
    // the name is decoration
  }
  render();
}

start();
