//! HTTP helpers shared by the tests of `armac-eval serve` (`tests/serve*.rs`): raw requests
//! and their answers, the shipped models they serve, a Kuhn policy file and a hand played out.
//! Each file uses a subset.
#![allow(dead_code)]

use crate::common::Served;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const HUNL: &str = "models/hunl_fcpa_armac";
pub const LEDUC: &str = "models/leduc_armac";

pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The error message of a refused request (asserting its status).
    pub fn error(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        self.json()["error"]
            .as_str()
            .expect("an error message")
            .to_string()
    }
}

/// One raw HTTP/1.1 request (the path is sent exactly as given).
pub fn request(s: &Served, method: &str, path: &str, body: Option<&str>) -> Answer {
    request_as(s, method, path, &s.addr, "", body)
}

/// [`request`] with `host` in the Host header and `extra` header lines (each ending in CRLF).
pub fn request_as(
    s: &Served,
    method: &str,
    path: &str,
    host: &str,
    extra: &str,
    body: Option<&str>,
) -> Answer {
    let mut stream = TcpStream::connect(&s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head.contains("Transfer-Encoding: chunked") {
        dechunk(body)
    } else {
        body.to_string()
    };
    Answer {
        status,
        head: head.to_string(),
        body,
    }
}

/// The body of a chunked response (`<hex size>\r\n<data>\r\n` ... `0\r\n\r\n`).
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, tail) = rest.split_once("\r\n").expect("a chunk size line");
        let n = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
        if n == 0 {
            return out;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
}

pub fn get(s: &Served, path: &str) -> Answer {
    request(s, "GET", path, None)
}

pub fn post(s: &Served, path: &str, body: &Value) -> Answer {
    request(s, "POST", path, Some(&body.to_string()))
}

pub fn ok(a: Answer) -> Value {
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

/// A Kuhn policy file whose every entry differs: P(bet) = (k + 1) / 13 at the k-th infostate.
pub fn kuhn_policy_file(dir: &Path) -> (PathBuf, Vec<(String, f64)>) {
    std::fs::create_dir_all(dir).unwrap();
    let keys = [
        "0", "1", "2", "0p", "1p", "2p", "0b", "1b", "2b", "0pb", "1pb", "2pb",
    ];
    let entries: Vec<(String, f64)> = keys
        .iter()
        .enumerate()
        .map(|(k, key)| (key.to_string(), (k + 1) as f64 / 13.0))
        .collect();
    let policy: serde_json::Map<String, Value> = entries
        .iter()
        .map(|(key, bet)| (key.clone(), json!([[0, 1.0 - bet], [1, bet]])))
        .collect();
    let path = dir.join("kuhn.json");
    std::fs::write(
        &path,
        json!({"game": "kuhn_poker", "policy": policy}).to_string(),
    )
    .unwrap();
    (path, entries)
}

/// Plays the current hand of `v` to the end, calling (or passing) whenever it can.
pub fn play_out(s: &Served, mut v: Value) -> Value {
    for _ in 0..100 {
        if v["over"] == true {
            return v;
        }
        assert_eq!(v["to_act"], "you");
        let legal = v["legal"].as_array().unwrap();
        let pick = legal
            .iter()
            .find(|a| ["Call", "Pass"].contains(&a["label"].as_str().unwrap()))
            .unwrap_or(&legal[0]);
        v = ok(post(
            s,
            "/api/play/act",
            &json!({"session": v["session"], "hand": v["hand"], "step": v["step"], "action": pick["action"]}),
        ));
    }
    panic!("the hand did not end in 100 actions");
}
