//! The viewer's access token: a server bound beyond loopback warns that others can reach it
//! and answers only requests that carry the token it printed (in the address, then as the cookie it sets, or as a bearer header);
//! `--token` makes a loopback server need one too, and a malformed one is refused at start.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

/// A running server and the address line it printed.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(host: &str, extra: &[&str]) -> Server {
    let mut child = common::eval()
        .args(["serve", "--port", "0", "--host", host])
        .args(["--policy", "uniform", "--game", "kuhn_poker"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("armac-eval serve: listening on ")
        .unwrap_or_else(|| panic!("no address line: {line:?}"))
        .to_string();
    Server { child, url }
}

/// What the server printed on stderr before it was stopped.
fn stderr_of(mut s: Server) -> String {
    let _ = s.child.kill();
    let mut err = String::new();
    let _ = s.child.stderr.take().unwrap().read_to_string(&mut err);
    let _ = s.child.wait();
    err
}

/// The port of a printed address `http://H:P/...`.
fn port(url: &str) -> u16 {
    let hostport = url.trim_start_matches("http://").split('/').next().unwrap();
    hostport.rsplit(':').next().unwrap().parse().unwrap()
}

/// Sends a GET of `target` to loopback `port` with `headers`; the status and whole answer.
fn get(port: u16, target: &str, headers: &[&str]) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("GET {target} HTTP/1.1\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok());
    (status.unwrap_or_else(|| panic!("no status: {out:?}")), out)
}

#[test]
fn beyond_loopback_every_request_needs_the_printed_token() {
    let s = start("0.0.0.0", &[]);
    let token = s
        .url
        .split_once("/?token=")
        .map(|(_, t)| t.to_string())
        .unwrap_or_else(|| panic!("no token in {}", s.url));
    assert_eq!(token.len(), 32, "{token}");
    let p = port(&s.url);
    for target in ["/", "/api/models", "/app.js"] {
        let (status, text) = get(p, target, &[]);
        assert_eq!(status, 401, "{target}: {text}");
        assert!(text.contains("needs its access token"), "{text}");
    }
    let (status, text) = get(p, "/?token=0123456789abcdef0123456789abcdef", &[]);
    assert_eq!(status, 401, "{text}");
    assert!(text.contains("token is wrong"), "{text}");
    // The printed address opens the page and hands the browser the cookie.
    let (status, page) = get(p, &format!("/?token={token}"), &[]);
    assert_eq!(status, 200, "{page}");
    let cookie = page
        .lines()
        .find_map(|l| l.strip_prefix("Set-Cookie: "))
        .unwrap_or_else(|| panic!("no cookie: {page}"));
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    let jar = cookie.split(';').next().unwrap();
    let (status, models) = get(p, "/api/models", &[&format!("Cookie: {jar}")]);
    assert_eq!(status, 200, "{models}");
    assert!(models.contains("uniform"), "{models}");
    let bearer = format!("Authorization: Bearer {token}");
    assert_eq!(get(p, "/api/models", &[&bearer]).0, 200);
}

#[test]
fn a_loopback_server_needs_a_token_only_when_given_one() {
    let open = start("127.0.0.1", &[]);
    assert!(!open.url.contains("token"), "{}", open.url);
    assert_eq!(get(port(&open.url), "/api/models", &[]).0, 200);
    let closed = start("127.0.0.1", &["--token", "letmein42"]);
    assert!(closed.url.ends_with("/?token=letmein42"), "{}", closed.url);
    let p = port(&closed.url);
    assert_eq!(get(p, "/api/models", &[]).0, 401);
    assert_eq!(get(p, "/api/models?token=letmein42", &[]).0, 200);
}

#[test]
fn a_malformed_token_is_refused_at_start() {
    for bad in ["short", "has space in it", "semi;colon=123"] {
        let out = common::eval()
            .args(["serve", "--port", "0", "--token", bad])
            .args(["--policy", "uniform", "--game", "kuhn_poker"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--token must be 8 to 256 letters and digits"),
            "{bad}: {err}"
        );
    }
}

/// A server bound beyond loopback warns on stderr that others can reach it; one on loopback
/// does not.
#[test]
fn a_server_reachable_beyond_loopback_warns() {
    let wide = stderr_of(start("0.0.0.0", &[]));
    assert!(
        wide.starts_with("warning: the viewer listens on 0.0.0.0:")
            && wide.contains("reachable beyond this machine"),
        "{wide}"
    );
    let local = stderr_of(start("127.0.0.1", &[]));
    assert!(!local.contains("warning"), "{local}");
}
