//! Which addresses `web_fetch` may connect to, and the resolver that enforces it.
//!
//! A host name is resolved once per connection by [`GuardedResolver`], every address of the answer
//! is checked, and the connection goes to exactly those checked addresses: there is no second
//! lookup a rebinding DNS server could answer differently. An address literal in a URL is checked
//! by [`check_url`] before the request (the HTTP client does not resolve those). A host named in
//! `[tools.web] allow_hosts` may resolve to anything.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use types::Host;

/// Looks a host name up (the system resolver in production; a scripted one in tests).
pub trait Lookup: Send + Sync + std::fmt::Debug {
    fn lookup(
        &self,
        host: String,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'static>,
    >;
}

/// The operating system's resolver (`getaddrinfo` through tokio).
#[derive(Debug, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(
        &self,
        host: String,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'static>,
    > {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A refused destination: the error the resolver returns, found again in the client's error chain
/// so that the model is told why.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{host}` resolves to {address}, a {kind} address, which web_fetch does not reach (the operator can allow the host in [tools.web] allow_hosts)"
)]
pub struct Refused {
    pub host: String,
    pub address: IpAddr,
    pub kind: &'static str,
}

/// The hosts allowed to reach any address, read as [`Host`]s: a name in any case or with a final
/// dot, an IPv6 address in any of its spellings (an IPv4 one written as IPv6 is that IPv4
/// address: [`Host::canonical`]), all compare as the URL's host does.
#[derive(Debug, Clone, Default)]
pub struct AllowHosts(Arc<HashSet<Host>>);

impl AllowHosts {
    /// `hosts` as `[tools.web] allow_hosts` lists them; an entry that is no host (the
    /// configuration's check refuses it before) allows nothing.
    pub fn new(hosts: &[String]) -> Self {
        Self(Arc::new(
            hosts
                .iter()
                .filter_map(|h| Host::parse(h).ok())
                .map(|h| h.canonical())
                .collect(),
        ))
    }

    fn contains(&self, host: &str) -> bool {
        Host::parse(host).is_ok_and(|host| self.0.contains(&host.canonical()))
    }
}

/// Why `ip` is not a public address, or `None` when it is one.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => non_public_v4(v4),
            None => non_public_v6(v6),
        },
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_link_local() {
        // 169.254.0.0/16, where the cloud metadata services (169.254.169.254) answer.
        Some("link-local (cloud metadata)")
    } else if ip.is_private() {
        Some("private")
    } else if a == 100 && (64..128).contains(&b) {
        // Shared address space (carrier NAT; Alibaba's metadata service is 100.100.100.200).
        Some("shared (carrier NAT, cloud metadata)")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast()
        || a >= 240
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
    {
        Some("reserved")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local (cloud metadata)")
    } else if first & 0xfe00 == 0xfc00 {
        // Unique local addresses, incl. AWS's metadata service at fd00:ec2::254.
        Some("private")
    } else if first == 0x64 && ip.segments()[1] == 0xff9b {
        // NAT64: an IPv4 address inside; check it.
        let [.., a, b, c, d] = ip.octets();
        non_public_v4(Ipv4Addr::new(a, b, c, d))
    } else if first == 0x2002 {
        // 6to4: the relay's IPv4 address in bits 16-48 (2002:7f00:1:: is 127.0.0.1's).
        let [_, _, a, b, c, d, ..] = ip.octets();
        non_public_v4(Ipv4Addr::new(a, b, c, d))
    } else if let [0, 0, 0, 0, 0, 0, _, _] | [0, 0, 0, 0, 0xffff, 0, _, _] = ip.segments() {
        // IPv4-compatible (::a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d) forms.
        let [.., a, b, c, d] = ip.octets();
        non_public_v4(Ipv4Addr::new(a, b, c, d))
    } else {
        None
    }
}

/// Refuses a URL whose host is an address literal that is not public (and not allowed).
pub fn check_url(url: &Url, allow: &AllowHosts) -> Result<(), Refused> {
    let Some(host) = url.host_str() else {
        return Ok(());
    };
    if allow.contains(host) {
        return Ok(());
    }
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    match literal.parse::<IpAddr>() {
        Ok(ip) => match non_public(ip) {
            Some(kind) => Err(Refused {
                host: host.to_owned(),
                address: ip,
                kind,
            }),
            None => Ok(()),
        },
        Err(_) => Ok(()),
    }
}

/// The HTTP client's resolver: every answer checked, only checked addresses handed back.
#[derive(Debug)]
pub struct GuardedResolver {
    lookup: Arc<dyn Lookup>,
    allow: AllowHosts,
}

impl GuardedResolver {
    pub fn new(lookup: Arc<dyn Lookup>, allow: AllowHosts) -> Self {
        Self { lookup, allow }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let allowed = self.allow.contains(&host);
        let answer = self.lookup.lookup(host.clone());
        Box::pin(async move {
            let ips = answer.await?;
            if ips.is_empty() {
                return Err(format!("`{host}` has no address").into());
            }
            if !allowed
                && let Some((ip, kind)) =
                    ips.iter().find_map(|ip| non_public(*ip).map(|k| (*ip, k)))
            {
                tracing::info!(%host, %ip, kind, "web_fetch refused a non-public address");
                return Err(Box::new(Refused {
                    host,
                    address: ip,
                    kind,
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// The [`Refused`] somewhere in `error`'s chain of causes, if there is one.
pub fn refusal_in<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut cause: Option<&'a (dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return Some(refused);
        }
        cause = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_metadata_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "::127.0.0.1",
            "::ffff:0:127.0.0.1",
            "::10.0.0.1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(non_public(parsed).is_some(), "{ip} passed as public");
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "2002:5db8:d822::1",
        ] {
            assert_eq!(non_public(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn address_literals_are_checked_unless_allowed() {
        let none = AllowHosts::default();
        let url = |s: &str| Url::parse(s).unwrap();
        assert!(check_url(&url("http://127.0.0.1:8080/x"), &none).is_err());
        assert!(check_url(&url("http://[::1]/"), &none).is_err());
        assert!(check_url(&url("http://169.254.169.254/latest/meta-data"), &none).is_err());
        assert!(check_url(&url("http://2130706433/"), &none).is_err());
        assert!(check_url(&url("https://example.org/"), &none).is_ok());
        let allow = AllowHosts::new(&["127.0.0.1".to_owned(), "::1".to_owned()]);
        assert!(check_url(&url("http://127.0.0.1:8080/x"), &allow).is_ok());
        assert!(check_url(&url("http://[::1]/"), &allow).is_ok());
        // Spelled otherwise in the list, the same hosts.
        let allow = AllowHosts::new(&["0:0:0:0:0:0:0:1".to_owned(), "Wiki.LAN.".to_owned()]);
        assert!(check_url(&url("http://[::1]/"), &allow).is_ok());
        assert!(allow.contains("wiki.lan"));
        assert!(!allow.contains("wiki.lan.evil.example"));
        let allow = AllowHosts::new(&["10.0.0.2".to_owned()]);
        assert!(check_url(&url("http://[::ffff:10.0.0.2]/"), &allow).is_ok());
    }
}
