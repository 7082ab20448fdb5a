// The protocol client: one WebSocket to the gateway, `hello` authenticated by the session
// cookie (empty token), the current session and the last `seq` applied. It reconnects with
// backoff (0.25 s doubling to 8 s) and resumes with `hello {session_id, last_seq}`: the gateway
// replays exactly the events after it, and any turn event not newer than the last one applied is
// dropped, so text is never lost or shown twice. A gateway restart (its `last_seq` below ours)
// is reported so the page reloads the stored conversation. Unknown frame types are passed on
// and ignored by the page; replies to requests are matched by type (or `ref` for errors).

export const PROTOCOL_VERSION = 1;

/** Frames answering a request, by the request's type. */
const ANSWERS = {
  list_sessions: ["session_list"],
  new_session: ["session_created"],
  switch_session: ["session_switched"],
  get_history: ["history"],
  list_notes: ["note_list"],
  search_notes: ["note_results"],
  get_note: ["note"],
  edit_note: ["note_edited"],
  delete_note: ["note_deleted"],
  note_history: ["note_versions"],
  list_deleted_notes: ["deleted_notes"],
  restore_note: ["note_restored"],
  confirm_note: ["note_confirmed"],
  get_usage: ["usage"],
  list_pending_memories: ["pending_memories"],
  accept_memory: ["memory_accepted"],
  reject_memory: ["memory_rejected"],
  search_conversations: ["conversation_results"],
};

export class Client {
  /**
   * @param {object} o
   * @param {string} o.url ws:// or wss:// address of the gateway
   * @param {string} o.userId
   * @param {(frame: object) => void} o.onFrame every frame that is not a request's answer
   * @param {(state: string, detail?: object) => void} o.onState "connecting", "online",
   *   "offline", "signed_out", "resumed" ({restarted, session})
   */
  constructor({ url, userId, onFrame, onState, WebSocketImpl, setTimer }) {
    this.url = url;
    this.userId = userId;
    this.onFrame = onFrame;
    this.onState = onState;
    this.WebSocketImpl = WebSocketImpl || globalThis.WebSocket;
    this.setTimer = setTimer || ((fn, ms) => setTimeout(fn, ms));
    this.sessionId = null;
    this.lastSeq = null;
    this.online = false;
    this.stopped = false;
    this.backoff = 250;
    this.pending = [];
    this.socket = null;
  }

  connect() {
    this.stopped = false;
    this.onState("connecting");
    const ws = new this.WebSocketImpl(this.url);
    this.socket = ws;
    ws.onopen = () => {
      const hello = { type: "hello", protocol_version: PROTOCOL_VERSION, token: "", user_id: this.userId };
      if (this.sessionId) hello.session_id = this.sessionId;
      if (this.sessionId && this.lastSeq !== null) hello.last_seq = this.lastSeq;
      ws.send(JSON.stringify(hello));
    };
    ws.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame && typeof frame.type === "string") this.receive(frame);
    };
    ws.onclose = () => {
      if (this.socket !== ws) return;
      this.socket = null;
      const wasOnline = this.online;
      this.online = false;
      for (const p of this.pending.splice(0)) p.reject(new Error("the connection dropped"));
      if (this.stopped) return;
      this.onState("offline");
      const wait = wasOnline ? 250 : this.backoff;
      this.backoff = Math.min(wasOnline ? 500 : this.backoff * 2, 8000);
      this.setTimer(() => { if (!this.stopped) this.connect(); }, wait);
    };
  }

  stop() {
    this.stopped = true;
    if (this.socket) this.socket.close();
  }

  /** Applies one frame from the gateway. */
  receive(frame) {
    switch (frame.type) {
      case "hello_ok": {
        const s = frame.session;
        const restarted = this.sessionId === s.session_id && this.lastSeq !== null && s.last_seq < this.lastSeq;
        const resumed = this.sessionId === s.session_id;
        if (restarted || !resumed) this.lastSeq = null;
        this.sessionId = s.session_id;
        this.online = true;
        this.backoff = 250;
        this.onState("online");
        this.onState("resumed", { restarted, resumed, session: s, model: frame.model });
        return;
      }
      case "error":
        if (frame.ref === "hello") {
          if (frame.code === "unauthorized") {
            this.stopped = true;
            this.onState("signed_out");
            return;
          }
          if (frame.code === "session_not_found") {
            // The session is gone (another gateway's?): start afresh on the next connection.
            this.sessionId = null;
            this.lastSeq = null;
          }
        }
        if (frame.code === "events_expired") {
          this.onFrame(frame);
          return;
        }
        if (this.answer(frame)) return;
        this.onFrame(frame);
        return;
      case "session_created":
      case "session_switched":
        this.sessionId = frame.session.session_id;
        this.lastSeq = null;
        break;
      case "lagged":
        this.send({ type: "resync", session_id: frame.session_id, after_seq: this.lastSeq ?? 0 });
        return;
      default:
        break;
    }
    if (typeof frame.seq === "number") {
      if (frame.session_id !== this.sessionId) return;
      if (this.lastSeq !== null && frame.seq <= this.lastSeq) return;
      this.lastSeq = frame.seq;
    }
    if (this.answer(frame)) return;
    this.onFrame(frame);
  }

  /** Resolves the oldest request this frame answers; true if there was one. */
  answer(frame) {
    const i = this.pending.findIndex((p) =>
      frame.type === "error" ? p.type === frame.ref : p.answers.includes(frame.type));
    if (i < 0) return false;
    const [p] = this.pending.splice(i, 1);
    if (frame.type === "error") p.reject(Object.assign(new Error(frame.message), { code: frame.code }));
    else p.resolve(frame);
    // Session changes are also the page's business.
    if (frame.type === "session_switched" || frame.type === "session_created") this.onFrame(frame);
    return true;
  }

  /** Sends a frame; false when offline. */
  send(frame) {
    if (!this.socket || !this.online) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  /** Sends a request frame and resolves with its answer (rejects with its error). */
  request(frame) {
    return new Promise((resolve, reject) => {
      if (!this.send(frame)) {
        reject(new Error("offline: wait for the connection to come back"));
        return;
      }
      this.pending.push({ type: frame.type, answers: ANSWERS[frame.type] || [], resolve, reject });
    });
  }
}
