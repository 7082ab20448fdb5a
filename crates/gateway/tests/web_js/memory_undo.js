// Undoing a save in memory.js, run in the page by `web_js.rs` against a stub client that records
// the note frames sent and answers `note_history` with a canned history: the note is deleted only
// while its current version still says what the save wrote; a note changed since is left alone
// (the change still pending) and a note deleted already ends the change; the line says which. A
// note's card shows the text the user last confirmed beside a change awaiting confirmation.
// Returns {ran, failures}.

(async () => {
  const { Memory } = await import("/assets/memory.js");
  const failures = [];
  let ran = 0;
  const eq = (name, got, want) => {
    ran++;
    const [g, w] = [JSON.stringify(got), JSON.stringify(want)];
    if (g !== w) failures.push(`${name}: got ${g}, want ${w}`);
  };
  const version = (n, text) => ({ version: n, text, version_token: `v-${n}`, saved_at: "2026-11-28T09:00:00.000Z" });

  /** Undoes a save of "Lives in Porto" whose history is `history`: the frames sent and the line's state. */
  const undoSave = async (history) => {
    const sent = [];
    const client = {
      request: async (frame) => {
        if (frame.type.endsWith("_note") || frame.type === "note_history") sent.push(frame.type);
        if (frame.type === "note_history") return Object.assign({ note_id: "note-1" }, history);
        if (frame.type === "delete_note") return { note_id: "note-1" };
        return { notes: [], total: 0, memories: [] };
      },
    };
    const memory = new Memory({ client, root: document.createElement("div"), onOpenHit: () => {} });
    const change = memory.record({ line: "saved “Lives in Porto”", undo: { kind: "delete", noteId: "note-1", text: "Lives in Porto" } });
    const item = memory.changeItem(change);
    await memory.undo(change, item.querySelector("button"), item.querySelector(".change-state"));
    return { sent, state: item.querySelector(".change-state").textContent, change: change.state };
  };

  eq("an unchanged save is deleted after its history is read",
    await undoSave({ versions: [version(1, "Lives in Porto\n")] }),
    { sent: ["note_history", "delete_note"], state: " undone", change: "undone" });
  eq("a save updated since is not deleted",
    await undoSave({ versions: [version(1, "Lives in Porto"), version(2, "Lives in Braga")] }),
    { sent: ["note_history"], state: " The note changed since: see its history.", change: "pending" });
  eq("a save deleted already is said to be gone",
    await undoSave({ versions: [version(1, "Lives in Porto")], deleted_at: "2026-11-29T09:00:00.000Z" }),
    { sent: ["note_history"], state: " The note is already deleted: nothing to undo.", change: "undone" });

  // A note changed after untrusted input shows the text the user last confirmed beside it.
  const memory = new Memory({ client: { request: async () => ({}) }, root: document.createElement("div"), onOpenHit: () => {} });
  const provenance = { origin: "file", confirmed: false };
  const card = (extra) => memory.card(Object.assign({ note_id: "note-2", text: "Loves the buses", version: "v", created_at: "", updated_at: "", provenance }, extra));
  eq("a changed note says what it replaced",
    card({ confirmed_text: "Loves the trams" }).querySelector(".was").textContent, " · was “Loves the trams”");
  eq("a note never confirmed has nothing to say so", card({}).querySelector(".was"), null);

  return { ran, failures };
})()
