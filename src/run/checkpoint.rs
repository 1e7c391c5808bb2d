//! Checkpoint files: a magic tag, a JSON header, raw little-endian `f64` arrays and a checksum,
//! written atomically. Reading validates everything and names the file in every error.

use crate::cfr::{SolverSpec, SolverState};
use serde::{Deserialize, Serialize};
use std::path::Path;

const MAGIC: &[u8; 8] = b"ARMACCK1";

/// Errors while reading a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot read checkpoint {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("checkpoint {path} is corrupt or not an armac checkpoint: {reason}")]
    Corrupt { path: String, reason: String },
    #[error("checkpoint {path} does not match this run: {reason}")]
    Mismatch { path: String, reason: String },
}

/// What a tabular checkpoint records besides the arrays.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TabularHeader {
    pub kind: String,
    pub game: String,
    pub spec: SolverSpec,
    pub iteration: u64,
    /// Wall-clock seconds spent in the run up to the checkpoint (summed over resumes).
    pub elapsed_seconds: f64,
    pub lengths: [usize; 2],
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Writes a tabular solver checkpoint atomically.
pub fn save_tabular(
    path: &Path,
    header: &TabularHeader,
    state: &SolverState,
) -> std::io::Result<()> {
    let head = serde_json::to_vec(header).expect("header serialisation cannot fail");
    let mut buf =
        Vec::with_capacity(16 + head.len() + 8 * 6 * header.lengths[0].max(header.lengths[1]));
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&(head.len() as u64).to_le_bytes());
    buf.extend_from_slice(&head);
    for arrays in [&state.regrets, &state.cumulative_policy, &state.current] {
        for a in arrays.iter() {
            for x in a {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    let sum = fnv1a(&buf);
    buf.extend_from_slice(&sum.to_le_bytes());
    super::write_atomic(path, &buf)
}

/// Reads a tabular checkpoint, checking magic, checksum and array lengths.
pub fn load_tabular(path: &Path) -> Result<(TabularHeader, SolverState), CheckpointError> {
    let p = path.display().to_string();
    let corrupt = |reason: &str| CheckpointError::Corrupt {
        path: p.clone(),
        reason: reason.to_string(),
    };
    let buf = std::fs::read(path).map_err(|source| CheckpointError::Io {
        path: p.clone(),
        source,
    })?;
    if buf.len() < 24 || &buf[..8] != MAGIC {
        return Err(corrupt("bad magic"));
    }
    let (body, tail) = buf.split_at(buf.len() - 8);
    if fnv1a(body) != u64::from_le_bytes(tail.try_into().unwrap()) {
        return Err(corrupt("checksum mismatch (truncated or modified file)"));
    }
    let hlen = u64::from_le_bytes(body[8..16].try_into().unwrap()) as usize;
    if 16 + hlen > body.len() {
        return Err(corrupt("header length out of range"));
    }
    let header: TabularHeader = serde_json::from_slice(&body[16..16 + hlen])
        .map_err(|e| corrupt(&format!("bad header: {e}")))?;
    if header.kind != "tabular" {
        return Err(corrupt(&format!(
            "kind `{}` is not a tabular checkpoint",
            header.kind
        )));
    }
    let data = &body[16 + hlen..];
    let [n0, n1] = header.lengths;
    if data.len() != 8 * 3 * (n0 + n1) {
        return Err(corrupt("array section has the wrong size"));
    }
    let mut floats = data
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()));
    let mut take = |n: usize| -> Vec<f64> { floats.by_ref().take(n).collect() };
    let regrets = [take(n0), take(n1)];
    let cumulative_policy = [take(n0), take(n1)];
    let current = [take(n0), take(n1)];
    Ok((
        header.clone(),
        SolverState {
            iteration: header.iteration,
            regrets,
            cumulative_policy,
            current,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption_detection() {
        let dir = std::env::temp_dir().join(format!("armac-ckpt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.bin");
        let state = SolverState {
            iteration: 7,
            regrets: [vec![1.0, -2.0], vec![0.5]],
            cumulative_policy: [vec![3.0, 4.0], vec![1.0]],
            current: [vec![0.25, 0.75], vec![1.0]],
        };
        let header = TabularHeader {
            kind: "tabular".into(),
            game: "kuhn_poker".into(),
            spec: SolverSpec::named("cfr").unwrap(),
            iteration: 7,
            elapsed_seconds: 1.5,
            lengths: [2, 1],
        };
        save_tabular(&path, &header, &state).unwrap();
        let (h, s) = load_tabular(&path).unwrap();
        assert_eq!((h, s), (header, state));
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 12] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = load_tabular(&path).unwrap_err().to_string();
        assert!(e.contains("checksum") && e.contains("c.bin"), "{e}");
        std::fs::write(&path, b"hello").unwrap();
        assert!(
            load_tabular(&path)
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
