// The user's memory, through the same governed note frames as the TUI's /memory: notes listed
// (newest first, paged), searched, filtered by category and tag; a note's history and restore,
// edit, delete, confirm of unconfirmed notes (with where they came from), deleted notes; what
// capture proposes (mode `suggest`) with accept and reject, and what it captured; past
// conversations searched, a hit opening its session (a search of either says how it read its
// words about time); and the memory changes of a turn (or made here), each with its undo. Every
// text shown (notes, proposals, messages) is a text node.

import { el, clear, excerpt, shortId } from "./dom.js";

const CATEGORIES = ["fact", "pattern", "preference", "capability"];

/** Why an undo of a save or an update did nothing: the note no longer says what it wrote. */
const CHANGED = "The note changed since: see its history.";

/** ` (read "last week" as …)`: how a search answer `r` read its words about time, if they named one. */
const timeRead = (r) => (r.time && r.time.read ? ` (${r.time.read})` : "");

/** What a proposal's untrusted input (`file`, `web`, …) was, in words; an unknown one said plainly. */
const untrustedSource = (from) => ({
  file: "a file", shell: "shell output", web: "a web page", note: "an unconfirmed note",
  client: "text from another client", mcp: "an MCP tool's answer",
}[from] || "text you did not write");

export class Memory {
  constructor({ client, root, onOpenHit }) {
    this.client = client;
    this.root = root;
    this.onOpenHit = onOpenHit;
    this.notes = [];
    this.cursor = null;
    this.mode = "list";
    // Bumped by each view; an answer arriving after another view was asked for draws nothing.
    this.view = 0;
    this.query = el("input", { type: "search", placeholder: "Search notes or past conversations", "aria-label": "Search", id: "note-search" });
    this.scope = el("select", { "aria-label": "Search in", id: "search-scope" },
      el("option", { value: "notes" }, "in notes"), el("option", { value: "conversations" }, "in past conversations"));
    this.pendingButton = el("button", { type: "button", id: "pending-memories", onclick: () => this.showPending() }, "Pending");
    this.category = el("select", { "aria-label": "Category", id: "note-category" },
      el("option", { value: "" }, "All categories"), CATEGORIES.map((c) => el("option", { value: c }, c)));
    this.tag = el("select", { "aria-label": "Tag", id: "note-tag" }, el("option", { value: "" }, "All tags"));
    this.status = el("p", { class: "notice", role: "status" });
    this.list = el("ul", { class: "notes", id: "notes" });
    this.more = el("div");
    const form = el("form", { class: "note-filters", role: "search" }, this.query, this.scope, this.category, this.tag,
      el("button", { type: "submit" }, "Search"),
      el("button", { type: "button", onclick: () => this.showDeleted() }, "Deleted notes"),
      this.pendingButton);
    form.addEventListener("submit", (e) => { e.preventDefault(); this.refresh(); });
    this.category.addEventListener("change", () => { this.query.value = ""; this.refresh(); });
    this.tag.addEventListener("change", () => this.draw());
    clear(root).append(form, this.status, this.list, this.more);
    this.changes = [];
  }

  /** Lists (or searches) from the start. */
  async refresh() {
    const view = ++this.view;
    this.notes = [];
    this.cursor = null;
    const q = this.query.value.trim();
    this.countPending();
    if (q && this.scope.value === "conversations") return this.searchConversations(q);
    try {
      if (q) {
        this.mode = "search";
        const r = await this.client.request({ type: "search_notes", query: q, limit: 50 });
        if (view !== this.view) return;
        this.notes = r.notes;
        this.status.textContent = `${r.notes.length} notes match “${excerpt(q, 40)}”${timeRead(r)}.`;
      } else {
        this.mode = "list";
        await this.page();
      }
    } catch (e) {
      this.status.textContent = e.message;
    }
    if (view === this.view) this.draw();
  }

  async page() {
    const frame = { type: "list_notes", limit: 50 };
    if (this.category.value) frame.category = this.category.value;
    if (this.cursor) frame.cursor = this.cursor;
    const r = await this.client.request(frame);
    this.notes = this.notes.concat(r.notes);
    this.cursor = r.next_cursor || null;
    this.status.textContent = `${r.total} notes.`;
  }

  draw() {
    if (this.mode !== "list" && this.mode !== "search") return;
    const tags = new Set(this.notes.flatMap((n) => n.tags || []));
    const keep = this.tag.value;
    clear(this.tag).append(el("option", { value: "" }, "All tags"),
      ...[...tags].sort().map((t) => el("option", { value: t }, t)));
    this.tag.value = tags.has(keep) ? keep : "";
    const shown = this.notes.filter((n) =>
      (!this.tag.value || (n.tags || []).includes(this.tag.value)) &&
      (!this.category.value || this.mode !== "search" || n.category === this.category.value));
    clear(this.list).append(...shown.map((n) => this.card(n)));
    clear(this.more);
    if (this.mode === "list" && this.cursor) {
      this.more.append(el("button", { type: "button", onclick: async () => {
        try { await this.page(); } catch (e) { this.status.textContent = e.message; }
        this.draw();
      } }, "More notes"));
    }
  }

  card(note) {
    const body = el("div", { class: "note-text" }, note.text);
    const extra = el("div", { class: "note-extra" });
    const unconfirmed = note.provenance && note.provenance.confirmed === false;
    const meta = el("p", { class: "note-meta" },
      note.category ? note.category + " · " : "",
      (note.tags || []).length ? "#" + note.tags.join(" #") + " · " : "",
      "updated " + String(note.updated_at || "").slice(0, 16).replace("T", " "),
      note.provenance ? " · from " + note.provenance.origin : "",
      unconfirmed ? el("span", { class: "badge" }, " unconfirmed") : "",
      // A change awaiting confirmation: what the user last confirmed, which recall still shows.
      unconfirmed && note.confirmed_text
        ? el("span", { class: "was" }, " · was “" + note.confirmed_text + "”") : "");
    const actions = el("div", { class: "note-actions" },
      el("button", { type: "button", onclick: () => this.edit(note, body, actions) }, "Edit"),
      el("button", { type: "button", onclick: () => this.history(note, extra) }, "History"),
      el("button", { type: "button", onclick: (e) => this.remove(note, e.target) }, "Delete"),
      unconfirmed ? el("button", { type: "button", onclick: () => this.confirm(note) }, "Confirm") : "");
    return el("li", { class: "note", "data-note": note.note_id }, body, meta, actions, extra);
  }

  edit(note, body, actions) {
    const area = el("textarea", { rows: "4", "aria-label": "Note text" });
    area.value = note.text;
    const save = async () => {
      try {
        const r = await this.client.request({ type: "edit_note", note_id: note.note_id, content: area.value, version: note.version });
        this.record({ line: `edited “${excerpt(r.note.text)}”`, undo: { kind: "edit", noteId: note.note_id, text: note.text, version: r.note.version } }, true);
        this.replace(r.note);
      } catch (e) {
        this.status.textContent = e.message;
      }
    };
    const form = el("form", { class: "note-edit" }, area,
      el("button", { type: "submit", class: "primary" }, "Save"),
      el("button", { type: "button", onclick: () => this.draw() }, "Cancel"));
    form.addEventListener("submit", (e) => { e.preventDefault(); save(); });
    area.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); }
      if (e.key === "Escape") this.draw();
    });
    body.replaceWith(form);
    actions.hidden = true;
    area.focus();
  }

  async remove(note, button) {
    if (button.dataset.armed !== "1") {
      button.dataset.armed = "1";
      button.textContent = "Really delete?";
      return;
    }
    try {
      await this.client.request({ type: "delete_note", note_id: note.note_id });
      this.record({ line: `deleted “${excerpt(note.text)}”`, undo: { kind: "restore", noteId: note.note_id } }, true);
      this.notes = this.notes.filter((n) => n.note_id !== note.note_id);
      this.draw();
    } catch (e) {
      this.status.textContent = e.message;
    }
  }

  async confirm(note) {
    try {
      const r = await this.client.request({ type: "confirm_note", note_id: note.note_id });
      this.replace(Object.assign(r.note, { provenance: Object.assign({}, r.note.provenance, { confirmed: true }) }));
      this.status.textContent = "Confirmed: recall may use it now.";
    } catch (e) {
      this.status.textContent = e.message;
    }
  }

  async history(note, box) {
    try {
      const r = await this.client.request({ type: "note_history", note_id: note.note_id });
      clear(box).append(el("ol", { class: "versions" }, r.versions.map((v) => {
        const current = v.edit_token === note.version && !v.replaced_at;
        const p = v.provenance || {};
        return el("li", {},
          el("div", { class: "note-text" }, v.text),
          el("p", { class: "note-meta" }, `version ${v.version} · ${String(v.saved_at).slice(0, 16).replace("T", " ")}`,
            p.origin ? ` · from ${p.origin}${p.confirmed === false ? ", unconfirmed" : ""}` : "",
            current ? " · current" : ""),
          current ? "" : el("button", { type: "button", onclick: async () => {
            try {
              const back = await this.client.request({ type: "restore_note", note_id: note.note_id, version: v.version });
              this.record({ line: `reverted to version ${v.version} of ${shortId(note.note_id)}`, undo: { kind: "previous", noteId: note.note_id, text: back.note.text.trim() } }, true);
              this.replace(back.note);
            } catch (e) { this.status.textContent = e.message; }
          } }, `Restore version ${v.version}`));
      })));
    } catch (e) {
      this.status.textContent = e.message;
    }
  }

  /** A view other than the notes: `frame`'s answer drawn by `draw` as `[status line, items]`. */
  async show(mode, frame, draw) {
    const view = ++this.view;
    this.mode = mode;
    clear(this.more);
    try {
      const r = await this.client.request(frame);
      if (view !== this.view) return;
      const [status, items] = draw(r);
      this.status.textContent = status;
      clear(this.list).append(...items);
    } catch (e) {
      if (view !== this.view) return;
      this.status.textContent = e.message;
      clear(this.list);
    }
  }

  showDeleted() {
    return this.show("deleted", { type: "list_deleted_notes" }, (r) => [
      `${r.notes.length} deleted notes can be restored.`,
      r.notes.map((d) => el("li", { class: "note deleted" },
        el("div", { class: "note-text" }, d.note.text),
        el("p", { class: "note-meta" }, `deleted ${String(d.deleted_at).slice(0, 10)} · purged after ${String(d.purge_after).slice(0, 10)}`),
        el("button", { type: "button", onclick: async () => {
          try {
            const back = await this.client.request({ type: "restore_note", note_id: d.note.note_id });
            this.record({ line: `restored “${excerpt(d.note.text)}”`, undo: { kind: "delete", noteId: d.note.note_id, text: String(back.note.text).trim() } }, true);
            this.showDeleted();
          } catch (e) { this.status.textContent = e.message; }
        } }, "Restore"))),
    ]);
  }

  /** The Pending button counts what capture proposes (quietly: an older gateway has no such frame). */
  async countPending() {
    const n = await this.client.request({ type: "list_pending_memories" }).then((r) => r.memories.length, () => 0);
    this.pendingButton.textContent = n ? `Pending (${n})` : "Pending";
  }

  /** What capture proposes to remember (mode `suggest`), oldest first, each to accept or reject. */
  showPending() {
    return this.show("pending", { type: "list_pending_memories" }, (r) => {
      const n = r.memories.length;
      this.pendingButton.textContent = n ? `Pending (${n})` : "Pending";
      return [n ? `${n} memories proposed from your conversations: accept what is right.` : "Nothing proposed is waiting.",
        r.memories.map((p) => this.pendingCard(p))];
    });
  }

  /** A card of one proposal: what it would do, and what the conversation had read before it. */
  pendingCard(p) {
    const verb = { add: "add", update: "update", delete: "delete" }[p.action] || String(p.action);
    const was = p.note_text ? ` “${excerpt(p.note_text)}”` : "";
    const what = p.action === "delete" ? `forget note ${shortId(p.note_id)}${was}` : String(p.content || "");
    const item = el("li", { class: "note pending", "data-pending": p.id },
      el("div", { class: "note-text" }, what),
      el("p", { class: "note-meta" }, `proposed: ${verb}`,
        p.action === "update" ? ` of note ${shortId(p.note_id)}${was ? `, which says${was}` : ""}` : "",
        " · " + String(p.created_at || "").slice(0, 16).replace("T", " "),
        p.untrusted ? el("span", { class: "badge" }, ` · proposed after reading ${untrustedSource(p.untrusted)}: check it`) : ""),
      el("div", { class: "note-actions" },
        el("button", { type: "button", class: "primary", onclick: () => this.decide(p, item, true) }, "Accept"),
        el("button", { type: "button", onclick: () => this.decide(p, item, false) }, "Reject")));
    return item;
  }

  /** Accepts (through the memory pipeline, listed with its undo) or rejects one proposal. */
  async decide(p, item, accept) {
    for (const b of item.querySelectorAll("button")) b.disabled = true;
    try {
      if (accept) {
        const r = await this.client.request({ type: "accept_memory", id: p.id });
        const change = r.change ? this.capturedChange(r.change) : null;
        if (change) this.record(change, true);
        this.status.textContent = change ? `Accepted: ${change.line}.` : "Accepted: your notes already said it.";
      } else {
        await this.client.request({ type: "reject_memory", id: p.id });
        this.status.textContent = "Rejected: nothing was written.";
      }
      item.remove();
      this.countPending();
    } catch (e) {
      for (const b of item.querySelectorAll("button")) b.disabled = false;
      this.status.textContent = e.message;
    }
  }

  /** A change capture made (or an accepted proposal), as a change line with its undo. */
  capturedChange(c) {
    const what = `“${excerpt(c.text)}”`;
    if (c.action === "added") return { line: `captured: saved ${what}`, undo: { kind: "delete", noteId: c.note_id, text: String(c.text || "").trim() } };
    if (c.action === "updated") return { line: `captured: updated ${what}`, undo: { kind: "previous", noteId: c.note_id, text: String(c.text || "").trim() } };
    if (c.action === "deleted") return { line: `captured: deleted ${what}`, undo: { kind: "restore", noteId: c.note_id } };
    return null;
  }

  /**
   * `memory_captured`: its changes go to the Changes list (with their undo); the notice returned
   * says what was captured or proposed, with Review opening the proposals.
   */
  captured(report, { onReview, onDismiss }) {
    const changes = (report.changes || []).map((c) => this.capturedChange(c)).filter(Boolean);
    for (const c of changes) this.record(c, true);
    const pending = (report.pending || []).length;
    if (!changes.length && !pending) return null;
    const said = [];
    if (changes.length) said.push(changes.length === 1 ? changes[0].line : `${changes.length} changes captured (see Changes)`);
    if (pending === 1) {
      const p = report.pending[0];
      said.push(p.action === "delete"
        ? `proposed: forget “${excerpt(p.note_text || p.note_id || "a note")}”`
        : `proposed: “${excerpt(p.content || "a change")}”`);
    } else if (pending) said.push(`${pending} memories proposed`);
    this.countPending();
    const item = el("li", { class: "notification capture", "data-turn": report.turn_id },
      "🧠 Memory ", el("span", { class: "notification-text" }, said.join("; ")), " ",
      pending ? el("button", { type: "button", class: "link", onclick: () => onReview() }, "Review") : null,
      el("button", { type: "button", class: "link", "aria-label": "Dismiss", onclick: () => onDismiss(item) }, "×"));
    return item;
  }

  /** Messages of past conversations matching `q`, each opening its session at the message. */
  searchConversations(q) {
    return this.show("conversations", { type: "search_conversations", query: q, limit: 20 }, (r) => [
      `${r.hits.length} messages of past conversations match “${excerpt(q, 40)}”${timeRead(r)}.`,
      r.hits.map((h) => this.hitCard(h)),
    ]);
  }

  hitCard(h) {
    return el("li", { class: "note hit", "data-session": h.session_id, "data-seq": h.seq },
      el("p", { class: "note-meta" }, el("strong", {}, String(h.title || "(untitled)")),
        ` · ${String(h.date || "").slice(0, 16).replace("T", " ")} · ${h.speaker === "user" ? "you" : "the agent"}`),
      el("div", { class: "note-text" }, String(h.text || "")),
      (h.context || []).length ? el("ul", { class: "hit-context" }, h.context.map((c) =>
        el("li", {}, `${c.speaker === "user" ? "you" : "agent"}: ${excerpt(c.text, 120)}`))) : null,
      el("div", { class: "note-actions" },
        el("button", { type: "button", onclick: () => this.onOpenHit && this.onOpenHit(h) }, "Open")));
  }

  replace(note) {
    this.notes = this.notes.map((n) => (n.note_id === note.note_id ? note : n));
    this.draw();
  }

  /** Records a change with its undo; a change made here is listed at once. */
  record(change, here = false) {
    change.n = this.changes.length + 1;
    change.state = "pending";
    this.changes.push(change);
    if (here) {
      const list = document.getElementById("changes");
      if (list) list.append(this.changeItem(change));
    }
    return change;
  }

  changeList(changes) {
    return el("ul", { class: "changes" }, changes.map((c) => this.changeItem(c)));
  }

  changeItem(change) {
    const button = el("button", { type: "button", class: "link", onclick: () => this.undo(change, button, state) }, "Undo");
    const state = el("span", { class: "change-state" });
    return el("li", { class: "change", "data-change": change.n },
      `Memory ${change.n}: ${change.line} `, button, state);
  }

  async undo(change, button, state) {
    if (change.state !== "pending") return;
    const u = change.undo;
    try {
      if (u.kind === "restore") await this.client.request({ type: "restore_note", note_id: u.noteId });
      else if (u.kind === "edit") await this.client.request({ type: "edit_note", note_id: u.noteId, content: u.text, version: u.version });
      else if (u.kind === "delete" || u.kind === "previous") {
        const { last, why, gone } = await this.unchanged(u);
        if (gone) {
          // A save whose note is gone has nothing left to take back: done, so that Ctrl+Z goes on.
          change.state = "undone";
          button.disabled = true;
          state.textContent = " The note is already deleted: nothing to undo.";
          return;
        }
        if (why || (u.kind === "previous" && last.version < 2)) {
          state.textContent = " " + (why || CHANGED);
          return;
        }
        if (u.kind === "delete") await this.client.request({ type: "delete_note", note_id: u.noteId });
        else await this.client.request({ type: "restore_note", note_id: u.noteId, version: last.version - 1 });
      }
      change.state = "undone";
      button.disabled = true;
      state.textContent = " undone";
      if (this.mode !== "deleted") this.refresh();
    } catch (e) {
      state.textContent = " " + (e.code === "note_changed" ? CHANGED : e.message);
    }
  }

  /**
   * The first step of undoing a save or an update (`u.text`: what it wrote, trimmed): the note's
   * history read, and its current version while that still says `u.text`; else why not (`gone`:
   * the note of a save is deleted already).
   */
  async unchanged(u) {
    const h = await this.client.request({ type: "note_history", note_id: u.noteId });
    const last = h.versions[h.versions.length - 1];
    if (h.deleted_at) return u.kind === "delete" ? { gone: true } : { why: CHANGED };
    if (!last || last.text.trim() !== u.text) return { why: CHANGED };
    return { last };
  }

  /** Ctrl+Z: the latest change that can still be undone. */
  undoLatest() {
    const item = [...document.querySelectorAll("li.change")].reverse()
      .find((li) => this.changes[Number(li.dataset.change) - 1]?.state === "pending");
    if (item) item.querySelector("button").click();
  }
}
