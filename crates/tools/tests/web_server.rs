//! A small real HTTP/1.1 server on loopback for the web tool tests: each request's path is
//! answered by a route function (pages, redirects, slow or endless bodies, compressed bodies), and
//! every request is recorded so a test can prove what never reached it. Also a resolver whose
//! answers the test scripts, so that names and changing DNS answers can be tried without DNS.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tools::web::guard::Lookup;

/// How the server answers one request.
pub enum Reply {
    /// A whole response.
    Page {
        status: &'static str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// `chunk` every `every`, forever.
    Trickle { chunk: Vec<u8>, every: Duration },
    /// Headers, then nothing at all.
    Silent,
}

impl Reply {
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Reply::Page {
            status: "200 OK",
            headers: vec![("Content-Type", content_type.to_owned())],
            body: body.into(),
        }
    }

    pub fn redirect(to: impl Into<String>) -> Self {
        Reply::Page {
            status: "302 Found",
            headers: vec![("Location", to.into())],
            body: Vec::new(),
        }
    }
}

/// The server's routes: the request's path and query, its headers (lower-cased names), and the
/// server's own port.
pub type Routes = dyn Fn(&str, &HashMap<String, String>, u16) -> Reply + Send + Sync;

pub struct Server {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub async fn start(
        routes: impl Fn(&str, &HashMap<String, String>, u16) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let routes: Arc<Routes> = Arc::new(routes);
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let routes = routes.clone();
                let seen = seen.clone();
                tokio::spawn(async move { serve(stream, routes, seen, addr.port()).await });
            }
        });
        Self { addr, requests }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The paths requested so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut stream: TcpStream,
    routes: Arc<Routes>,
    seen: Arc<Mutex<Vec<String>>>,
    port: u16,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.lines();
    let target = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    if let Some(length) = headers
        .get("content-length")
        .and_then(|l| l.parse::<usize>().ok())
    {
        let mut body = vec![0; length];
        let _ = stream.read_exact(&mut body).await;
    }
    seen.lock().unwrap().push(target.clone());
    match routes(&target, &headers, port) {
        Reply::Page {
            status,
            headers,
            body,
        } => {
            let mut out = format!(
                "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n",
                body.len()
            );
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            let _ = stream.write_all(out.as_bytes()).await;
            let _ = stream.write_all(&body).await;
        }
        Reply::Trickle { chunk, every } => {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n",
                )
                .await;
            loop {
                if stream.write_all(&chunk).await.is_err() {
                    return;
                }
                tokio::time::sleep(every).await;
            }
        }
        Reply::Silent => {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n",
                )
                .await;
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    }
}

/// A resolver answering from a script: each name's answers in turn (the last one repeats),
/// counting the lookups.
#[derive(Debug, Default)]
pub struct ScriptedDns {
    answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
    pub lookups: AtomicUsize,
}

impl ScriptedDns {
    pub fn with(names: &[(&str, &[&str])]) -> Arc<Self> {
        let dns = Self::default();
        for (name, answers) in names {
            let list = answers
                .iter()
                .map(|a| a.split(',').map(|ip| ip.parse().unwrap()).collect())
                .collect();
            dns.answers.lock().unwrap().insert((*name).to_owned(), list);
        }
        Arc::new(dns)
    }

    pub fn count(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

impl Lookup for ScriptedDns {
    fn lookup(
        &self,
        host: String,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'static>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let mut answers = self.answers.lock().unwrap();
        let answer = match answers.get_mut(&host) {
            Some(list) if list.len() > 1 => list.pop_front(),
            Some(list) => list.front().cloned(),
            None => None,
        };
        Box::pin(async move {
            answer.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such host"))
        })
    }
}
