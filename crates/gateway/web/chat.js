// The conversation: stored history (paged back with get_history), the live turn's streamed
// reply, tool activity lines (details on demand), approvals, and the memory changes a turn made
// (each with an undo, as in the TUI), and the running tool call in the status line with how far
// it got ("running files__index (3/10: notes/)…", cleared when it ends). A past conversation's message found by a search is shown
// in its place (earlier pages loaded until it is there) and marked.

import { el, clear, excerpt, progressText, shortId } from "./dom.js";
import { StreamingMarkdown, render } from "./markdown.js";

const APPROVAL_GRACE_MS = 500;

export class Chat {
  constructor({ client, root, onTurnState, onUsage, onProgress, memory }) {
    this.client = client;
    this.onProgress = onProgress || (() => {});
    this.root = root;
    this.memory = memory;
    this.onTurnState = onTurnState;
    this.onUsage = onUsage;
    this.older = el("div", { class: "older" });
    this.historyBox = el("div", { class: "history" });
    this.live = el("div", { class: "live" });
    clear(root).append(this.older, this.historyBox, this.live);
    this.reset();
  }

  reset() {
    clear(this.older);
    clear(this.historyBox);
    clear(this.live);
    this.turn = null;
    this.tools = new Map();
    this.nextBefore = null;
    this.showProgress(null, "");
  }

  /** The status line's running call (`callId`), or nothing (""). */
  showProgress(callId, text) {
    this.progressOf = callId;
    this.onProgress(text);
  }

  /** Loads the newest stored messages of `sessionId` (replacing what is shown). */
  async loadHistory(sessionId) {
    clear(this.historyBox);
    clear(this.older);
    this.nextBefore = null;
    try {
      const page = await this.client.request({ type: "get_history", session_id: sessionId, limit: 50 });
      this.historyBox.append(this.renderHistory(page.events));
      this.setOlder(sessionId, page.next_before);
    } catch (e) {
      this.historyBox.append(el("p", { class: "notice" }, "Could not load the conversation: " + e.message));
    }
    this.scroll(true);
    const wanted = this.revealAt;
    if (wanted && wanted.sessionId === sessionId) {
      this.revealAt = null;
      await this.reveal(sessionId, wanted.seq);
    }
  }

  setOlder(sessionId, nextBefore) {
    clear(this.older);
    this.nextBefore = nextBefore || null;
    if (!nextBefore) return;
    this.older.append(el("button", {
      class: "link", type: "button",
      onclick: () => this.loadOlder(sessionId).catch((e) => this.older.append(el("span", { class: "notice" }, e.message))),
    }, "Show earlier messages"));
  }

  async loadOlder(sessionId) {
    const page = await this.client.request({ type: "get_history", session_id: sessionId, before: this.nextBefore, limit: 50 });
    this.historyBox.prepend(this.renderHistory(page.events));
    this.setOlder(sessionId, page.next_before);
  }

  /** Shows message `seq` of the open session, loading earlier pages (at most 20) until it is there. */
  async reveal(sessionId, seq) {
    const find = () => this.historyBox.querySelector(`[data-seq="${Number(seq)}"]`);
    try {
      for (let pages = 0; !find() && this.nextBefore && pages < 20; pages++) await this.loadOlder(sessionId);
    } catch (e) {
      this.live.append(el("p", { class: "notice" }, "Could not load the conversation: " + e.message));
    }
    const node = find();
    if (!node) {
      this.live.append(el("p", { class: "notice" }, "That message is no longer in this conversation."));
      return;
    }
    for (const old of this.root.querySelectorAll(".msg.found")) old.classList.remove("found");
    node.classList.add("found");
    node.scrollIntoView({ block: "center" });
  }

  renderHistory(events) {
    const frag = document.createDocumentFragment();
    const calls = new Map();
    for (const { message, number } of events) {
      if (message.role === "user") frag.append(userBubble(message.content || "", number));
      else if (message.role === "assistant") {
        if (message.content) frag.append(assistantBubble(message.content, number));
        for (const call of message.tool_calls || []) {
          const line = toolLine(call.name, call.arguments);
          line.setDone(true, "");
          calls.set(call.id, line);
          frag.append(line.node);
        }
      } else if (message.role === "tool") {
        const line = calls.get(message.tool_call_id);
        if (line) line.setDetail(message.content || "");
      }
    }
    return frag;
  }

  /** The user's own message, shown as soon as it is sent. */
  sent(text) {
    this.live.append(userBubble(text));
    this.scroll(true);
  }

  /** Applies a turn event. */
  event(frame) {
    switch (frame.type) {
      case "turn_started":
        this.turn = { id: frame.turn_id, answer: null, changes: [] };
        this.onTurnState(true);
        break;
      case "assistant_delta":
        this.answer().append(frame.text);
        break;
      case "tool_started": {
        this.closeAnswer();
        const line = toolLine(frame.name, frame.arguments);
        this.tools.set(frame.call_id, { line, name: frame.name, arguments: frame.arguments });
        this.live.append(line.node);
        this.showProgress(frame.call_id, `running ${frame.name}…`);
        break;
      }
      case "tool_progress": {
        const tool = this.tools.get(frame.call_id);
        if (!tool || tool.done) break;
        const how = progressText(frame.progress, frame.total, frame.message);
        this.showProgress(frame.call_id, `running ${frame.name} (${how})…`);
        break;
      }
      case "tool_finished": {
        const tool = this.tools.get(frame.call_id);
        if (tool) {
          tool.done = true;
          tool.line.setDone(frame.ok, frame.summary, frame.duration_ms);
        }
        if (this.progressOf === frame.call_id) this.showProgress(null, "");
        this.memoryChanges(frame.changes || []);
        break;
      }
      case "approval_requested":
        this.closeAnswer();
        this.live.append(approvalCard(this.client, frame));
        break;
      case "model_retry":
        this.live.append(el("p", { class: "notice" },
          `The model did not answer (${frame.reason}); trying again (${frame.attempt} of ${frame.max_attempts})…`));
        break;
      case "turn_completed":
        if (this.turn && frame.message) {
          // The final text as stored: whatever streamed is replaced by it, never added to.
          if (!this.turn.answer || this.turn.answer.text !== frame.message) this.answer().set(frame.message);
        }
        this.endTurn(frame, null);
        break;
      case "turn_cancelled":
        this.endTurn(frame, "Stopped.");
        break;
      case "turn_failed":
        this.endTurn(frame, "The reply failed: " + frame.reason);
        break;
      default:
        return;
    }
    this.scroll(false);
  }

  /** After a gateway restart (the conversation is reloaded from what was stored). */
  interrupted(wasRunning) {
    this.live.append(el("p", { class: "notice" }, wasRunning
      ? "The agent restarted: the reply was cut short."
      : "The agent restarted: the conversation was reloaded."));
    this.turn = null;
    this.showProgress(null, "");
    this.onTurnState(false);
  }

  answer() {
    if (!this.turn) this.turn = { id: null, answer: null, changes: [] };
    if (!this.turn.answer) {
      const bubble = el("div", { class: "msg assistant", "data-live": "1" });
      this.live.append(bubble);
      this.turn.answer = new StreamingMarkdown(bubble);
    }
    return this.turn.answer;
  }

  closeAnswer() {
    if (this.turn && this.turn.answer) {
      this.turn.answer.flush();
      this.turn.answer = null;
    }
  }

  endTurn(frame, note) {
    if (this.turn && this.turn.answer) this.turn.answer.flush();
    if (note) this.live.append(el("p", { class: "notice" }, note));
    const changes = this.turn ? this.turn.changes : [];
    if (changes.length) this.live.append(this.memory.changeList(changes));
    if (frame.usage) this.onUsage(frame.usage);
    this.turn = null;
    this.showProgress(null, "");
    this.onTurnState(false);
  }

  /** What a tool call changed in memory (any memory tool, any dialect), each with its undo. */
  memoryChanges(changes) {
    for (const c of changes) {
      const what = c.path || `“${excerpt(c.text)}”`;
      let change = null;
      if (c.change === "saved") {
        change = { line: `saved ${what}`, undo: { kind: "delete", noteId: c.note_id, text: String(c.text || "").trim() } };
      } else if (c.change === "updated") {
        change = { line: `updated ${what}`, undo: { kind: "previous", noteId: c.note_id, text: String(c.text || "").trim() } };
      } else if (c.change === "deleted") {
        change = { line: `deleted ${c.path || shortId(c.note_id)}`, undo: { kind: "restore", noteId: c.note_id } };
      }
      if (change && this.turn) this.turn.changes.push(this.memory.record(change));
    }
  }

  scroll(force) {
    const box = this.root;
    if (force || box.scrollHeight - box.scrollTop - box.clientHeight < 120) box.scrollTop = box.scrollHeight;
  }
}

function userBubble(text, seq) {
  return el("div", { class: "msg user", "data-seq": seq }, text);
}

function assistantBubble(text, seq) {
  const bubble = el("div", { class: "msg assistant", "data-seq": seq });
  bubble.append(render(text));
  return bubble;
}

function toolLine(name, args) {
  const status = el("span", { class: "tool-status" }, "running");
  const summary = el("span", { class: "tool-summary" }, "");
  const detail = el("pre", { class: "tool-detail" }, "arguments: " + (args || ""));
  const node = el("details", { class: "tool running" },
    el("summary", {}, el("span", { class: "tool-name" }, name), " ", status, " ", summary),
    detail);
  return {
    node,
    setDone(ok, text, ms) {
      node.classList.remove("running");
      node.classList.add(ok ? "ok" : "failed");
      status.textContent = ok ? "done" : "failed";
      summary.textContent = (text || "") + (ms !== undefined ? ` (${ms} ms)` : "");
    },
    setDetail(text) {
      detail.append("\nresult: " + text);
    },
  };
}

const CHOICES = [
  { key: ["1", "y"], label: "Allow once", approved: true, scope: "once" },
  { key: ["2", "a"], label: "Allow for this session", approved: true, scope: "session" },
  { key: ["3", "n"], label: "Deny", approved: false },
];

/** An approval: picking an answer (click, 1-3, y/a/n, arrows) only selects; Confirm sends. */
function approvalCard(client, frame) {
  const shownAt = performance.now();
  let picked = -1;
  const buttons = CHOICES.map((c, i) => el("button", {
    type: "button", class: "choice", role: "radio", "aria-checked": "false",
    onclick: () => pick(i),
  }, `${c.label} (${c.key[1]})`));
  const confirm = el("button", { type: "button", class: "primary", disabled: true, onclick: () => send() }, "Confirm");
  const status = el("span", { class: "approval-status", role: "status" }, "Pick an answer, then Confirm.");
  const card = el("div", { class: "approval", tabindex: "0", role: "group", "aria-label": "approval for " + frame.name },
    el("p", {}, el("strong", {}, frame.name), " wants to run:"),
    el("pre", {}, frame.arguments || ""),
    // Why the runtime asks (a memory delete after untrusted input): as text, never markup.
    frame.reason ? el("p", { class: "approval-reason" }, frame.reason) : null,
    el("div", { class: "choices", role: "radiogroup" }, buttons),
    el("div", { class: "approval-actions" }, confirm, " ", status));
  function pick(i) {
    if (card.dataset.answered) return;
    picked = i;
    buttons.forEach((b, k) => b.setAttribute("aria-checked", String(k === i)));
    confirm.disabled = false;
    status.textContent = `“${CHOICES[i].label}” picked: Confirm (or Enter) sends it.`;
  }
  function send(choice = picked) {
    if (choice < 0 || card.dataset.answered) return;
    const c = CHOICES[choice];
    const frameOut = { type: "approve", call_id: frame.call_id, approved: c.approved };
    if (c.approved) frameOut.scope = c.scope;
    if (!client.send(frameOut)) {
      status.textContent = "Offline: the answer was not sent.";
      return;
    }
    card.dataset.answered = "1";
    buttons.forEach((b) => { b.disabled = true; });
    confirm.disabled = true;
    status.textContent = "Answered: " + c.label + ".";
  }
  card.addEventListener("keydown", (e) => {
    if (performance.now() - shownAt < APPROVAL_GRACE_MS) return;
    if (e.key === "Escape") { e.preventDefault(); send(2); return; }
    if (e.key === "Enter" && e.target === card) {
      e.preventDefault();
      if (picked < 0) status.textContent = "Pick an answer first: 1, 2 or 3 (or y, a, n).";
      else send();
      return;
    }
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      pick((Math.max(picked, 0) + (e.key === "ArrowDown" ? 1 : 2)) % 3);
      return;
    }
    const i = CHOICES.findIndex((c) => c.key.includes(e.key.toLowerCase()));
    if (i >= 0 && !e.ctrlKey && !e.metaKey && !e.altKey) { e.preventDefault(); pick(i); }
  });
  queueMicrotask(() => card.focus());
  return card;
}
