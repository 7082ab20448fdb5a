//! The host names the gateway answers to, checked on every HTTP request and WebSocket upgrade
//! before any route sees it: a page on `http://evil.example:PORT` whose DNS name was rebound to
//! this machine's address would otherwise be "same origin" to the gateway (its `Origin` equals
//! its `Host`) and could reach the sign-in routes — using up the sign-in failure limit — and
//! every other route. Served: `localhost` and the loopback addresses; the bound address; any
//! address when bound to an unspecified one (`0.0.0.0`, `::`: an address cannot be rebound); and
//! the names in [`crate::GatewayConfig::allow_hosts`]. The port is not checked (a reverse proxy
//! forwards its own). A request naming no host (HTTP/1.0) is served: browsers always name one.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use types::Host;

/// What a refused request is told.
const REFUSED: &str = "421 Misdirected Request: this gateway does not answer to that host name; \
                       if it is yours, add it to allow_hosts under [gateway] in agent.toml\n";

/// The hosts one running gateway serves.
#[derive(Debug)]
pub(crate) struct ServedHosts {
    /// The bound address, IPv4 written as IPv6 read as IPv4.
    bind: IpAddr,
    /// `allow_hosts`, addresses read the same way.
    listed: HashSet<Host>,
}

impl ServedHosts {
    /// The hosts of a gateway bound to `bind`, with `listed` (`allow_hosts`) served as well.
    pub(crate) fn new(bind: IpAddr, listed: &[Host]) -> Self {
        Self {
            bind: bind.to_canonical(),
            listed: listed.iter().map(Host::canonical).collect(),
        }
    }

    fn serves(&self, host: &Host) -> bool {
        if host.is_loopback() || self.listed.contains(&host.canonical()) {
            return true;
        }
        match host {
            Host::Ip(ip) => self.bind.is_unspecified() || ip.to_canonical() == self.bind,
            Host::Name(_) => false,
        }
    }

    /// What the request names as its host (the request target's authority, as in HTTP/2 or an
    /// absolute URL, and every `Host` header) that this gateway does not serve, if anything; a
    /// value that is not `host[:port]` is not served.
    fn refused<'r>(&self, uri: &'r Uri, headers: &'r HeaderMap) -> Option<&'r str> {
        let from_headers = headers
            .get_all(header::HOST)
            .iter()
            .map(|value| value.to_str().unwrap_or("(not text)"));
        uri.authority()
            .map(|a| a.as_str())
            .into_iter()
            .chain(from_headers)
            // An empty `Host` names no host, like none at all.
            .filter(|named| !named.is_empty())
            .find(|named| {
                let host = host_part(named).and_then(|h| Host::parse(h).ok());
                !host.is_some_and(|h| self.serves(&h))
            })
    }
}

/// The host of a `Host` value (`name`, `name:port`, `[v6]`, `[v6]:port`); `None` when what follows
/// it is not a port.
fn host_part(value: &str) -> Option<&str> {
    let end = if value.starts_with('[') {
        value.find(']')? + 1
    } else {
        value.find(':').unwrap_or(value.len())
    };
    let (host, rest) = value.split_at(end);
    let port_ok = rest.is_empty()
        || rest
            .strip_prefix(':')
            .is_some_and(|port| port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()));
    port_ok.then_some(host)
}

/// Middleware: a request for a host this gateway does not serve gets `421` and goes no further.
pub(crate) async fn refuse_others(
    State(hosts): State<Arc<ServedHosts>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(named) = hosts.refused(request.uri(), request.headers()) {
        tracing::warn!(
            host = ?named,
            "request for a host this gateway does not serve refused (a DNS-rebinding page, or a \
             name missing from [gateway] allow_hosts)"
        );
        return (StatusCode::MISDIRECTED_REQUEST, REFUSED).into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOPBACK: &str = "127.0.0.1";
    const EVERYWHERE: &str = "0.0.0.0";

    /// Whether a gateway bound to `bind`, listing `listed`, serves a request with `Host: host`.
    fn check(bind: &str, listed: &[&str], host: &str, served: bool) {
        let listed: Vec<Host> = listed.iter().map(|h| Host::parse(h).unwrap()).collect();
        let hosts = ServedHosts::new(bind.parse().unwrap(), &listed);
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().unwrap());
        let served_now = hosts.refused(&Uri::from_static("/"), &headers).is_none();
        assert_eq!(served_now, served, "bound to {bind}, Host: {host}");
    }

    #[test]
    fn loopback_names_are_always_served_and_others_only_when_listed() {
        check(LOOPBACK, &[], "127.0.0.1:8101", true);
        check(LOOPBACK, &[], "127.0.0.1", true);
        check(LOOPBACK, &[], "127.8.0.1:80", true);
        check(LOOPBACK, &[], "localhost:8101", true);
        check(LOOPBACK, &[], "LocalHost.:8101", true);
        check(LOOPBACK, &[], "[::1]:8101", true);
        check(LOOPBACK, &[], "[::ffff:127.0.0.1]:8101", true);
        check(LOOPBACK, &[], "evil.example:8101", false);
        check(LOOPBACK, &[], "evil.example", false);
        check(LOOPBACK, &[], "foo.localhost:8101", false);
        check(LOOPBACK, &[], "localhost.evil.example", false);
        check(LOOPBACK, &[], "192.168.1.20:8101", false);
        check(LOOPBACK, &["alice.lan"], "Alice.LAN:443", true);
        check(LOOPBACK, &["alice.lan"], "alice.lan.", true);
        check(LOOPBACK, &["alice.lan"], "bob.lan", false);
        check(LOOPBACK, &["192.168.1.20"], "192.168.1.20", true);
    }

    #[test]
    fn addresses_are_served_by_the_bound_one_or_all_when_bound_everywhere() {
        check("192.168.1.20", &[], "192.168.1.20:8101", true);
        check("192.168.1.20", &[], "192.168.1.21:8101", false);
        check("192.168.1.20", &[], "localhost:8101", true);
        check("192.168.1.20", &[], "alice.lan:8101", false);
        check(EVERYWHERE, &[], "192.168.1.21:8101", true);
        check(EVERYWHERE, &[], "[fd00::2]:8101", true);
        check(EVERYWHERE, &[], "alice.lan:8101", false);
        check("::", &[], "10.0.0.7", true);
        check("::", &[], "[::ffff:10.0.0.7]", true);
        check("fd00::2", &[], "[fd00::2]:8101", true);
        check("::ffff:10.0.0.7", &[], "10.0.0.7", true);
    }

    #[test]
    fn malformed_hosts_are_refused() {
        for host in [
            "127.0.0.1:http",
            "127.0.0.1:123456",
            "127.0.0.1:80:80",
            "[::1",
            "[::1]x",
            "::1",
            "user@127.0.0.1",
            "127.1",
            "*",
            "a b",
        ] {
            check(LOOPBACK, &[], host, false);
        }
    }

    #[test]
    fn a_request_naming_no_host_is_served_and_every_name_it_gives_must_be() {
        let hosts = ServedHosts::new(LOOPBACK.parse().unwrap(), &[]);
        let none = HeaderMap::new();
        assert_eq!(hosts.refused(&Uri::from_static("/"), &none), None);
        let mut empty = HeaderMap::new();
        empty.insert(header::HOST, "".parse().unwrap());
        assert_eq!(hosts.refused(&Uri::from_static("/"), &empty), None);
        let mut two = HeaderMap::new();
        two.append(header::HOST, "127.0.0.1".parse().unwrap());
        two.append(header::HOST, "evil.example".parse().unwrap());
        assert_eq!(
            hosts.refused(&Uri::from_static("/"), &two),
            Some("evil.example")
        );
        let absolute = Uri::from_static("http://evil.example:8101/auth/token");
        let mut own = HeaderMap::new();
        own.insert(header::HOST, "127.0.0.1:8101".parse().unwrap());
        assert_eq!(
            hosts.refused(&absolute, &own),
            Some("evil.example:8101"),
            "the request target's host counts too"
        );
    }
}
