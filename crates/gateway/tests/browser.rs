//! A real headless Chromium driven over its DevTools protocol (a WebSocket speaking JSON, through
//! `tokio-tungstenite`): launch with a throw-away profile, evaluate script in the page, wait for
//! a condition, click, take a screenshot, and keep every event the browser reported (dialogs,
//! requests, console and log entries) for the tests to check.

use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::common::WAIT;

pub struct Browser {
    _child: tokio::process::Child,
    _profile: tempfile::TempDir,
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next: u64,
    /// Every event received so far (`{"method": ..., "params": ...}`).
    pub events: Vec<Value>,
}

impl Browser {
    /// Starts Chromium headless on a blank page and attaches to it.
    pub async fn launch() -> Self {
        Self::launch_with(&[]).await
    }

    /// [`Browser::launch`] with more command-line switches.
    pub async fn launch_with(extra: &[&str]) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new("chromium")
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--remote-debugging-port=0",
                "--window-size=390,844",
            ])
            .args(extra)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("chromium starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let browser_url = tokio::time::timeout(WAIT, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return url.trim().to_owned();
                }
            }
            panic!("chromium ended without a DevTools address");
        })
        .await
        .expect("chromium's DevTools address in time");
        // Keep reading stderr so the browser never blocks on it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let port: u16 = browser_url
            .trim_start_matches("ws://127.0.0.1:")
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let targets = json_list(port).await;
        let page = targets
            .iter()
            .find(|t| t["type"] == "page")
            .expect("a page target");
        let url = page["webSocketDebuggerUrl"].as_str().unwrap();
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut browser = Self {
            _child: child,
            _profile: profile,
            ws,
            next: 1,
            events: Vec::new(),
        };
        for domain in ["Page", "Runtime", "Network", "Log"] {
            browser.call(&format!("{domain}.enable"), json!({})).await;
        }
        browser
    }

    /// One DevTools command; its `result`.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        match self.try_call(method, params).await {
            Ok(result) => result,
            Err(error) => panic!("{method}: {error}"),
        }
    }

    /// One DevTools command; its `result`, or the `error` the browser answered with.
    async fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next;
        self.next += 1;
        let text = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws.send(Message::Text(text.into())).await.unwrap();
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("a DevTools answer in time")
                .expect("DevTools connection open")
                .unwrap();
            let Message::Text(text) = msg else { continue };
            let value: Value = serde_json::from_str(text.as_str()).unwrap();
            if value["id"] == id {
                return match value.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(value["result"].clone()),
                };
            }
            if value.get("method").is_some() {
                self.events.push(value);
            }
        }
    }

    /// Evaluates `expression` in the page (awaiting a promise); its value.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Polls `expression` until it is truthy; its value.
    pub async fn wait_for(&mut self, what: &str, expression: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        // Until the page is there, the expression may throw: that counts as not yet.
        let guarded = format!(
            "(() => {{ try {{ return ({expression}); }} catch (e) {{ return null; }} }})()"
        );
        loop {
            // A page being replaced (a reload, a navigation) cannot evaluate: also not yet.
            let value = match self
                .try_call(
                    "Runtime.evaluate",
                    json!({"expression": guarded, "awaitPromise": true, "returnByValue": true}),
                )
                .await
            {
                Ok(result) => result["result"]["value"].clone(),
                Err(_) => Value::Null,
            };
            if !(value.is_null() || value == false || value == "" || value == 0) {
                return value;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "waited in vain for {what}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
    }

    /// Clicks the element `selector` (as a user would, through its `click()`).
    pub async fn click(&mut self, selector: &str) {
        let clicked = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return false; e.click(); return true; }})()",
                sel = Value::from(selector)
            ))
            .await;
        assert_eq!(clicked, true, "no {selector} to click");
    }

    /// Sets a text field's value, as typing would.
    pub async fn fill(&mut self, selector: &str, text: &str) {
        let filled = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return false; e.focus(); e.value = {text}; e.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()",
                sel = Value::from(selector),
                text = Value::from(text)
            ))
            .await;
        assert_eq!(filled, true, "no {selector} to fill");
    }

    /// Presses a key in the focused element.
    pub async fn key(&mut self, key: &str) {
        for kind in ["keyDown", "keyUp"] {
            let mut params = json!({"type": kind, "key": key});
            if key == "Enter" {
                params["code"] = "Enter".into();
                params["windowsVirtualKeyCode"] = 13.into();
                if kind == "keyDown" {
                    params["text"] = "\r".into();
                }
            }
            self.call("Input.dispatchKeyEvent", params).await;
        }
    }

    /// A phone-sized viewport.
    pub async fn viewport(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": true}),
        )
        .await;
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&mut self) -> Vec<u8> {
        let shot = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        base64_decode(shot["data"].as_str().unwrap())
    }

    /// Events of this `method` received so far.
    pub fn events_of(&self, method: &str) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["method"] == method)
            .collect()
    }
}

/// `GET /json/list` of the DevTools HTTP server (it keeps the connection open: read by length).
async fn json_list(port: u16) -> Vec<Value> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!("GET /json/list HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(WAIT, stream.read(&mut buf))
            .await
            .expect("DevTools answers")
            .unwrap();
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap();
            if body.len() >= length {
                return serde_json::from_str(&body[..length]).unwrap();
            }
        }
        assert!(n > 0, "DevTools closed the connection early");
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = ALPHABET.iter().position(|a| *a == c).unwrap() as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}
