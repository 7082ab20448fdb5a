// The web client's entry point: sign-in (one-time link or pasted token, both ending in an
// HttpOnly session cookie the page never sees), then chat, sessions and memory over one
// WebSocket (client.js). Nothing secret is kept in the page: no token in localStorage or a URL.

import { Client } from "./client.js";
import { Chat } from "./chat.js";
import { Memory } from "./memory.js";
import { $, el, clear } from "./dom.js";

const state = { user: null, client: null, chat: null, memory: null, running: false, usage: { prompt: 0, completion: 0 }, model: "" };

async function main() {
  const me = await fetch("/auth/me", { credentials: "same-origin" }).catch(() => null);
  if (me && me.ok) start((await me.json()).user_id);
  else showSignin("");
}

function showSignin(message) {
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-status").textContent = message;
  $("token").focus();
}

$("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $("token");
  const token = input.value.trim();
  input.value = "";
  const r = await fetch("/auth/token", {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
  }).catch(() => null);
  if (r && r.ok) {
    start((await r.json()).user_id);
  } else {
    const text = r ? (await r.text()).trim() : "the gateway did not answer";
    $("signin-status").textContent = "Not signed in: " + text;
  }
});

function start(user) {
  state.user = user;
  $("signin").hidden = true;
  $("app").hidden = false;
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const client = new Client({
    url: `${scheme}//${location.host}/`,
    userId: user,
    onFrame: (f) => onFrame(f),
    onState: (s, detail) => onState(s, detail),
  });
  state.client = client;
  state.memory = new Memory({ client, root: $("memory"), onOpenHit: (hit) => openHit(hit) });
  state.chat = new Chat({
    client, root: $("transcript"), memory: state.memory,
    onTurnState: (running) => setRunning(running),
    onUsage: (u) => addUsage(u),
    onProgress: (text) => { $("progress").textContent = text; },
  });
  client.connect();
  $("input").focus();
}

function onState(s, detail) {
  const conn = $("conn");
  if (s === "online") { conn.textContent = "online"; conn.className = "conn online"; }
  else if (s === "offline") { conn.textContent = "offline: reconnecting…"; conn.className = "conn offline"; }
  else if (s === "connecting") { if (!state.client || !state.client.online) conn.textContent = "connecting…"; }
  else if (s === "signed_out") { showSignin("Signed out: sign in again."); }
  else if (s === "resumed") resumed(detail);
}

function resumed({ restarted, resumed: same, session, model }) {
  state.model = model || "";
  $("model").textContent = state.model ? "model: " + state.model : "";
  setTitle(session);
  if (restarted) {
    const wasRunning = Boolean(state.chat.turn);
    state.chat.reset();
    state.chat.loadHistory(session.session_id);
    state.chat.interrupted(wasRunning);
  } else if (!same) {
    state.chat.reset();
    resetUsage();
    state.chat.loadHistory(session.session_id);
  }
  if (!session.active_turn && state.running && !restarted) {
    // The turn ended while we were away and its end was replayed, or it is gone.
    setRunning(Boolean(state.chat.turn));
  }
  loadSessions();
}

function onFrame(f) {
  switch (f.type) {
    case "session_switched":
    case "session_created":
      state.chat.reset();
      resetUsage();
      setTitle(f.session);
      setRunning(false);
      state.chat.loadHistory(f.session.session_id);
      loadSessions();
      refreshUsage();
      return;
    case "error":
      if (f.code === "events_expired") {
        state.chat.reset();
        state.chat.loadHistory(state.client.sessionId);
        return;
      }
      state.chat.live.append(el("p", { class: "notice error" }, f.message));
      if (f.code === "turn_in_progress" || f.code === "no_active_turn") setRunning(f.code === "turn_in_progress");
      return;
    case "turn_completed":
      state.chat.event(f);
      loadSessions();
      refreshUsage();
      return;
    case "notification":
      notify(f);
      return;
    case "memory_captured": {
      const item = state.memory.captured(f, {
        onReview: () => { toggle("memory-panel", true); state.memory.showPending(); },
        onDismiss: (node) => node.remove(),
      });
      if (item) $("notifications").append(item);
      return;
    }
    case "mcp_status":
      // The user's own MCP servers: the status bar names those that are down.
      $("mcp").textContent = mcpDown(f.servers || []);
      return;
    default:
      if (typeof f.seq === "number") state.chat.event(f);
      // Frames this page does not know (newer gateways add some) are ignored.
  }
}

/** "· MCP down: files, github" (empty when every server is up or starting). */
function mcpDown(servers) {
  const down = servers.filter((s) => s.state === "down").map((s) => s.name);
  return down.length ? `· MCP down: ${down.join(", ")}` : "";
}

// A schedule's result: a line above the transcript (kept across session switches) with its
// title, text and marks, a link to its session and a dismiss button. Text nodes only: the
// notification's title and text are model output.
function notify(n) {
  const marks = [];
  if (n.status && n.status !== "ok") marks.push("failed");
  if (n.late) marks.push("late");
  if (n.unread) marks.push("while you were away");
  const item = el("li", { class: n.status === "ok" ? "notification" : "notification failed", "data-id": n.id },
    "⏰ ", el("strong", { class: "notification-title" }, String(n.title || "")),
    marks.length ? el("span", { class: "notification-marks" }, ` (${marks.join(", ")})`) : null,
    ": ", el("span", { class: "notification-text" }, String(n.text || "")),
    " ",
    n.session_id ? el("button", { type: "button", class: "link", onclick: () => switchTo(n.session_id) }, "open") : null,
    el("button", { type: "button", class: "link", "aria-label": "Dismiss", onclick: () => item.remove() }, "×"));
  $("notifications").append(item);
}

function setTitle(session) {
  $("title").textContent = session.title || "New conversation";
  document.title = (session.title ? session.title + " · " : "") + "Oxydra";
}

function setRunning(running) {
  state.running = running;
  $("stop").hidden = !running;
  $("send").hidden = running;
}

function resetUsage() {
  state.usage = { prompt: 0, completion: 0 };
  $("usage").textContent = "";
}

function addUsage(u) {
  state.usage.prompt += u.prompt_tokens || 0;
  state.usage.completion += u.completion_tokens || 0;
  $("usage").textContent = `· tokens this session (since opened): ${state.usage.prompt} in, ${state.usage.completion} out`;
}

/** The session's whole spend from the gateway (`get_usage`): its model, tokens and cost. */
async function refreshUsage() {
  const sessionId = state.client.sessionId;
  if (!sessionId) return;
  try {
    const r = await state.client.request({ type: "get_usage", session_id: sessionId });
    if (r.session_id !== state.client.sessionId) return;
    const s = r.session || {};
    const cost = typeof s.cost_usd === "number" ? ` · $${s.cost_usd.toFixed(4)}` : "";
    const model = r.model && r.model.model ? `${r.model.model} · ` : "";
    $("usage").textContent = `· ${model}session: ${s.prompt_tokens || 0} in, ${s.completion_tokens || 0} out${cost}`;
  } catch (_) {
    // Offline or an older gateway: the running count stays.
  }
}

async function loadSessions() {
  try {
    const r = await state.client.request({ type: "list_sessions" });
    const list = clear($("session-list"));
    state.sessions = r.sessions;
    for (const s of r.sessions) {
      const current = s.session_id === state.client.sessionId;
      list.append(el("li", {}, el("button", {
        type: "button", class: current ? "session current" : "session", "aria-current": current ? "true" : null,
        onclick: () => switchTo(s.session_id),
      }, s.title || "(untitled)", el("small", {}, ` ${String(s.last_active_at).slice(0, 16).replace("T", " ")} · ${s.messages} messages`))));
    }
  } catch {
    // Offline: the list is refreshed on the next connection.
  }
}

/** A past conversation's message found by a search: its session, opened at the message. */
function openHit(hit) {
  state.chat.revealAt = { sessionId: hit.session_id, seq: hit.seq };
  if (hit.session_id === state.client.sessionId) {
    state.chat.revealAt = null;
    state.chat.reveal(hit.session_id, hit.seq);
  } else {
    switchTo(hit.session_id);
  }
  if (matchMedia("(max-width: 800px)").matches) toggle("memory-panel", false);
}

async function switchTo(id) {
  if (id === state.client.sessionId) return;
  try {
    await state.client.request({ type: "switch_session", session_id: id });
  } catch (e) {
    state.chat.live.append(el("p", { class: "notice error" }, e.message));
  }
  if (matchMedia("(max-width: 800px)").matches) toggle("sessions", false);
}

function send() {
  const input = $("input");
  const text = input.value.trim();
  if (!text || state.running) return;
  const id = "w-" + Date.now().toString(36);
  const ok = state.client.send({ type: "send_turn", session_id: state.client.sessionId, text, client_turn_id: id });
  if (!ok) {
    state.chat.live.append(el("p", { class: "notice" }, "Offline: your message was not sent (it stays in the box)."));
    return;
  }
  input.value = "";
  state.chat.sent(text);
  setRunning(true);
}

function stop() {
  if (state.client) state.client.send({ type: "cancel_turn", session_id: state.client.sessionId });
}

function toggle(id, open) {
  const panel = $(id);
  const show = open ?? panel.hidden;
  panel.hidden = !show;
  const button = $(id === "sessions" ? "toggle-sessions" : "toggle-memory");
  button.setAttribute("aria-expanded", String(show));
  if (show && id === "memory-panel") { state.memory.refresh(); $("note-search").focus(); }
  if (show && id === "sessions") loadSessions();
}

$("composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  if (e.key === "Escape" && state.running) { e.preventDefault(); stop(); }
});
$("stop").addEventListener("click", stop);
$("toggle-sessions").addEventListener("click", () => toggle("sessions"));
$("toggle-memory").addEventListener("click", () => toggle("memory-panel"));
$("new-session").addEventListener("click", () => state.client.request({ type: "new_session" }).catch(() => {}));
$("continue-session").addEventListener("click", async () => {
  await loadSessions();
  const latest = (state.sessions || [])[0];
  if (latest) switchTo(latest.session_id);
});
$("signout").addEventListener("click", async () => {
  await fetch("/auth/signout", { method: "POST", credentials: "same-origin" }).catch(() => null);
  if (state.client) state.client.stop();
  location.reload();
});
document.addEventListener("keydown", (e) => {
  if (e.altKey && e.key.toLowerCase() === "s") { e.preventDefault(); toggle("sessions"); }
  if (e.altKey && e.key.toLowerCase() === "m") { e.preventDefault(); toggle("memory-panel"); }
  if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "z" && !/^(INPUT|TEXTAREA)$/.test(e.target.tagName)) {
    e.preventDefault();
    state.memory && state.memory.undoLatest();
  }
});

main();
