// Building DOM nodes without parsing HTML: every text goes in through textContent or a text
// node, so model output and notes can never become markup.

/** el("div", {class: "x", onclick: fn}, "text", child, ...) */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      node.className = value;
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function $(id) {
  return document.getElementById(id);
}

/** A short one-line excerpt. */
export function excerpt(text, max = 60) {
  const line = String(text || "").trim().split("\n")[0];
  return line.length > max || String(text || "").trim().includes("\n")
    ? line.slice(0, max).trimEnd() + "…"
    : line;
}

export function shortId(id) {
  return id && id.length > 13 ? id.slice(0, 13) + "…" : id || "";
}

/** How far a running tool call got, as the TUI says it: "3/10: notes/", "40%", "step 3". */
export function progressText(progress, total, message) {
  const number = (n) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
  const p = Number(progress) || 0;
  const t = Number(total);
  let amount;
  if (t > 0 && t <= 1) amount = `${Math.round(Math.min(100, Math.max(0, (p / t) * 100)))}%`;
  else if (t > 0) amount = `${number(p)}/${number(t)}`;
  else amount = `step ${number(p)}`;
  const line = String(message || "").split("\n")[0].trim();
  return line ? `${amount}: ${excerpt(line, 40)}` : amount;
}
