//! A TCP proxy in front of `sqld` for the remote tests: it counts the HTTP requests a store sends,
//! can hold one until released, and can rewrite them (to play a server that answers differently).

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
}

async fn pipe(client: TcpStream, server: TcpStream, count: Arc<AtomicUsize>, gate: Arc<Gate>) {
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
    });
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match from_client.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let rule = gate.rewrite.lock().unwrap().clone();
        let chunk = match rule {
            Some((from, to)) => rewritten(&buf[..n], &from, &to),
            None => buf[..n].to_vec(),
        };
        // Each request of the client's HTTP/1.1 stream starts with its method.
        let starts = chunk.windows(5).filter(|w| w == b"POST ").count();
        count.fetch_add(starts, Ordering::SeqCst);
        let hit = {
            let mut needle = gate.needle.lock().unwrap();
            let found = needle
                .as_deref()
                .is_some_and(|n| chunk.windows(n.len()).any(|w| w == n));
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
        if to_server.write_all(&chunk).await.is_err() {
            return;
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
