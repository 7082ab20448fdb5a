// A small code highlighter: splits code into comment, string, number, keyword and plain runs
// and returns spans (text only, never markup). Good enough for the usual languages; unknown
// languages get the generic rules.

const KEYWORDS = {
  common: "if else for while do return break continue switch case default try catch finally throw new class function const let var import export from as in of true false null undefined this super async await yield static public private protected void",
  rust: "fn let mut pub impl trait struct enum match use mod crate self Self where dyn ref move unsafe loop type const static as in if else for while return break continue true false Some None Ok Err async await",
  python: "def class return if elif else for while in not and or is None True False import from as with try except finally raise lambda yield pass break continue global nonlocal async await self",
  sh: "if then else elif fi for do done while case esac function in export local return echo cd set unset",
  go: "func package import var const type struct interface map chan go defer return if else for range switch case default break continue nil true false",
};
const ALIASES = { rs: "rust", py: "python", bash: "sh", shell: "sh", zsh: "sh", golang: "go" };
const HASH_COMMENT = new Set(["python", "sh", "ruby", "rb", "yaml", "yml", "toml", "perl"]);

const cache = new Map();
function rules(lang) {
  const name = ALIASES[lang] || lang || "";
  if (cache.has(name)) return cache.get(name);
  const words = (KEYWORDS[name] || KEYWORDS.common).split(" ");
  const source = [
    `(${HASH_COMMENT.has(name) ? "#[^\\n]*" : "\\/\\/[^\\n]*|\\/\\*[\\s\\S]*?\\*\\/"})`,
    `("(?:[^"\\\\\\n]|\\\\.)*"|'(?:[^'\\\\\\n]|\\\\.)*'|\`(?:[^\`\\\\]|\\\\.)*\`)`,
    `(\\b\\d[\\d_]*(?:\\.\\d+)?(?:[eE][+-]?\\d+)?\\b|\\b0x[0-9a-fA-F]+\\b)`,
    `\\b(${words.join("|")})\\b`,
  ].join("|");
  const made = new RegExp(source, "g");
  cache.set(name, made);
  return made;
}

const CLASSES = [null, "hl-comment", "hl-string", "hl-number", "hl-keyword"];

/** Highlighted `code` as a DocumentFragment of text nodes and spans. */
export function highlight(code, lang) {
  const out = document.createDocumentFragment();
  const re = rules(String(lang || "").toLowerCase());
  re.lastIndex = 0;
  let last = 0;
  let match;
  while ((match = re.exec(code)) !== null) {
    if (match[0].length === 0) { re.lastIndex++; continue; }
    if (match.index > last) out.append(document.createTextNode(code.slice(last, match.index)));
    const group = match.findIndex((g, i) => i > 0 && g !== undefined);
    const span = document.createElement("span");
    span.className = CLASSES[group] || "";
    span.textContent = match[0];
    out.append(span);
    last = match.index + match[0].length;
  }
  if (last < code.length) out.append(document.createTextNode(code.slice(last)));
  return out;
}
