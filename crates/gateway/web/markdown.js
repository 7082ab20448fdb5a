// A small Markdown renderer that builds DOM nodes (never HTML strings): paragraphs, headings,
// lists, block quotes, fenced code (highlighted), tables, rules, and inline code, emphasis,
// strike-through and links. Model output is untrusted: raw HTML stays text, images are never
// loaded (they become a link), and a link opens only for http(s) or mailto addresses on another
// host, in a new tab without opener or referrer.

import { highlight } from "./highlight.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?/;
const ITEM = /^( {0,6})([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

function isBlockStart(line, next) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    ITEM.test(line) || (line.includes("|") && next !== undefined && TABLE_SEP.test(next) && next.includes("-"));
}

/** Renders Markdown `text` into a DocumentFragment. */
export function render(text) {
  const out = document.createDocumentFragment();
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === "") { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence)) body.push(lines[i++]);
      i++;
      const code = document.createElement("code");
      if (m[2]) code.dataset.lang = m[2];
      code.append(highlight(body.join("\n"), m[2]));
      const pre = document.createElement("pre");
      pre.append(code);
      out.append(pre);
    } else if ((m = HEADING.exec(line))) {
      const h = document.createElement("h" + Math.min(6, m[1].length + 2));
      h.append(inline(m[2]));
      out.append(h);
      i++;
    } else if (RULE.test(line)) {
      out.append(document.createElement("hr"));
      i++;
    } else if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].replace(QUOTE, ""));
      const q = document.createElement("blockquote");
      q.append(render(body.join("\n")));
      out.append(q);
    } else if (ITEM.test(line)) {
      i = list(lines, i, out);
    } else if (line.includes("|") && TABLE_SEP.test(lines[i + 1] || "") && (lines[i + 1] || "").includes("-")) {
      i = table(lines, i, out);
    } else {
      const body = [line];
      i++;
      while (i < lines.length && lines[i].trim() !== "" && !isBlockStart(lines[i], lines[i + 1])) body.push(lines[i++]);
      const p = document.createElement("p");
      p.append(inline(body.join("\n")));
      out.append(p);
    }
  }
  return out;
}

function list(lines, i, out) {
  const first = ITEM.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const node = document.createElement(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) node.start = parseInt(first[2], 10);
  const indent = first[1].length;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const body = [m[3]];
    i++;
    while (i < lines.length && lines[i].trim() !== "") {
      const sub = ITEM.exec(lines[i]);
      if (sub && sub[1].length <= indent) break;
      body.push(lines[i].replace(/^ {1,4}/, ""));
      i++;
    }
    const li = document.createElement("li");
    if (body.length === 1) li.append(inline(body[0]));
    else {
      // The first line is the item's text; what follows (a nested list, more lines) is blocks.
      const rest = body.slice(1);
      li.append(inline(body[0]));
      li.append(render(rest.join("\n")));
    }
    node.append(li);
    if (i < lines.length && lines[i].trim() === "" && ITEM.test(lines[i + 1] || "")) i++;
  }
  out.append(node);
  return i;
}

function cells(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(lines, i, out) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : "");
  i += 2;
  const tableNode = document.createElement("table");
  const thead = tableNode.createTHead().insertRow();
  head.forEach((c, k) => {
    const th = document.createElement("th");
    th.append(inline(c));
    if (align[k]) th.className = "align-" + align[k];
    thead.append(th);
  });
  const tbody = tableNode.createTBody();
  while (i < lines.length && lines[i].includes("|") && lines[i].trim() !== "") {
    const row = tbody.insertRow();
    cells(lines[i]).slice(0, head.length).forEach((c, k) => {
      const td = row.insertCell();
      td.append(inline(c));
      if (align[k]) td.className = "align-" + align[k];
    });
    i++;
  }
  const wrap = document.createElement("div");
  wrap.className = "table-wrap";
  wrap.append(tableNode);
  out.append(wrap);
  return i;
}

const INLINE = new RegExp([
  "(`+)([\\s\\S]*?[^`])\\1(?!`)", // 1,2 code
  "!\\[([^\\]]*)\\]\\(\\s*<?([^)\\s>]*)>?(?:\\s+\"[^\"]*\")?\\s*\\)", // 3,4 image
  "\\[((?:[^\\[\\]]|\\[[^\\]]*\\])+)\\]\\(\\s*<?([^)\\s>]*)>?(?:\\s+\"[^\"]*\")?\\s*\\)", // 5,6 link
  "<((?:https?|mailto):[^>\\s]+)>", // 7 autolink
  "((?:https?:\\/\\/)[^\\s<>()\"'`]+[^\\s<>()\"'`.,;:!?*_])", // 8 bare URL
  "\\*\\*(?=\\S)([\\s\\S]*?\\S)\\*\\*", // 9 strong
  "__(?=\\S)([\\s\\S]*?\\S)__", // 10 strong
  "~~(?=\\S)([\\s\\S]*?\\S)~~", // 11 strike
  "\\*(?=[^\\s*])([\\s\\S]*?[^\\s*])\\*", // 12 em
  "(?<![\\w])_(?=\\S)([\\s\\S]*?\\S)_(?![\\w])", // 13 em
  "\\\\([\\\\`*_{}\\[\\]()#+\\-.!|~<>])", // 14 escape
  "( {2,}|\\\\)\\n", // 15 hard break
].join("|"), "g");

/** Inline Markdown `text` as a DocumentFragment. */
export function inline(text) {
  const out = document.createDocumentFragment();
  const re = new RegExp(INLINE.source, "g");
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) out.append(document.createTextNode(text.slice(last, m.index)));
    last = m.index + m[0].length;
    if (m[2] !== undefined) {
      const code = document.createElement("code");
      code.textContent = m[2].replace(/^ (.*) $/s, "$1");
      out.append(code);
    } else if (m[3] !== undefined) {
      // Images are never loaded: a link to them instead, labelled as an image.
      out.append(link("image: " + (m[3] || "untitled"), m[4], true));
    } else if (m[5] !== undefined) {
      out.append(link(m[5], m[6], false));
    } else if (m[7] !== undefined) {
      out.append(link(m[7], m[7], true));
    } else if (m[8] !== undefined) {
      out.append(link(m[8], m[8], true));
    } else if (m[9] !== undefined || m[10] !== undefined) {
      out.append(wrap("strong", m[9] ?? m[10]));
    } else if (m[11] !== undefined) {
      out.append(wrap("del", m[11]));
    } else if (m[12] !== undefined || m[13] !== undefined) {
      out.append(wrap("em", m[12] ?? m[13]));
    } else if (m[14] !== undefined) {
      out.append(document.createTextNode(m[14]));
    } else if (m[15] !== undefined) {
      out.append(document.createElement("br"));
    }
  }
  if (last < text.length) out.append(document.createTextNode(text.slice(last)));
  return out;
}

function wrap(tag, text) {
  const node = document.createElement(tag);
  node.append(inline(text));
  return node;
}

/** The address a link may open, or null: http(s) and mailto only, never this host. */
export function safeHref(href) {
  let url;
  try {
    url = new URL(href, "https://invalid.invalid/");
  } catch {
    return null;
  }
  if (url.hostname === "invalid.invalid") return null; // relative: would point at the gateway
  if (url.protocol === "mailto:") return url.href;
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  // Cookies are not kept apart by port: a link to this host name, any port, stays text.
  if (url.hostname === location.hostname) return null;
  return url.href;
}

function link(label, href, plainLabel) {
  const safe = safeHref(href);
  const node = document.createElement(safe ? "a" : "span");
  if (plainLabel) node.textContent = label;
  else node.append(inline(label));
  if (safe) {
    node.href = safe;
    node.target = "_blank";
    node.rel = "noopener noreferrer nofollow";
    node.title = safe;
  } else {
    node.className = "inert-link";
    node.title = "link not opened: " + String(href).slice(0, 200);
  }
  return node;
}

/**
 * A message rendered as it streams: the text up to the last blank line outside a code fence is
 * rendered once; only the open block after it is rendered again on each update.
 */
export class StreamingMarkdown {
  constructor(container) {
    this.container = container;
    this.done = document.createElement("div");
    this.tail = document.createElement("div");
    this.done.className = "md-done";
    this.tail.className = "md-tail";
    container.append(this.done, this.tail);
    this.text = "";
    this.doneLen = 0;
    this.scanPos = 0;
    this.inFence = null;
    this.scheduled = false;
  }

  append(delta) {
    this.text += delta;
    this.schedule();
  }

  set(text) {
    if (text === this.text) return;
    this.text = text;
    this.done.replaceChildren();
    this.doneLen = 0;
    this.scanPos = 0;
    this.inFence = null;
    this.flush();
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => this.flush());
  }

  /** Moves complete blocks to `done` and re-renders the tail. */
  flush() {
    this.scheduled = false;
    let boundary = this.doneLen;
    let pos = this.scanPos;
    const text = this.text;
    for (;;) {
      const nl = text.indexOf("\n", pos);
      if (nl < 0) break;
      const line = text.slice(pos, nl);
      const fence = FENCE.exec(line);
      if (this.inFence) {
        if (line.trimStart().startsWith(this.inFence)) this.inFence = null;
      } else if (fence) {
        this.inFence = fence[1];
      } else if (line.trim() === "") {
        // A list item after the blank line continues the list: decide once that line is whole
        // (until then the blank line is looked at again).
        const after = text.indexOf("\n", nl + 1);
        if (after < 0) break;
        if (!ITEM.test(text.slice(nl + 1, after))) boundary = nl + 1;
      }
      pos = nl + 1;
    }
    this.scanPos = pos;
    if (boundary > this.doneLen) {
      this.done.append(render(text.slice(this.doneLen, boundary)));
      this.doneLen = boundary;
    }
    this.tail.replaceChildren(render(text.slice(this.doneLen)));
  }
}
