//! Which requests the viewer answers: a browser page served by another site must not reach it.
//! A page of an attacker's site can make the browser send requests to this server in two
//! ways: by re-pointing its own host name at this machine (DNS rebinding: the browser then
//! sends the attacker's name in `Host`) and by posting a form across sites (the browser sends
//! the attacker's page in `Origin`). [`Guard`] refuses both: `Host`, when sent, must name the
//! address the server is bound to (on loopback: `localhost` or the loopback address, with the
//! port), and a request that changes anything (every method but `GET` and `HEAD`) with an
//! `Origin` must come from a page of that same address. Clients that send neither header (the
//! command-line tools) are answered.
//!
//! A server that others on the network can reach also needs an access token: every request
//! must carry it, as `?token=` in its address (the server then answers with a cookie, so the
//! page's own requests carry it too), as that cookie, or as `Authorization: Bearer`.

use std::net::{IpAddr, SocketAddr};

/// The cookie that carries the access token.
pub const TOKEN_COOKIE: &str = "armac_token";

/// The `Host` values the server answers to, or every value when it listens on every
/// interface (`--host 0.0.0.0`: it has no one name to check, and says so when it starts),
/// and the access token requests must carry, if any.
pub struct Guard {
    hosts: Option<Vec<String>>,
    token: Option<String>,
}

/// How a request proved it may be answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Admitted {
    /// The server needs no token.
    Open,
    /// By the token in its address: the answer sets the cookie.
    ByQuery,
    /// By the cookie or the `Authorization` header.
    ByHeader,
}

impl Guard {
    /// The guard of a server bound to `addr` as `host` (the `--host` argument), requiring
    /// `token` on every request when one is given.
    pub fn new(host: &str, addr: SocketAddr, token: Option<String>) -> Guard {
        let port = addr.port();
        let ip = addr.ip();
        if ip.is_unspecified() {
            return Guard { hosts: None, token };
        }
        let mut hosts = vec![format!("{host}:{port}"), with_port(ip, port)];
        if ip.is_loopback() {
            hosts.push(format!("localhost:{port}"));
            hosts.push(format!("127.0.0.1:{port}"));
            hosts.push(format!("[::1]:{port}"));
        }
        hosts.sort();
        hosts.dedup();
        Guard {
            hosts: Some(hosts),
            token,
        }
    }

    /// The access token requests must carry, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Whether a request carrying these (the `token` query parameter, the `Authorization`
    /// and `Cookie` headers) may be answered; the refusal names what is missing.
    pub fn admit(
        &self,
        query: Option<&str>,
        authorization: Option<&str>,
        cookie: Option<&str>,
    ) -> Result<Admitted, String> {
        let Some(token) = self.token.as_deref() else {
            return Ok(Admitted::Open);
        };
        if query.is_some_and(|q| same(q, token)) {
            return Ok(Admitted::ByQuery);
        }
        let bearer = authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|b| same(b.trim(), token));
        let cookie = cookie.is_some_and(|c| {
            c.split(';')
                .filter_map(|kv| kv.trim().split_once('='))
                .any(|(k, v)| k == TOKEN_COOKIE && same(v, token))
        });
        if bearer || cookie {
            return Ok(Admitted::ByHeader);
        }
        let given = query.is_some() || authorization.is_some();
        Err(if given {
            "the access token is wrong: use the address `armac-eval serve` printed when it \
             started"
                .to_string()
        } else {
            "this viewer needs its access token: open the address `armac-eval serve` printed \
             when it started (it ends in `?token=...`)"
                .to_string()
        })
    }

    /// The `Set-Cookie` value that carries the token on the page's own requests.
    pub fn cookie(&self) -> Option<String> {
        self.token
            .as_deref()
            .map(|t| format!("{TOKEN_COOKIE}={t}; Path=/; HttpOnly; SameSite=Strict"))
    }

    /// A new random access token (128 bits from the operating system's generator).
    pub fn new_token() -> String {
        format!("{:032x}", rand::random::<u128>())
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
                 who can connect and holds its access token can play its policies and read \
                 its runs' curves (the token is in the address below; HTTP is not encrypted)"
            )
        })
    }
}

/// Whether two tokens are equal, in a time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
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
        let g = Guard::new("127.0.0.1", "127.0.0.1:8080".parse().unwrap(), None);
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
        let g = Guard::new("0.0.0.0", any, None);
        assert_eq!(
            g.refuse("POST", Some("evil.example"), Some("http://x")),
            None
        );
        assert!(Guard::exposure(any).unwrap().contains("0.0.0.0:8080"));
        assert_eq!(Guard::exposure("127.0.0.1:8080".parse().unwrap()), None);
    }

    #[test]
    fn a_token_is_required_in_the_address_the_cookie_or_the_header() {
        use super::{Admitted, TOKEN_COOKIE};
        let any = "0.0.0.0:8080".parse().unwrap();
        let g = Guard::new("0.0.0.0", any, Some("abc123".into()));
        assert_eq!(g.admit(Some("abc123"), None, None), Ok(Admitted::ByQuery));
        assert_eq!(
            g.admit(None, Some("Bearer abc123"), None),
            Ok(Admitted::ByHeader)
        );
        let jar = format!("other=1; {TOKEN_COOKIE}=abc123");
        assert_eq!(g.admit(None, None, Some(&jar)), Ok(Admitted::ByHeader));
        let missing = g.admit(None, None, Some("other=1")).unwrap_err();
        assert!(missing.contains("needs its access token"), "{missing}");
        let wrong = g.admit(Some("abc124"), None, None).unwrap_err();
        assert!(wrong.contains("token is wrong"), "{wrong}");
        assert!(g.admit(Some("abc12"), None, None).is_err(), "a prefix");
        assert!(g.admit(None, Some("Bearer abc1234"), None).is_err());
        let wrong_cookie = format!("{TOKEN_COOKIE}=abc");
        assert!(g.admit(None, None, Some(&wrong_cookie)).is_err());
        assert!(g.cookie().unwrap().starts_with("armac_token=abc123;"));
        let open = Guard::new("127.0.0.1", "127.0.0.1:8080".parse().unwrap(), None);
        assert_eq!(open.admit(None, None, None), Ok(Admitted::Open));
        assert_eq!(open.cookie(), None);
        let (a, b) = (Guard::new_token(), Guard::new_token());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
