//! A TCP proxy in front of `sqld` for the remote-store tests: it counts the HTTP requests passing
//! through, can hold the next request whose bytes contain a given text until released (to let
//! another client write in between, or to keep a transaction open past the server's limit), can
//! rewrite requests (to play a server that answers differently), and can put a `ROLLBACK` in
//! front of a statement (a server that ends a transaction without saying so to the statement
//! that was sent).

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use memory::{HashEmbedder, MemoryStore};
use test_support::Sqld;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// A TCP proxy in front of `sqld` that counts the HTTP requests passing through and can hold
/// the next request whose bytes contain a given text until released.
pub struct Proxy {
    pub url: String,
    requests: Arc<AtomicUsize>,
    gate: Arc<Gate>,
}

/// Forwards the client's bytes a whole HTTP request at a time (headers and `Content-Length`
/// body), so a request can be looked at, held or rewritten as one.
#[derive(Default)]
struct Requests {
    pending: Vec<u8>,
}

impl Requests {
    /// The next whole request received so far, if any.
    fn next(&mut self) -> Option<Vec<u8>> {
        let head = self.pending.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
        let length = content_length(&self.pending[..head]).unwrap_or(0);
        (self.pending.len() >= head + length).then(|| self.pending.drain(..head + length).collect())
    }
}

fn content_length(head: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(head).lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

/// `request` with a `ROLLBACK` step put before the first batch step whose SQL contains
/// `needle` (a Hrana pipeline or cursor request); `None` when no step does.
fn with_rollback_before(request: &[u8], needle: &str) -> Option<Vec<u8>> {
    let head = request.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let mut body: serde_json::Value = serde_json::from_slice(&request[head..]).ok()?;
    let rollback = serde_json::json!({"stmt": {"sql": "ROLLBACK", "want_rows": false}});
    let batches: Vec<&mut serde_json::Value> = match body.get("requests").is_some() {
        true => body
            .get_mut("requests")
            .and_then(|r| r.as_array_mut())
            .map(|requests| {
                requests
                    .iter_mut()
                    .filter_map(|r| r.get_mut("batch"))
                    .collect()
            })
            .unwrap_or_default(),
        false => body.get_mut("batch").into_iter().collect(),
    };
    let steps = batches.into_iter().find_map(|batch| {
        let steps = batch.get_mut("steps")?.as_array_mut()?;
        let at = steps.iter().position(|step| {
            step.pointer("/stmt/sql")
                .and_then(|sql| sql.as_str())
                .is_some_and(|sql| sql.contains(needle))
        })?;
        steps.insert(at, rollback.clone());
        Some(())
    });
    steps?;
    let body = serde_json::to_vec(&body).ok()?;
    let head = String::from_utf8_lossy(&request[..head]);
    let mut out = String::new();
    for line in head.split("\r\n").filter(|l| !l.is_empty()) {
        match line.split_once(':') {
            Some((name, _)) if name.trim().eq_ignore_ascii_case("content-length") => {
                out.push_str(&format!("{name}: {}", body.len()));
            }
            _ => out.push_str(line),
        }
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

#[derive(Default)]
struct Gate {
    /// Hold the next request containing this.
    needle: std::sync::Mutex<Option<Vec<u8>>>,
    /// Signalled when a request is being held.
    held: Notify,
    /// Signalled to let it pass.
    release: Notify,
    /// Every request's bytes matching the first are replaced by the second.
    rewrite: std::sync::Mutex<Option<(Vec<u8>, Vec<u8>)>>,
    /// Put a `ROLLBACK` before the next statement containing this.
    roll_back: std::sync::Mutex<Option<String>>,
    /// Signalled once that `ROLLBACK` has been sent.
    rolled_back: Notify,
}

impl Proxy {
    pub async fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let requests = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(Gate::default());
        let (count, shared) = (requests.clone(), gate.clone());
        tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let server = TcpStream::connect(&upstream).await.unwrap();
                tokio::spawn(pipe(client, server, count.clone(), shared.clone()));
            }
        });
        Self {
            url,
            requests,
            gate,
        }
    }

    pub fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Holds the next request containing `needle`; resolves once it is held.
    pub fn hold(&self, needle: &str) -> impl std::future::Future<Output = ()> + '_ {
        *self.gate.needle.lock().unwrap() = Some(needle.as_bytes().to_vec());
        self.gate.held.notified()
    }

    pub fn release(&self) {
        self.gate.release.notify_one();
    }

    /// From now on, replaces `from` with `to` in every request (its `content-length` follows).
    pub fn rewrite(&self, from: &str, to: &str) {
        *self.gate.rewrite.lock().unwrap() = Some((from.into(), to.into()));
    }

    /// Puts a `ROLLBACK` step just before the next statement whose SQL contains `needle`, in the
    /// same request: the server ends the transaction, runs the statement outside it, and the
    /// client is told only of the statement's result. Resolves once that request went out.
    pub fn roll_back_before(&self, needle: &str) -> impl std::future::Future<Output = ()> + '_ {
        *self.gate.roll_back.lock().unwrap() = Some(needle.to_owned());
        self.gate.rolled_back.notified()
    }
}

async fn pipe(client: TcpStream, server: TcpStream, count: Arc<AtomicUsize>, gate: Arc<Gate>) {
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
    });
    let mut buf = vec![0u8; 256 * 1024];
    let mut requests = Requests::default();
    loop {
        let n = match from_client.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        requests.pending.extend_from_slice(&buf[..n]);
        while let Some(mut request) = requests.next() {
            let rule = gate.rewrite.lock().unwrap().clone();
            if let Some((from, to)) = rule {
                request = rewritten(&request, &from, &to);
            }
            if request.starts_with(b"POST ") {
                count.fetch_add(1, Ordering::SeqCst);
            }
            let hit = {
                let mut needle = gate.needle.lock().unwrap();
                let found = needle
                    .as_deref()
                    .is_some_and(|n| request.windows(n.len()).any(|w| w == n));
                if found {
                    *needle = None;
                }
                found
            };
            if hit {
                let released = gate.release.notified();
                gate.held.notify_one();
                released.await;
            }
            let rewritten = {
                let mut roll_back = gate.roll_back.lock().unwrap();
                let rewritten = roll_back
                    .as_deref()
                    .and_then(|needle| with_rollback_before(&request, needle));
                if rewritten.is_some() {
                    *roll_back = None;
                }
                rewritten
            };
            let rolled_back = rewritten.is_some();
            if let Some(rewritten) = rewritten {
                request = rewritten;
            }
            if to_server.write_all(&request).await.is_err() {
                return;
            }
            if rolled_back {
                gate.rolled_back.notify_one();
            }
        }
    }
}

/// `request` with every `from` replaced by `to`, its `content-length` header adjusted. The
/// request must be whole in `request` (the small ones these tests rewrite always are).
fn rewritten(request: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(request.len());
    let mut rest = request;
    let mut replaced = 0usize;
    while let Some(i) = rest.windows(from.len()).position(|w| w == from) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + from.len()..];
        replaced += 1;
    }
    out.extend_from_slice(rest);
    if replaced == 0 || from.len() == to.len() {
        return out;
    }
    let text = String::from_utf8(out).expect("a rewritten request is text");
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole request");
    let head: Vec<String> = head
        .split("\r\n")
        .map(
            |line| match line.to_ascii_lowercase().starts_with("content-length:") {
                true => format!("content-length: {}", body.len()),
                false => line.to_owned(),
            },
        )
        .collect();
    format!("{}\r\n\r\n{body}", head.join("\r\n")).into_bytes()
}

/// A server, a store that reaches it through a [`Proxy`] and another client straight to it.
pub struct Clients {
    pub _server: Sqld,
    pub proxy: Proxy,
    pub store: MemoryStore,
    pub other: MemoryStore,
}

impl Clients {
    pub async fn start() -> Self {
        let server = Sqld::start_with_auth();
        let token = server.token(r#"{"a":"rw"}"#);
        let proxy = Proxy::start(&server.url()).await;
        let store = open(&proxy.url, &token).await;
        let other = open(&server.url(), &token).await;
        Self {
            _server: server,
            proxy,
            store,
            other,
        }
    }
}

/// A remote store on `url` with the fixtures' embedder.
pub async fn open(url: &str, token: &str) -> MemoryStore {
    MemoryStore::open(
        memory::Target::Remote { url, token },
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(super::DIMS))),
    )
    .await
    .unwrap()
}
