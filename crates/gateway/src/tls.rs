//! The gateway's own TLS: [`TlsIdentity`], a certificate chain and the private key checked to
//! belong together (rustls with the `ring` provider, the crypto stack reqwest already builds),
//! with an error that says what to fix; and [`GatewayListener`], the listener `server` serves:
//! plain [`LimitedListener`] sockets, or those sockets after a TLS handshake completed off the
//! accept loop (a slow handshake never holds up the next connection; it is bounded by the same
//! deadline as an unauthenticated socket, enforced in [`Guarded`]).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::limits::{Admission, Guarded, LimitedListener};

/// Why a certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read gateway.{setting} {}: {source}", path.display())]
    Read {
        setting: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "gateway.tls_cert holds no certificate: expected PEM text with \
         -----BEGIN CERTIFICATE----- blocks, the server's certificate first"
    )]
    NoCertificate,
    #[error("gateway.tls_cert is not valid PEM: {0}")]
    BadCertificate(String),
    #[error(
        "gateway.tls_key holds no private key: expected one PEM block, -----BEGIN PRIVATE KEY----- \
         (PKCS#8), RSA PRIVATE KEY or EC PRIVATE KEY"
    )]
    NoKey,
    #[error("gateway.tls_key is not valid PEM: {0}")]
    BadKey(String),
    #[error(
        "gateway.tls_key is not the key of the certificate in gateway.tls_cert: give the key the \
         certificate was issued for"
    )]
    KeyMismatch,
    #[error("the certificate or key in gateway.tls_cert / tls_key cannot be used: {0}")]
    Unusable(String),
}

/// A certificate chain and its key, ready to serve.
#[derive(Clone)]
pub struct TlsIdentity {
    config: Arc<rustls::ServerConfig>,
    chain: Vec<CertificateDer<'static>>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("certificates", &self.chain.len())
            .finish_non_exhaustive()
    }
}

impl PartialEq for TlsIdentity {
    fn eq(&self, other: &Self) -> bool {
        self.chain == other.chain
    }
}

impl Eq for TlsIdentity {}

impl TlsIdentity {
    /// Reads the PEM files named by `[gateway] tls_cert` and `tls_key`.
    pub fn load(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let read = |setting, path: &Path| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                setting,
                path: path.to_owned(),
                source,
            })
        };
        Self::from_pem(&read("tls_cert", cert)?, &read("tls_key", key)?)
    }

    /// A chain (the server's certificate first) and its key, as PEM text.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, TlsError> {
        let chain = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::BadCertificate(pem_problem(&e)))?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate);
        }
        let key = match PrivateKeyDer::from_pem_slice(key_pem) {
            Ok(key) => key,
            Err(pem::Error::NoItemsFound) => return Err(TlsError::NoKey),
            Err(e) => return Err(TlsError::BadKey(pem_problem(&e))),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Unusable(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain.clone(), key)
            .map_err(|e| match e {
                rustls::Error::InconsistentKeys(_) => TlsError::KeyMismatch,
                other => TlsError::Unusable(other.to_string()),
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            config: Arc::new(config),
            chain,
        })
    }

    /// The certificates served (DER), the server's first.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }
}

/// The warning for a gateway on `bind` without TLS, when `bind` is not loopback (the gateway
/// logs it at start; the runner prints it when starting the agent and in `status`).
pub fn exposure_warning(bind: IpAddr, tls: bool) -> Option<String> {
    (!tls && !bind.is_loopback()).then(|| {
        format!(
            "THE GATEWAY LISTENS ON {bind}, BEYOND THIS MACHINE, WITHOUT TLS: tokens, sign-in codes \
             and session cookies cross the network in clear. Set [gateway] tls_cert and tls_key, \
             or bind it to 127.0.0.1 behind a TLS reverse proxy (docs/guidebook/web.md)"
        )
    })
}

/// What went wrong in a PEM file, in a few words (never its contents).
fn pem_problem(e: &pem::Error) -> String {
    match e {
        pem::Error::NoItemsFound => "no PEM block found".to_owned(),
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed".to_owned(),
        pem::Error::MissingSectionEnd { .. } => "a block has no END line".to_owned(),
        pem::Error::Base64Decode(_) => "a block's base64 is damaged".to_owned(),
        other => other.to_string(),
    }
}

/// The gateway's listener: plain sockets, or sockets after their TLS handshake.
pub(crate) enum GatewayListener {
    Plain(LimitedListener),
    Tls {
        ready: mpsc::Receiver<(TlsStream<Guarded>, SocketAddr)>,
        addr: SocketAddr,
    },
}

impl GatewayListener {
    /// Serves `tcp` as it is, or with TLS: handshakes run as their own tasks, and a socket is
    /// handed to the server once its handshake completed. The accepting task ends with the
    /// listener.
    pub(crate) fn new(tcp: LimitedListener, tls: Option<&TlsIdentity>) -> io::Result<Self> {
        let Some(tls) = tls else {
            return Ok(Self::Plain(tcp));
        };
        let addr = tcp.local_addr()?;
        let acceptor = TlsAcceptor::from(Arc::clone(&tls.config));
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(handshakes(tcp, acceptor, tx));
        Ok(Self::Tls { ready, addr })
    }
}

async fn handshakes(
    mut tcp: LimitedListener,
    acceptor: TlsAcceptor,
    tx: mpsc::Sender<(TlsStream<Guarded>, SocketAddr)>,
) {
    loop {
        let (io, addr) = tokio::select! {
            () = tx.closed() => return,
            accepted = tcp.accept() => accepted,
        };
        let (acceptor, tx) = (acceptor.clone(), tx.clone());
        tokio::spawn(async move {
            match acceptor.accept(io).await {
                Ok(stream) => {
                    // Fails only when the gateway has stopped: the socket is then dropped.
                    let _ = tx.send((stream, addr)).await;
                }
                Err(e) => tracing::debug!(%addr, error = %e, "TLS handshake failed"),
            }
        });
    }
}

impl Listener for GatewayListener {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self {
            Self::Plain(tcp) => {
                let (io, addr) = tcp.accept().await;
                (Conn::Plain(io), addr)
            }
            Self::Tls { ready, .. } => match ready.recv().await {
                Some((stream, addr)) => (Conn::Tls(Box::new(stream)), addr),
                // The accepting task ended: nothing more will come.
                None => std::future::pending().await,
            },
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        match self {
            Self::Plain(tcp) => tcp.local_addr(),
            Self::Tls { addr, .. } => Ok(*addr),
        }
    }
}

impl Connected<IncomingStream<'_, GatewayListener>> for Admission {
    fn connect_info(stream: IncomingStream<'_, GatewayListener>) -> Self {
        match stream.io() {
            Conn::Plain(io) => io.admission(),
            Conn::Tls(tls) => tls.get_ref().0.admission(),
        }
    }
}

/// A served connection, plain or TLS.
pub(crate) enum Conn {
    Plain(Guarded),
    Tls(Box<TlsStream<Guarded>>),
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_read(cx, buf),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_write(cx, buf),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_flush(cx),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_shutdown(cx),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Plain(io) => io.is_write_vectored(),
            Self::Tls(io) => io.is_write_vectored(),
        }
    }
}
