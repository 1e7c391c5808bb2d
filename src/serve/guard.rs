//! Which requests the viewer answers: a browser page served by another site must not reach it.
//! A page of an attacker's site can make the browser send requests to this server in two
//! ways: by re-pointing its own host name at this machine (DNS rebinding: the browser then
//! sends the attacker's name in `Host`) and by posting a form across sites (the browser sends
//! the attacker's page in `Origin`). [`Guard`] refuses both: `Host`, when sent, must name the
//! address the server is bound to (on loopback: `localhost` or the loopback address, with the
//! port), and a request that changes anything (every method but `GET` and `HEAD`) with an
//! `Origin` must come from a page of that same address. Clients that send neither header (the
//! command-line tools) are answered.

use std::net::{IpAddr, SocketAddr};

/// The `Host` values the server answers to, or every value when it listens on every
/// interface (`--host 0.0.0.0`: it has no one name to check, and says so when it starts).
pub struct Guard {
    hosts: Option<Vec<String>>,
}

impl Guard {
    /// The guard of a server bound to `addr` as `host` (the `--host` argument).
    pub fn new(host: &str, addr: SocketAddr) -> Guard {
        let port = addr.port();
        let ip = addr.ip();
        if ip.is_unspecified() {
            return Guard { hosts: None };
        }
        let mut hosts = vec![format!("{host}:{port}"), with_port(ip, port)];
        if ip.is_loopback() {
            hosts.push(format!("localhost:{port}"));
            hosts.push(format!("127.0.0.1:{port}"));
            hosts.push(format!("[::1]:{port}"));
        }
        hosts.sort();
        hosts.dedup();
        Guard { hosts: Some(hosts) }
    }

    /// The reason to refuse a request with these `Host` and `Origin` headers, if any.
    pub fn refuse(&self, method: &str, host: Option<&str>, origin: Option<&str>) -> Option<String> {
        let hosts = self.hosts.as_ref()?;
        let known = |h: &str| hosts.iter().any(|k| k.eq_ignore_ascii_case(h));
        if let Some(h) = host
            && !known(h)
        {
            return Some(format!(
                "Host `{}` is not this server's address ({}): refused",
                clip(h),
                hosts.join(", ")
            ));
        }
        if matches!(method, "GET" | "HEAD") {
            return None;
        }
        let origin = origin?;
        let page = origin.strip_prefix("http://").filter(|o| known(o));
        match page {
            Some(_) => None,
            None => Some(format!(
                "a {method} from the page `{}` of another site: refused",
                clip(origin)
            )),
        }
    }

    /// A warning for a server that others on the network can reach, when it is one.
    pub fn exposure(addr: SocketAddr) -> Option<String> {
        (!addr.ip().is_loopback()).then(|| {
            format!(
                "warning: the viewer listens on {addr}, reachable beyond this machine: anyone \
                 who can connect can play its policies and read its runs' curves"
            )
        })
    }
}

fn with_port(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

/// At most 80 characters of a header value, for a message.
fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::Guard;

    #[test]
    fn loopback_names_pass_and_other_hosts_and_origins_do_not() {
        let g = Guard::new("127.0.0.1", "127.0.0.1:8080".parse().unwrap());
        for h in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert_eq!(g.refuse("GET", Some(h), None), None, "{h}");
        }
        assert_eq!(
            g.refuse("GET", None, None),
            None,
            "no Host (a command-line client)"
        );
        let rebound = g.refuse("GET", Some("evil.example:8080"), None).unwrap();
        assert!(rebound.contains("evil.example:8080"), "{rebound}");
        assert!(g.refuse("GET", Some("127.0.0.1:9999"), None).is_some());
        // A cross-site form post carries the other page's origin.
        let post = g.refuse("POST", Some("127.0.0.1:8080"), Some("http://evil.example"));
        assert!(post.unwrap().contains("evil.example"));
        assert_eq!(
            g.refuse(
                "POST",
                Some("127.0.0.1:8080"),
                Some("http://localhost:8080")
            ),
            None
        );
        assert_eq!(g.refuse("POST", Some("127.0.0.1:8080"), None), None);
        assert!(
            g.refuse("POST", Some("127.0.0.1:8080"), Some("null"))
                .is_some(),
            "an opaque origin is another site's"
        );
        // GETs change nothing: their Origin is not checked.
        assert_eq!(g.refuse("GET", None, Some("http://evil.example")), None);
    }

    #[test]
    fn every_interface_checks_nothing_and_is_announced() {
        let any = "0.0.0.0:8080".parse().unwrap();
        let g = Guard::new("0.0.0.0", any);
        assert_eq!(
            g.refuse("POST", Some("evil.example"), Some("http://x")),
            None
        );
        assert!(Guard::exposure(any).unwrap().contains("0.0.0.0:8080"));
        assert_eq!(Guard::exposure("127.0.0.1:8080".parse().unwrap()), None);
    }
}
