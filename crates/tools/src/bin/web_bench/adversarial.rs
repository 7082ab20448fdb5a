//! Pages built to make HTML → Markdown conversion slow, each filling a given number of bytes:
//! deep and unclosed nesting, huge attribute lists, formatting elements the parser re-opens,
//! many tables, lists and cells, entity floods, one very long line, `<br>` floods. Each case runs
//! in a child process (`--case NAME --bytes N`) that the parent kills past a time limit, so a
//! case that does not end is reported as such instead of hanging the report.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every case: its name and what it repeats.
pub const CASES: [&str; 18] = [
    "deep-div",
    "deep-mixed",
    "deep-table",
    "deep-list",
    "divs-then-li",
    "divs-then-p",
    "divs-then-dd",
    "formatting-reopened",
    "formatting-plain",
    "attributes-one-tag",
    "attributes-many-tags",
    "entities-named",
    "entities-numeric",
    "long-line",
    "br-flood",
    "many-tables",
    "wide-table",
    "many-lists",
];

/// `unit` repeated (after `head`) until the page holds `bytes`.
fn fill(head: &str, unit: &dyn Fn(usize) -> String, bytes: usize) -> String {
    let mut html = String::with_capacity(bytes + 64);
    html.push_str("<!doctype html><html><body>");
    html.push_str(head);
    let mut n = 0;
    while html.len() < bytes {
        html.push_str(&unit(n));
        n += 1;
    }
    html
}

/// The page of `case`, about `bytes` long.
pub fn page(case: &str, bytes: usize) -> Option<String> {
    let divs = "<div>".repeat(250);
    let reopened: String = (0..255).map(|i| format!("<font id=f{i}>")).collect();
    let plain = "<b><i><u><s><em><strong><tt><big><small><code><nobr><strike>".repeat(3);
    let html = match case {
        "deep-div" => fill("", &|_| "<div>".into(), bytes),
        "deep-mixed" => fill("", &|_| "<div><span><b><i><a href=x>t".into(), bytes),
        "deep-table" => fill("", &|_| "<table><tr><td>t".into(), bytes),
        "deep-list" => fill("", &|_| "<ul><li>t".into(), bytes),
        "divs-then-li" => fill(&divs, &|_| "<li>t".into(), bytes),
        "divs-then-p" => fill(&divs, &|_| "<p>t".into(), bytes),
        "divs-then-dd" => fill(&divs, &|_| "<dd>t".into(), bytes),
        "formatting-reopened" => fill(
            &format!("<div>{reopened}</div>"),
            &|_| "<div><br></div>".into(),
            bytes,
        ),
        "formatting-plain" => fill(
            &format!("<div>{plain}</div>"),
            &|_| "<div><br></div>".into(),
            bytes,
        ),
        "attributes-one-tag" => {
            let mut html = fill("<div", &|n| format!(" a{n}=x"), bytes);
            html.push_str(">t</div>");
            html
        }
        "attributes-many-tags" => fill(
            "",
            &|_| {
                let attrs: String = (0..500).map(|i| format!(" a{i}=x")).collect();
                format!("<span{attrs}>t</span>")
            },
            bytes,
        ),
        "entities-named" => fill("<p>", &|_| "&amp;&lt;&nbsp;&notin;".into(), bytes),
        "entities-numeric" => fill("<p>", &|_| "&#x1F600;&#65;&#0000000000066;".into(), bytes),
        "long-line" => fill("<p>", &|n| format!("*_[x]#`{n}` \\ "), bytes),
        "br-flood" => fill("<p>", &|_| "x<br>".into(), bytes),
        "many-tables" => fill(
            "",
            &|n| format!("<table><tr><th>h{n}</th></tr><tr><td>c</td></tr></table>"),
            bytes,
        ),
        "wide-table" => {
            let mut html = fill("<table><tr>", &|_| "<td></td>".into(), bytes / 2);
            html.push_str("</tr>");
            let rest = fill("", &|_| "<tr><td>r</td></tr>".into(), bytes / 2);
            html.push_str(&rest["<!doctype html><html><body>".len()..]);
            html
        }
        "many-lists" => fill("", &|_| "<ul><li>a</li><li>b</li></ul>".into(), bytes),
        _ => return None,
    };
    Some(html)
}

/// The calling thread's CPU time.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// In the child: converts the page of `case` and prints `<cpu seconds> <markdown bytes>`.
pub fn run_case(case: &str, bytes: usize) -> Result<(), String> {
    let html = page(case, bytes).ok_or_else(|| format!("no case {case}"))?;
    let started = thread_cpu();
    let markdown = tools::web::html_to_markdown(&html);
    let cpu = thread_cpu().saturating_sub(started);
    println!("{} {}", cpu.as_secs_f64(), markdown.len());
    Ok(())
}

/// In the parent: every case at each of `sizes`, each in a child killed after `limit`; prints
/// a Markdown table. A case past the limit is not run at a larger size.
pub fn report(sizes: &[usize], limit: Duration) -> Result<(), Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let head: String = sizes
        .iter()
        .map(|s| format!(" {:.2} MiB |", *s as f64 / 1048576.0))
        .collect();
    println!("| page |{head} markdown at the largest |");
    println!("|---|{}---|", "---|".repeat(sizes.len()));
    for case in CASES {
        let mut row = format!("| {case} |");
        let mut last = String::new();
        let mut over = false;
        for bytes in sizes {
            if over {
                row.push_str(" – |");
                continue;
            }
            let mut child = Command::new(&exe)
                .args(["--case", case, "--bytes", &bytes.to_string()])
                .stdout(Stdio::piped())
                .spawn()?;
            let began = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait()? {
                    break Some(status);
                }
                if began.elapsed() > limit {
                    child.kill()?;
                    child.wait()?;
                    break None;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let mut out = String::new();
            if let Some(mut stdout) = child.stdout.take() {
                std::io::Read::read_to_string(&mut stdout, &mut out)?;
            }
            let mut parts = out.split_whitespace();
            match (status, parts.next(), parts.next()) {
                (Some(s), Some(cpu), Some(md)) if s.success() => {
                    let cpu: f64 = cpu.parse()?;
                    row.push_str(&format!(" {:.0} ms |", cpu * 1000.0));
                    last = format!("{} KiB", md.parse::<usize>()? / 1024);
                }
                (Some(s), ..) => {
                    row.push_str(&format!(" failed ({s}) |"));
                    over = true;
                }
                (None, ..) => {
                    row.push_str(&format!(" > {} s (killed) |", limit.as_secs()));
                    over = true;
                }
            }
        }
        println!("{row} {last} |");
    }
    Ok(())
}
