//! [`Host`]: a host name or an IP address as a browser writes it in a URL, and so in a request's
//! `Host` header — read the same way from `[gateway] allow_hosts` and from a request, so that the
//! gateway compares like with like (names lower-cased, without a final dot; IPv6 with or without
//! brackets).

use std::net::{IpAddr, Ipv6Addr};

/// A host: a DNS name or an IP address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// Lower case, without a final dot: `agent.example.com`.
    Name(String),
    Ip(IpAddr),
}

/// Why a text is not a [`Host`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("is empty")]
    Empty,
    #[error(
        "is not bare: write the name or address alone, without scheme, port or path, e.g. \
         \"agent.example.com\" (the port is not checked)"
    )]
    NotBare,
    #[error("is a pattern: list each name in full")]
    Pattern,
    #[error("is not ASCII: write an international name in its xn-- form")]
    NotAscii,
    #[error("looks like an IPv4 address but is not one (four numbers 0-255, e.g. 192.168.1.20)")]
    BadIpv4,
    #[error(
        "is not a host name: labels of 1 to 63 letters, digits, '-' or '_' (not starting or \
         ending with '-') separated by dots, at most 253 characters"
    )]
    BadName,
}

impl Host {
    /// Longest host name, without its final dot.
    pub const MAX_NAME: usize = 253;
    /// Longest label of a host name.
    pub const MAX_LABEL: usize = 63;

    /// Reads `text`: an IPv4 address, an IPv6 address (bracketed or not), or a host name
    /// (ASCII, any case, one final dot allowed). Anything else — a port, a scheme, a path, a
    /// pattern, a malformed address — is refused, saying what is wrong.
    pub fn parse(text: &str) -> Result<Self, HostError> {
        if text.is_empty() {
            return Err(HostError::Empty);
        }
        if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            let ip = inner.parse::<Ipv6Addr>().map_err(|_| HostError::NotBare)?;
            return Ok(Self::Ip(IpAddr::V6(ip)));
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(Self::Ip(ip));
        }
        if !text.is_ascii() {
            return Err(HostError::NotAscii);
        }
        if text.contains('*') {
            return Err(HostError::Pattern);
        }
        if text.contains([':', '/', '@', '?', '#', '[', ']']) {
            return Err(HostError::NotBare);
        }
        let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        let labels_ok = name.split('.').all(|label| {
            (1..=Self::MAX_LABEL).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        if name.len() > Self::MAX_NAME || !labels_ok {
            return Err(HostError::BadName);
        }
        // A browser reads a name whose last label is a number as an IPv4 address (`127.1`,
        // `0x7f.1`): never a name, and not one of the addresses above.
        let last = name.rsplit('.').next().unwrap_or_default();
        let hex = last
            .strip_prefix("0x")
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
        if hex || last.bytes().all(|b| b.is_ascii_digit()) {
            return Err(HostError::BadIpv4);
        }
        Ok(Self::Name(name))
    }

    /// The host as compared with another: an IPv4 address written as IPv6 (`::ffff:10.0.0.7`) is
    /// that IPv4 address; a name is itself (already lower case, without its final dot).
    pub fn canonical(&self) -> Self {
        match self {
            Self::Ip(ip) => Self::Ip(ip.to_canonical()),
            Self::Name(_) => self.clone(),
        }
    }

    /// `localhost`, or a loopback address (`127.0.0.0/8`, `::1`, and the IPv4 ones written as
    /// IPv6, `::ffff:127.0.0.1`).
    pub fn is_loopback(&self) -> bool {
        match self {
            Self::Name(name) => name == "localhost",
            Self::Ip(ip) => ip.to_canonical().is_loopback(),
        }
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Result<&str, HostError>) {
        let read = Host::parse(text).map(|h| h.to_string());
        assert_eq!(read, expected.map(str::to_owned), "{text:?}");
    }

    #[test]
    fn hosts_are_read_as_a_browser_writes_them() {
        check("Agent.Example.COM", Ok("agent.example.com"));
        check("agent.example.com.", Ok("agent.example.com"));
        check("localhost", Ok("localhost"));
        check("my_box-2.lan", Ok("my_box-2.lan"));
        check("192.168.1.20", Ok("192.168.1.20"));
        check("::1", Ok("[::1]"));
        check("[fd00::2]", Ok("[fd00::2]"));
        check("", Err(HostError::Empty));
        check("http://alice.lan", Err(HostError::NotBare));
        check("alice.lan:8080", Err(HostError::NotBare));
        check("alice.lan/", Err(HostError::NotBare));
        check("user@alice.lan", Err(HostError::NotBare));
        check("[alice.lan]", Err(HostError::NotBare));
        check("[::1]:80", Err(HostError::NotBare));
        let mapped = Host::parse("::ffff:10.0.0.7").unwrap().canonical();
        assert_eq!(mapped, Host::parse("10.0.0.7").unwrap());
        check("*.lan", Err(HostError::Pattern));
        check("bücher.example", Err(HostError::NotAscii));
        check("a..b", Err(HostError::BadName));
        check(".", Err(HostError::BadName));
        check("-lan", Err(HostError::BadName));
        check("lan-.example", Err(HostError::BadName));
        check("a b", Err(HostError::BadName));
        check(&"a".repeat(64), Err(HostError::BadName));
        check(&["a"; 128].join("."), Err(HostError::BadName));
        check("127.1", Err(HostError::BadIpv4));
        check("192.168.1.256", Err(HostError::BadIpv4));
        check("2130706433", Err(HostError::BadIpv4));
        check("1.0x7f", Err(HostError::BadIpv4));
    }

    #[test]
    fn loopback_is_localhost_and_the_loopback_addresses() {
        for (text, loopback) in [
            ("localhost", true),
            ("LOCALHOST.", true),
            ("127.0.0.1", true),
            ("127.9.9.9", true),
            ("::1", true),
            ("::ffff:127.0.0.1", true),
            ("foo.localhost", false),
            ("10.0.0.1", false),
            ("::", false),
        ] {
            assert_eq!(
                Host::parse(text).map(|h| h.is_loopback()),
                Ok(loopback),
                "{text}"
            );
        }
    }
}
