//! A TCP proxy in front of `sqld` for the remote-store tests: it counts the HTTP requests passing
//! through and can hold the next request whose bytes contain a given text until released (to
//! let another client write in between, or to keep a transaction open past the server's limit).

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
        let chunk = &buf[..n];
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
        if to_server.write_all(chunk).await.is_err() {
            return;
        }
    }
}
