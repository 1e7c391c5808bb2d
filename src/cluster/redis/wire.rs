//! What travels through the stream: entry fields, the encoding of actor messages, where an entry came from, and the audit trail.

use super::AUDIT_ENV;
use crate::rl::armac::actor::ActorMsg;
use crate::rl::armac::candidates::Candidate;
use crate::rl::armac::trajectory::decode_replay;
use crate::rl::armac::trajectory::encode_replay;
use ::redis::Value;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

/// A stream id `ms-seq` as a pair that orders like Redis orders ids.
pub(super) fn parse_id(id: &str) -> (u64, u64) {
    let (a, b) = id.split_once('-').unwrap_or((id, "0"));
    (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
}

pub(super) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

pub(super) fn text(v: &Value) -> Option<String> {
    bytes(v).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// Stream fields by name; `None` for pending entries deleted from the stream.
pub(super) type Fields = Option<HashMap<String, Vec<u8>>>;

pub(super) fn list(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        Value::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        _ => Vec::new(),
    }
}

/// One `[id, [field, value, ...]]` entry.
pub(super) fn entry(e: Value) -> Option<(String, Fields)> {
    let mut parts = list(e).into_iter();
    let id = text(&parts.next()?)?;
    let fields = match parts.next() {
        Some(Value::Nil) | None => None,
        Some(f) => Some(
            list(f)
                .chunks(2)
                .filter_map(|kv| Some((text(kv.first()?)?, bytes(kv.get(1)?)?.to_vec())))
                .collect(),
        ),
    };
    Some((id, fields))
}

/// The entries of an `XRANGE` reply.
pub fn range_entries(reply: Value) -> Vec<(String, Fields)> {
    list(reply).into_iter().filter_map(entry).collect()
}

/// The entries of an `XREADGROUP` reply on one stream: `[[stream, [entries]]]` (nil when
/// nothing arrived).
pub(super) fn read_entries(reply: Value) -> Vec<(String, Fields)> {
    let mut out = Vec::new();
    let streams = match reply {
        Value::Map(m) => m.into_iter().map(|(_, es)| es).collect::<Vec<_>>(),
        other => list(other)
            .into_iter()
            .filter_map(|s| list(s).into_iter().nth(1))
            .collect(),
    };
    for es in streams {
        out.extend(range_entries(es));
    }
    out
}

/// Encodes a message as stream fields.
pub(super) fn encode_msg(
    msg: &ActorMsg,
    info_len: usize,
    num_actions: usize,
) -> Vec<(&'static str, Vec<u8>)> {
    match msg {
        ActorMsg::Trajectory(t) => vec![
            ("k", b"t".to_vec()),
            ("e", t.epoch.to_string().into_bytes()),
            (
                "d",
                encode_replay(std::iter::once(&**t), info_len, num_actions),
            ),
        ],
        ActorMsg::CandidateReturn {
            epoch,
            candidate,
            total,
            count,
        } => vec![
            ("k", b"c".to_vec()),
            ("e", epoch.to_string().into_bytes()),
            ("c", candidate.id().to_string().into_bytes()),
            ("s", total.to_bits().to_string().into_bytes()),
            ("n", count.to_string().into_bytes()),
        ],
    }
}

/// Decodes stream fields; an error names what is wrong.
pub(super) fn decode_msg(
    f: &HashMap<String, Vec<u8>>,
    info_len: usize,
    num_actions: usize,
) -> Result<ActorMsg, String> {
    let num = |k: &str| -> Result<u64, String> {
        f.get(k)
            .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
            .ok_or_else(|| format!("field `{k}` missing or not a number"))
    };
    match f.get("k").map(|v| &v[..]) {
        Some(b"t") => {
            let d = f.get("d").ok_or("field `d` missing")?;
            let mut ts = decode_replay(d, info_len, num_actions).map_err(|e| e.to_string())?;
            match (ts.pop(), ts.is_empty()) {
                (Some(t), true) => Ok(ActorMsg::Trajectory(Box::new(t))),
                _ => Err("not exactly one trajectory".into()),
            }
        }
        Some(b"c") => Ok(ActorMsg::CandidateReturn {
            epoch: num("e")?,
            candidate: Candidate::from_id(num("c")? as usize).ok_or("unknown candidate")?,
            total: f64::from_bits(num("s")?),
            count: num("n")?,
        }),
        _ => Err("field `k` missing or unknown".into()),
    }
}

/// Appends lines to `$ARMAC_BROKER_AUDIT/<name>-<pid>.txt` when the variable is set.
pub(super) struct Audit(Option<std::io::BufWriter<std::fs::File>>);

impl Audit {
    pub(super) fn open(name: &str) -> Audit {
        Audit(std::env::var_os(AUDIT_ENV).and_then(|d| {
            let path = PathBuf::from(d).join(format!(
                "{name}-{}-{:?}.txt",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
                .map(std::io::BufWriter::new)
        }))
    }
    pub(super) fn line(&mut self, l: &str) {
        if let Some(w) = &mut self.0 {
            let _ = writeln!(w, "{l}");
        }
    }
    pub(super) fn flush(&mut self) {
        if let Some(w) = &mut self.0 {
            let _ = w.flush();
        }
    }
}

/// Where a stream entry came from: the `a` (actor name) and `u` (`<token>:<seq>`, one token per
/// actor thread, `seq` counting its entries) fields.
#[derive(Clone, Debug, Default)]
pub(super) struct Origin {
    pub(super) actor: Option<String>,
    pub(super) token: Option<(String, u64)>,
}

impl Origin {
    pub(super) fn of(f: &HashMap<String, Vec<u8>>) -> Origin {
        let s = |k: &str| f.get(k).map(|v| String::from_utf8_lossy(v).into_owned());
        let token = s("u").and_then(|u| {
            let (t, n) = u.rsplit_once(':')?;
            Some((t.to_string(), n.parse().ok()?))
        });
        Origin {
            actor: s("a"),
            token,
        }
    }
}

/// Whether an entry of `origin` repeats one already read, given the highest `seq` read per
/// token (`seen`, updated). An actor thread's entries reach the stream in `seq` order, and a
/// copy written by a retried `XADD` comes after its original.
pub(super) fn is_copy(seen: &mut HashMap<String, u64>, origin: &Origin) -> bool {
    let Some((token, seq)) = &origin.token else {
        return false;
    };
    match seen.get_mut(token) {
        Some(last) if *last >= *seq => true,
        Some(last) => {
            *last = *seq;
            false
        }
        None => {
            seen.insert(token.clone(), *seq);
            false
        }
    }
}
