//! What a slow or hostile client can hold of `armac-eval serve`: clients that announce a body
//! and never send it, or pipeline requests and never read, hold only their own connections
//! (another client is answered at once); an oversized header or body is refused before it is
//! read; a run file that is a symbolic link is never followed. (The warning and the access
//! token of a server reachable beyond loopback: tests/serve_token.rs.)

mod common;

use common::Served;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Starts the server on a free port with `args` and 4 handler threads.
fn serve(args: &[&str]) -> Served {
    let mut all = vec!["--threads", "4"];
    all.extend_from_slice(args);
    common::serve(&all)
}

/// Sends `raw` on a new connection and returns the status and the whole answer.
fn send(s: &Served, raw: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(&s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // The server may answer (and close) before it has read all of `raw`.
    let _ = stream.write_all(raw);
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    (status, text)
}

fn get(s: &Served, path: &str) -> (u16, String) {
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        s.addr
    );
    send(s, req.as_bytes())
}

#[test]
fn slow_clients_do_not_stall_another_request() {
    let s = serve(&["--policy", "uniform", "--game", "kuhn_poker"]);
    // As many slow clients as there are handler threads, and one more of each kind: two
    // announce a body and send one byte of it, two pipeline requests and never read.
    let mut slow = Vec::new();
    for k in 0..5 {
        let mut c = TcpStream::connect(&s.addr).unwrap();
        if k % 2 == 0 {
            write!(
                c,
                "POST /api/play/new HTTP/1.1\r\nHost: {}\r\nContent-Length: 60000\r\n\r\n{{",
                s.addr
            )
            .unwrap();
        } else {
            let one = format!("GET /api/models HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr);
            c.write_all(one.repeat(50).as_bytes()).unwrap();
        }
        slow.push(c);
    }
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let (status, text) = get(&s, "/api/models");
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("kuhn_poker"), "{text}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    drop(slow);
}

#[test]
fn oversized_headers_and_bodies_are_refused() {
    let s = serve(&["--policy", "uniform", "--game", "kuhn_poker"]);
    let long = format!(
        "GET /api/models HTTP/1.1\r\nHost: {}\r\nX-Long: {}\r\n\r\n",
        s.addr,
        "a".repeat(100_000)
    );
    let (status, text) = send(&s, long.as_bytes());
    assert_eq!(status, 431, "{text}");
    // A body announced at 1 GB is refused from its length, before any of it is read.
    let t = Instant::now();
    let big = format!(
        "POST /api/play/new HTTP/1.1\r\nHost: {}\r\nContent-Length: 1000000000\r\n\r\n{{",
        s.addr
    );
    let (status, text) = send(&s, big.as_bytes());
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("over 65536 bytes"), "{text}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // The server still answers.
    assert_eq!(get(&s, "/api/models").0, 200);
}

#[test]
fn a_symlinked_run_file_is_not_served() {
    let dir = common::tmp("serve-limits", "run");
    let (config, _) = armac::run::config::Config::load("kuhn_armac.toml", &[]).unwrap();
    armac::run::armac::write_synthetic_run(&config, &dir, 1).unwrap();
    std::fs::write(
        dir.join("metrics.csv"),
        "epoch,seconds,nash_conv\n0,0.5,0.4\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("lbr_fc.csv"),
        "step,mean_mbb,ci95_mbb,hands,seconds\n1,900.5,30.25,4000,2.5\n",
    )
    .unwrap();
    // A file outside the run, linked in as a curve.
    let secret = common::tmp("serve-limits", "secret.csv");
    std::fs::write(&secret, "step,secret\n1,4242.5\n").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("lbr_x.csv")).unwrap();
    let s = serve(&["--policy", dir.to_str().unwrap()]);
    let (status, text) = get(&s, "/api/run?model=0");
    assert_eq!(status, 200, "{text}");
    // The regular files are served, the link is not (the test can fail both ways).
    assert!(text.contains("900.5"), "{text}");
    assert!(
        !text.contains("4242.5") && !text.contains("secret"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&secret);
}

/// Open connections are bounded: with [`MAX_CONNECTIONS`] idle connections held, one more is
/// answered `503` at once (before it sends anything) instead of getting a thread, and once they
/// close the server answers again.
///
/// [`MAX_CONNECTIONS`]: armac::serve::http::MAX_CONNECTIONS
#[test]
fn connections_beyond_the_cap_are_answered_busy() {
    let s = serve(&["--policy", "uniform", "--game", "kuhn_poker"]);
    let idle: Vec<TcpStream> = (0..128)
        .map(|_| TcpStream::connect(&s.addr).unwrap())
        .collect();
    // The accept loop takes connections in order: the idle ones are counted before this one.
    let mut extra = TcpStream::connect(&s.addr).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(4)))
        .unwrap();
    let mut text = String::new();
    let t = Instant::now();
    let _ = extra.read_to_string(&mut text);
    assert!(text.starts_with("HTTP/1.1 503"), "{text:?}");
    assert!(text.contains("too many open connections"), "{text}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    drop(idle);
    let t = Instant::now();
    loop {
        let (status, text) = get(&s, "/api/models");
        if status == 200 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{status}: {text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
