//! `armac-eval serve`: a local web page that shows what a policy does and plays against it.
//!
//! A small synchronous HTTP/1.1 server ([`http`]: one request per connection, with timeouts
//! and caps on connections, header and body sizes) whose requests are answered by at most
//! [`ServeOptions::threads`] handlers at once, bound to 127.0.0.1 unless told otherwise. It serves
//! three embedded files (`assets/`: the page, its script and its style sheet; nothing is read
//! from disk, so no request path can reach a file) and a JSON API ([`api`], [`play`]) on the
//! policies of [`model`]:
//!
//! | method and path | answer |
//! |---|---|
//! | `GET /api/models` | the loaded policies: game, kind (`holdem` chart or infostate `table`), policy heads, run view |
//! | `GET /api/chart?model=M&policy=P&history=a,b&board=AsKd7c` | Hold'em: the 13x13 hand-class chart of the player to act after betting `history` (actions only; the board's cards are dealt where the game deals them) |
//! | `GET /api/table?model=M&policy=P[&player=0][&filter=s][&offset=O][&limit=L]` | small games: every information state with its action probabilities |
//! | `GET /api/run?model=M` | a run directory's `metrics.csv` and `lbr_<variant>.csv` as columns and rows |
//! | `POST /api/play/new {"model","policy","seat","seed"}` | a new match against the policy; its first hand |
//! | `POST /api/play/act {"session","hand","step","action"}` | the person's action; the model answers until the person is to act again |
//! | `POST /api/play/next {"session"}` | the next hand of the match (seats alternate) |
//! | `GET /api/play/state?session=S` | the hand as the person sees it |
//! | `GET /api/play/history?session=S` | the match's finished hands: a `.phhs` file (Poker Hand History) for heads-up no-limit Hold'em, else text |
//!
//! Errors are `4xx` with `{"error": "<message>"}`; the server keeps no state a request can
//! corrupt (every request is validated before anything changes).

pub mod api;
pub mod chart;
pub mod guard;
pub mod http;
pub mod model;
pub mod play;
pub mod table;

use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;

/// The most worker threads `serve` takes (each answers one request at a time).
pub const MAX_THREADS: usize = 64;

/// What `armac-eval serve` was asked for, validated by [`Server::bind`].
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// `--policy` arguments: model / run directories (`current:` is implied: both heads are
    /// served), OpenSpiel-format policy files, or `uniform` / `always-call` / `always-fold`
    /// for `game`.
    pub policies: Vec<String>,
    /// The game of the named baselines (`uniform`, ...); files and directories carry their own.
    pub game: String,
    /// Address to bind (127.0.0.1 by default).
    pub host: String,
    /// Port; 0 takes any free one.
    pub port: u16,
    /// Worker threads, 1..=[`MAX_THREADS`].
    pub threads: usize,
    /// Seed of the play sessions' deals and model draws (each session derives its own).
    pub seed: u64,
    /// The access token every request must carry (`--token`); a server bound beyond
    /// loopback draws a random one when none is given.
    pub token: Option<String>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            policies: Vec::new(),
            game: "hunl_fcpa".into(),
            host: "127.0.0.1".into(),
            port: 8080,
            threads: 4,
            seed: 0,
            token: None,
        }
    }
}

/// Errors of starting the server (requests never fail the server; they get a 4xx).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Usage(String),
    #[error("--policy {arg}")]
    Policy {
        arg: String,
        #[source]
        source: crate::run::RunError,
    },
    #[error("cannot listen on {addr}: {reason}")]
    Bind { addr: String, reason: String },
}

/// A bound server: [`Server::addr`] is where it listens, [`Server::run`] answers requests.
pub struct Server {
    listener: std::net::TcpListener,
    app: Arc<model::App>,
    sessions: Arc<play::Sessions>,
    guard: Arc<guard::Guard>,
    threads: usize,
}

impl Server {
    /// Loads every policy of `opts` (errors name the `--policy` argument) and binds the port.
    pub fn bind(opts: &ServeOptions) -> Result<Server, ServeError> {
        if opts.policies.is_empty() {
            return Err(ServeError::Usage(
                "serve needs at least one --policy".into(),
            ));
        }
        if !(1..=MAX_THREADS).contains(&opts.threads) {
            return Err(ServeError::Usage(format!(
                "--threads {} is not in 1..={MAX_THREADS}",
                opts.threads
            )));
        }
        let app = model::App::load(opts)?;
        let addr = format!("{}:{}", opts.host, opts.port);
        let listener = std::net::TcpListener::bind(&addr).map_err(|e| ServeError::Bind {
            addr: addr.clone(),
            reason: e.to_string(),
        })?;
        let bound = listener.local_addr().map_err(|e| ServeError::Bind {
            addr: addr.clone(),
            reason: e.to_string(),
        })?;
        if let Some(t) = &opts.token
            && (t.len() < 8 || t.len() > 256 || !t.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            return Err(ServeError::Usage(
                "--token must be 8 to 256 letters and digits".into(),
            ));
        }
        let token = opts
            .token
            .clone()
            .or_else(|| (!bound.ip().is_loopback()).then(guard::Guard::new_token));
        let guard = guard::Guard::new(&opts.host, bound, token);
        Ok(Server {
            listener,
            app: Arc::new(app),
            sessions: Arc::new(play::Sessions::default()),
            guard: Arc::new(guard),
            threads: opts.threads,
        })
    }

    /// A warning to print when others on the network can reach the server.
    pub fn exposure_warning(&self) -> Option<String> {
        guard::Guard::exposure(self.addr())
    }

    /// The address to open: the server's, with its access token when it needs one.
    pub fn url(&self) -> String {
        match self.guard.token() {
            Some(t) => format!("http://{}/?token={t}", self.addr()),
            None => format!("http://{}/", self.addr()),
        }
    }

    /// The address the server listens on (with the port the system chose for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Answers requests (at most [`ServeOptions::threads`] at once) until the process ends.
    pub fn run(self) {
        let (app, sessions, guard) = (self.app, self.sessions, self.guard);
        let handle = Arc::new(move |r: &http::Request| answer(&app, &sessions, &guard, r));
        let refused = Arc::new(|status: u16, message: &str| {
            to_answer(Reply::error(status, message.to_string()))
        });
        http::serve(self.listener, self.threads, handle, refused);
    }
}

/// The reply to a request: status, content type, body and an optional download file name.
pub struct Reply {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    download: Option<String>,
}

impl Reply {
    /// `200` with a JSON body.
    pub fn json(v: Value) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body: v.to_string().into_bytes(),
            download: None,
        }
    }

    /// `status` with `{"error": message}`.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        let mut r = Reply::json(json!({"error": message.into()}));
        r.status = status;
        r
    }

    /// `200` plain text offered as the download `file`.
    pub fn download(text: String, file: String) -> Reply {
        Reply {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body: text.into_bytes(),
            download: Some(file),
        }
    }

    fn asset(body: &'static str, content_type: &'static str) -> Reply {
        Reply {
            status: 200,
            content_type,
            body: body.as_bytes().to_vec(),
            download: None,
        }
    }
}

/// A request refused: the status (4xx) and the message of its JSON body.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    /// `400 Bad Request`.
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
        }
    }

    /// `404 Not Found`.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 404,
            message: message.into(),
        }
    }

    /// `409 Conflict` (a request that does not fit the hand's current state).
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 409,
            message: message.into(),
        }
    }
}

impl From<ApiError> for Reply {
    fn from(e: ApiError) -> Reply {
        Reply::error(e.status, e.message)
    }
}

/// A parsed request: method, path (not decoded: routes are plain ASCII), query parameters
/// (percent-decoded) and body.
pub struct Incoming {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Incoming {
    /// The query parameter `name`, if given.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as a JSON object, or a 400 naming what is wrong.
    pub fn json_body(&self) -> Result<serde_json::Map<String, Value>, ApiError> {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(ApiError::bad("the request body must be a JSON object")),
            Err(e) => Err(ApiError::bad(format!("the request body is not JSON: {e}"))),
        }
    }
}

fn answer(
    app: &model::App,
    sessions: &play::Sessions,
    guard: &guard::Guard,
    request: &http::Request,
) -> http::Answer {
    let refused = guard.refuse(
        &request.method,
        request.header("Host"),
        request.header("Origin"),
    );
    let url = request.target.as_str();
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let token = parse_query(query)
        .ok()
        .and_then(|q| q.into_iter().find(|(k, _)| k == "token").map(|(_, v)| v));
    let admitted = guard.admit(
        token.as_deref(),
        request.header("Authorization"),
        request.header("Cookie"),
    );
    let reply = match (refused, &admitted) {
        (Some(message), _) => Reply::error(403, message),
        (None, Err(message)) => Reply::error(401, message.clone()),
        (None, Ok(_)) => match parse_request(request) {
            Ok(incoming) => route(app, sessions, &incoming),
            Err(e) => e.into(),
        },
    };
    let mut answer = to_answer(reply);
    if admitted == Ok(guard::Admitted::ByQuery)
        && let Some(cookie) = guard.cookie()
    {
        answer.headers.push(("Set-Cookie", cookie));
    }
    answer
}

/// The answer of `reply` with the headers every answer carries.
fn to_answer(reply: Reply) -> http::Answer {
    let mut headers = vec![
        ("Content-Type", reply.content_type.to_string()),
        ("Cache-Control", "no-store".to_string()),
        ("X-Content-Type-Options", "nosniff".to_string()),
    ];
    if let Some(file) = reply.download {
        headers.push((
            "Content-Disposition",
            format!("attachment; filename=\"{file}\""),
        ));
    }
    http::Answer {
        status: reply.status,
        headers,
        body: reply.body,
    }
}

fn parse_request(request: &http::Request) -> Result<Incoming, ApiError> {
    let url = request.target.as_str();
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let query = parse_query(query)?;
    Ok(Incoming {
        method: request.method.clone(),
        path: path.to_string(),
        query,
        body: request.body.clone(),
    })
}

/// `a=1&b=x%20y` as decoded pairs; a malformed escape is a 400.
fn parse_query(q: &str) -> Result<Vec<(String, String)>, ApiError> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            Ok((percent_decode(k)?, percent_decode(v)?))
        })
        .collect()
}

/// Decodes `%XX` escapes and `+` (a space) of a query component.
pub fn percent_decode(s: &str) -> Result<String, ApiError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| ApiError::bad(format!("bad %-escape in the query `{s}`")))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| ApiError::bad(format!("the query `{s}` is not UTF-8")))
}

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

fn route(app: &model::App, sessions: &play::Sessions, req: &Incoming) -> Reply {
    let result = match (req.method.as_str(), req.path.as_str()) {
        ("GET" | "HEAD", "/" | "/index.html") => {
            return Reply::asset(INDEX_HTML, "text/html; charset=utf-8");
        }
        ("GET" | "HEAD", "/app.js") => {
            return Reply::asset(APP_JS, "text/javascript; charset=utf-8");
        }
        ("GET" | "HEAD", "/style.css") => {
            return Reply::asset(STYLE_CSS, "text/css; charset=utf-8");
        }
        ("GET", "/api/models") => Ok(app.models_json()),
        ("GET", "/api/chart") => app.chart(req),
        ("GET", "/api/table") => app.table(req),
        ("GET", "/api/run") => app.run_view(req),
        ("POST", "/api/play/new") => sessions.play_new(app, req),
        ("POST", "/api/play/act") => sessions.play_act(app, req),
        ("POST", "/api/play/next") => sessions.play_next(app, req),
        ("GET", "/api/play/state") => sessions.play_state(app, req),
        ("GET", "/api/play/history") => {
            return sessions.play_history(app, req).unwrap_or_else(Into::into);
        }
        (_, p) if KNOWN_PATHS.contains(&p) => Err(ApiError {
            status: 405,
            message: format!("{} is not allowed on {p}", req.method),
        }),
        (_, p) => Err(ApiError::not_found(format!(
            "no such page or endpoint: {p}"
        ))),
    };
    match result {
        Ok(v) => Reply::json(v),
        Err(e) => e.into(),
    }
}

const KNOWN_PATHS: &[&str] = &[
    "/",
    "/index.html",
    "/app.js",
    "/style.css",
    "/api/models",
    "/api/chart",
    "/api/table",
    "/api/run",
    "/api/play/new",
    "/api/play/act",
    "/api/play/next",
    "/api/play/state",
    "/api/play/history",
];
