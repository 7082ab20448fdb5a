// Unit tests of the web client's pure modules (markdown.js, highlight.js, dom.js, and a proposal's
// card from memory.js), run in the page by `web_js.rs` through DevTools: imported from the gateway's own /assets/, each case
// checked, and the result returned as {ran, failures}. Untrusted text must stay text: no
// element the renderer did not mean to make, no link that is not http(s)/mailto to another host.

(async () => {
  const md = await import("/assets/markdown.js");
  const { highlight } = await import("/assets/highlight.js");
  const dom = await import("/assets/dom.js");
  const failures = [];
  let ran = 0;
  const check = (name, ok, detail) => {
    ran++;
    if (!ok) failures.push(`${name}: ${detail === undefined ? "" : JSON.stringify(detail)}`);
  };
  const eq = (name, got, want) => check(name, got === want, { got, want });
  // A fragment as a short structural string: tags with their attributes, texts quoted.
  const show = (node) => {
    if (node.nodeType === Node.TEXT_NODE) return JSON.stringify(node.data);
    const kids = [...node.childNodes].map(show).join(" ");
    if (node.nodeType === Node.DOCUMENT_FRAGMENT_NODE) return kids;
    const attrs = [...node.attributes].map((a) => ` ${a.name}=${JSON.stringify(a.value)}`).join("");
    return `<${node.nodeName.toLowerCase()}${attrs}>${kids}</>`;
  };
  const box = (fragment) => {
    const div = document.createElement("div");
    div.append(fragment);
    return div;
  };
  // Only these elements may ever come out of the renderer.
  const ALLOWED = new Set(["P", "H3", "H4", "H5", "H6", "HR", "BLOCKQUOTE", "UL", "OL", "LI", "PRE",
    "CODE", "SPAN", "DIV", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "A", "STRONG", "EM", "DEL", "BR"]);
  const foreign = (div) => [...div.querySelectorAll("*")].map((e) => e.nodeName).filter((n) => !ALLOWED.has(n));

  // Raw HTML is text.
  for (const attack of [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<iframe src=\"https://evil.example/\"></iframe>",
    "<svg onload=alert(1)><a href=javascript:alert(1)>x</a></svg>",
    "**<b onclick=alert(1)>bold</b>**",
    "| <img src=x> | b |\n|---|---|\n| <script>x</script> | 2 |",
    "- <style>body{display:none}</style>\n- two",
    "> <object data=x></object>",
  ]) {
    const div = box(md.render(attack));
    eq(`no foreign element from ${attack}`, foreign(div).join(","), "");
    check(`no event handler attribute from ${attack}`,
      ![...div.querySelectorAll("*")].some((e) => [...e.attributes].some((a) => a.name.startsWith("on"))));
  }
  eq("script text kept", box(md.render("<script>alert(1)</script>")).textContent, "<script>alert(1)</script>");

  // Links: only http(s) and mailto, never this host, never loaded images.
  const js = box(md.render("[click](javascript:alert`1`)"));
  eq("javascript: link is inert", show(js.firstChild),
    '<p><span class="inert-link" title="link not opened: javascript:alert`1`">"click"</></>');
  for (const attack of ["[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))", "[x](data:text/html,hi)",
    "<javascript:alert(1)>", "[x](vbscript:msgbox)", "[x]( javascript:alert(1) )"]) {
    eq(`no link from ${attack}`, box(md.render(attack)).querySelectorAll("a").length, 0);
  }
  const image = box(md.render("![pic](http://evil.example/p.png)"));
  eq("an image is a link, never an img", show(image.firstChild),
    '<p><a href="http://evil.example/p.png" target="_blank" rel="noopener noreferrer nofollow" ' +
    'title="http://evil.example/p.png">"image: pic"</></>');
  const own = box(md.render(`[me](http://${location.hostname}:9/x) and <https://${location.hostname}/y>`));
  eq("links to this host are inert", own.querySelectorAll("a").length, 0);
  eq("both stay visible", own.querySelectorAll("span.inert-link").length, 2);
  const safe = [
    ["https://Example.org", "https://example.org/"],
    ["mailto:a@example.org", "mailto:a@example.org"],
    ["/relative", null],
    ["//evil.example/x", "https://evil.example/x"],
    ["data:text/html,<script>alert(1)</script>", null],
    ["java\nscript:alert(1)", null],
    [" javascript:alert(1)", null],
    ["vbscript:x", null],
    ["file:///etc/passwd", null],
    [`http://${location.hostname}:1234/`, null],
  ];
  for (const [href, want] of safe) eq(`safeHref(${JSON.stringify(href)})`, md.safeHref(href), want);
  const bare = box(md.render("see https://example.org/a. or (https://example.org/b)"));
  eq("bare URLs lose trailing punctuation", [...bare.querySelectorAll("a")].map((a) => a.href).join(" "),
    "https://example.org/a https://example.org/b");

  // Blocks.
  eq("heading", show(md.render("# Title")), '<h3>"Title"</>');
  eq("emphasis", show(md.render("**b** *e* ~~d~~ `a<b` \\*n\\*")),
    '<p><strong>"b"</> " " <em>"e"</> " " <del>"d"</> " " <code>"a<b"</> " " "*" "n" "*"</>');
  eq("lists", show(md.render("- a\n- b\n\n3. x\n4. y")),
    '<ul><li>"a"</> <li>"b"</></> <ol start="3"><li>"x"</> <li>"y"</></>');
  eq("quote", show(md.render("> one\n> two")), '<blockquote><p>"one\\ntwo"</></>');
  eq("rule", show(md.render("---")), "<hr></>");
  eq("table", show(md.render("| a | b |\n|:-|-:|\n| 1 | 2 \\| 3 |")),
    '<div class="table-wrap"><table><thead><tr><th>"a"</> <th class="align-right">"b"</></></> ' +
    '<tbody><tr><td>"1"</> <td class="align-right">"2 | 3"</></></></></>');
  const fence = box(md.render("```html\n<b onclick=x>hi</b>\n\n</pre>\n```\nafter"));
  eq("fenced code is text", fence.querySelector("pre code").textContent, "<b onclick=x>hi</b>\n\n</pre>");
  eq("fence language", fence.querySelector("code").dataset.lang, "html");
  eq("fence closes", fence.lastChild.textContent, "after");
  eq("fence makes no element", foreign(fence).join(","), "");

  // Highlighting: runs of text in spans, the text unchanged.
  const code = "// note\nlet s = \"x<y\"; return 42;";
  const lit = box(highlight(code, "js"));
  eq("highlight keeps the text", lit.textContent, code);
  eq("highlight classes", [...lit.querySelectorAll("span")].map((s) => `${s.className}:${s.textContent}`).join(" "),
    'hl-comment:// note hl-keyword:let hl-string:"x<y" hl-keyword:return hl-number:42');
  eq("hash comments in python", box(highlight("# c\nx = 1", "py")).querySelector("span").className, "hl-comment");

  // Streaming: rendered piece by piece, the same as rendered at once.
  const whole = "# Plan\n\nFirst *para*\ngoes on.\n\n```sh\necho a\n\necho b\n```\n\n- one\n\n- two\n\n" +
    "| k | v |\n|---|---|\n| a | 1 |\n\nLast [link](https://example.org/).";
  for (const step of [1, 3, 7, 50]) {
    const host = document.createElement("div");
    const stream = new md.StreamingMarkdown(host);
    for (let k = 0; k < whole.length; k += step) {
      stream.append(whole.slice(k, k + step));
      stream.flush();
    }
    const streamed = [...stream.done.childNodes, ...stream.tail.childNodes].map(show).join(" ");
    eq(`streamed in steps of ${step}`, streamed, show(md.render(whole)));
  }

  // dom.js helpers.
  eq("excerpt of two lines", dom.excerpt("line one\nline two"), "line one…");
  eq("excerpt of a short line", dom.excerpt("  short  "), "short");
  eq("excerpt cut", dom.excerpt("x".repeat(70), 60), "x".repeat(60) + "…");
  eq("shortId", dom.shortId("0123456789abcdef"), "0123456789abc…");
  eq("shortId of nothing", dom.shortId(undefined), "");
  eq("progress of a total", dom.progressText(3, 10, "notes/\nmore"), "3/10: notes/");
  eq("progress as a share", dom.progressText(0.4, 1), "40%");
  eq("progress without a total", dom.progressText(3, undefined, " "), "step 3");
  eq("progress in decimals", dom.progressText(2.5, 7.26), "2.5/7.3");
  eq("progress message cut", dom.progressText(1, 2, "y".repeat(50)), "1/2: " + "y".repeat(40) + "…");
  const made = dom.el("a", { href: "https://example.org/", title: "<t>" }, "<text>", dom.el("b", {}, "x"));
  eq("el builds with text children", show(made), '<a href="https://example.org/" title="<t>">"<text>" <b>"x"</></>');

  // A proposal of capture says when it came after text the user did not write, as text.
  const { Memory } = await import("/assets/memory.js");
  const memory = new Memory({ client: {}, root: document.createElement("div"), onOpenHit: () => {} });
  const proposal = (untrusted) => ({ id: 4, action: "add", content: "The user is moving to Oslo",
    session_id: "s-1", created_at: "2026-11-28T09:00:00.000Z", untrusted });
  const meta = (p) => memory.pendingCard(p).querySelector(".note-meta").textContent;
  check("a proposal after a web page says so", meta(proposal("web")).includes("proposed after reading a web page: check it"), meta(proposal("web")));
  check("an unknown source is said plainly", meta(proposal("<b>x</b>")).includes("proposed after reading text you did not write"), meta(proposal("<b>x</b>")));
  check("a proposal after nothing untrusted says nothing of it", !meta(proposal(undefined)).includes("proposed after"), meta(proposal(undefined)));

  return { ran, failures };
})()
