//! The viewer's HTTP/1.1 server, on the standard library's sockets: one request per
//! connection (every answer says `Connection: close`), with every resource a client can hold
//! bounded.
//!
//! * Connections: at most [`MAX_CONNECTIONS`] at once, each read on its own thread; one more is
//!   answered `503` and closed at once.
//! * Time: every read and write of a connection times out ([`IO_TIMEOUT`]), and the whole
//!   request (line, headers and body) must arrive within [`REQUEST_DEADLINE`]; a client that
//!   trickles bytes, announces a body it never sends or never reads its answer holds only its
//!   own connection, and only that long.
//! * Size: the request line and headers together at most [`MAX_HEAD`] bytes (`431`), the body
//!   at most [`MAX_BODY`] bytes (`413`, refused from `Content-Length` before it is read).
//! * Work: requests are answered by at most `threads` handlers at once (the `--threads` of
//!   `serve`); the others wait for a free one.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Connections open at once (each has a thread while it is read and answered).
pub const MAX_CONNECTIONS: usize = 128;
/// The longest a single read or write of a connection may wait.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a whole request may take to arrive.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// The request line and headers together, in bytes.
pub const MAX_HEAD: usize = 16 * 1024;
/// The largest request body (a play request is under 200 bytes).
pub const MAX_BODY: usize = 64 * 1024;

/// A request as read from the socket.
#[derive(Debug)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target as sent (path and query, not decoded).
    pub target: String,
    /// The headers in order, names as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer: status, headers and body (not sent for `HEAD`).
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// Why a request was not read: the connection went quiet or closed (nothing is answered), or
/// the request is refused with a status and a message.
#[derive(Debug)]
pub enum ReadError {
    Gone,
    Refused(u16, String),
}

/// Answers a request.
pub type Handler = Arc<dyn Fn(&Request) -> Answer + Send + Sync>;
/// Builds the answer to a request refused unread: its status and message.
pub type Refusal = Arc<dyn Fn(u16, &str) -> Answer + Send + Sync>;

/// Counts live connections; the count drops when the guard does.
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers the connections of `listener` with `handle` until the listener fails: each
/// connection on its own thread (at most [`MAX_CONNECTIONS`]), at most `threads` handlers at
/// once. `refused` builds the answer to a request that cannot be read (`status`, message).
pub fn serve(listener: TcpListener, threads: usize, handle: Handler, refused: Refusal) {
    let live = Arc::new(AtomicUsize::new(0));
    // Handler permits: a token per handler that may run.
    let (give, take) = crossbeam::channel::bounded::<()>(threads.max(1));
    for _ in 0..threads.max(1) {
        give.send(()).expect("the permit channel holds every token");
    }
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if live.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            live.fetch_sub(1, Ordering::SeqCst);
            let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
            let busy = refused(503, "the server is busy: too many open connections");
            let _ = write_answer(&mut stream, &busy, false);
            continue;
        }
        let guard = Live(Arc::clone(&live));
        let (handle, refused) = (Arc::clone(&handle), Arc::clone(&refused));
        let (give, take) = (give.clone(), take.clone());
        let spawned = std::thread::Builder::new()
            .name("serve-conn".into())
            .spawn(move || {
                let _guard = guard;
                let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
                let answer = match read_request(&mut stream, REQUEST_DEADLINE) {
                    Ok(request) => {
                        // A permit is held while the handler runs.
                        let Ok(()) = take.recv() else { return };
                        let a = handle(&request);
                        let _ = give.send(());
                        let head_only = request.method == "HEAD";
                        let _ = write_answer(&mut stream, &a, head_only);
                        return;
                    }
                    Err(ReadError::Gone) => return,
                    Err(ReadError::Refused(status, message)) => refused(status, &message),
                };
                let _ = write_answer(&mut stream, &answer, false);
            });
        // A thread that cannot start drops its connection (and its count).
        drop(spawned);
    }
}

/// Reads one request from `stream` within `deadline` (see the module docs for the limits).
pub fn read_request(stream: &mut TcpStream, deadline: Duration) -> Result<Request, ReadError> {
    let until = Instant::now() + deadline;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    // The head: read until the blank line, at most MAX_HEAD bytes.
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Refused(
                431,
                format!("the request line and headers are over {MAX_HEAD} bytes"),
            ));
        }
        let mut chunk = [0u8; 4096];
        let n = read_some(stream, &mut chunk, until)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    if head_end > MAX_HEAD {
        return Err(ReadError::Refused(
            431,
            format!("the request line and headers are over {MAX_HEAD} bytes"),
        ));
    }
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| ReadError::Refused(400, "the request head is not UTF-8".into()))?;
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Refused(
            400,
            format!("malformed request line `{line}`"),
        ));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Err(ReadError::Refused(
            400,
            format!("malformed request line `{line}`"),
        ));
    }
    let mut headers = Vec::new();
    for l in lines {
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| ReadError::Refused(400, format!("malformed header line `{l}`")))?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let request = Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
    };
    if request
        .header("Transfer-Encoding")
        .is_some_and(|v| !v.eq_ignore_ascii_case("identity"))
    {
        return Err(ReadError::Refused(
            411,
            "send the body with a Content-Length".into(),
        ));
    }
    let length = match request.header("Content-Length") {
        None => 0,
        Some(v) => v.parse::<u64>().map_err(|_| {
            ReadError::Refused(400, format!("Content-Length `{v}` is not a number"))
        })?,
    };
    if length > MAX_BODY as u64 {
        return Err(ReadError::Refused(
            413,
            format!("the request body is over {MAX_BODY} bytes ({length} announced)"),
        ));
    }
    let mut body = buf[head_end + 4..].to_vec();
    body.truncate(length as usize);
    while body.len() < length as usize {
        let mut chunk = [0u8; 4096];
        let want = (length as usize - body.len()).min(chunk.len());
        let n = read_some(stream, &mut chunk[..want], until)?;
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Request { body, ..request })
}

/// One read of at most `buf.len()` bytes before `until` (and within [`IO_TIMEOUT`]); a closed
/// connection, a timeout or an error is [`ReadError::Gone`].
fn read_some(stream: &mut TcpStream, buf: &mut [u8], until: Instant) -> Result<usize, ReadError> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ReadError::Gone);
    }
    stream
        .set_read_timeout(Some(left.min(IO_TIMEOUT)))
        .map_err(|_| ReadError::Gone)?;
    match stream.read(buf) {
        Ok(0) | Err(_) => Err(ReadError::Gone),
        Ok(n) => Ok(n),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The reason phrase of the statuses the viewer sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Writes `a` (without its body when `head_only`) and closes the sending side.
pub fn write_answer(stream: &mut TcpStream, a: &Answer, head_only: bool) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", a.status, reason(a.status));
    for (k, v) in &a.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        a.body.len()
    ));
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(&a.body)?;
    }
    stream.flush()?;
    stream.shutdown(std::net::Shutdown::Write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A connected pair of sockets on loopback.
    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        (client, server)
    }

    #[test]
    fn a_request_is_read_whole() {
        let (mut c, mut s) = pair();
        c.write_all(b"POST /api/play/new?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
            .unwrap();
        let r = read_request(&mut s, Duration::from_secs(2)).unwrap();
        assert_eq!(
            (r.method.as_str(), r.target.as_str()),
            ("POST", "/api/play/new?x=1")
        );
        assert_eq!(r.header("host"), Some("a"));
        assert_eq!(r.body, b"{}");
    }

    #[test]
    fn oversized_heads_and_bodies_are_refused_before_they_are_read() {
        let (mut c, mut s) = pair();
        c.write_all(b"POST / HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\nx")
            .unwrap();
        let e = read_request(&mut s, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(e, ReadError::Refused(413, _)), "{e:?}");
        let (mut c, mut s) = pair();
        let long = format!("GET / HTTP/1.1\r\nX-Long: {}\r\n", "a".repeat(2 * MAX_HEAD));
        c.write_all(long.as_bytes()).unwrap();
        let e = read_request(&mut s, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(e, ReadError::Refused(431, _)), "{e:?}");
    }

    #[test]
    fn a_body_that_never_comes_ends_at_the_deadline() {
        let (mut c, mut s) = pair();
        c.write_all(b"POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\nx")
            .unwrap();
        let t = Instant::now();
        let e = read_request(&mut s, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, ReadError::Gone), "{e:?}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
}
