//! Checkpoint files: a magic tag, a JSON header, raw little-endian `f64` arrays and a checksum,
//! written atomically. Reading validates everything and names the file in every error.

use crate::cfr::SolverSnapshot;
use serde::{Deserialize, Serialize};
use std::path::Path;

const MAGIC: &[u8; 8] = b"ARMACCK2";

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

/// What a solver checkpoint records besides the arrays.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SolverHeader {
    pub kind: String,
    pub game: String,
    /// The solver's resolved settings (without the iteration budget), compared on resume.
    pub solver: String,
    pub iteration: u64,
    /// Wall-clock seconds spent in the run up to the checkpoint (summed over resumes).
    pub elapsed_seconds: f64,
    /// The solver's integer counters.
    pub counters: Vec<u64>,
    /// Length of each array that follows the header.
    pub lengths: Vec<usize>,
}

const KIND: &str = "solver";

/// Writes a solver checkpoint atomically; the header's `kind` and `lengths` are filled in here.
pub fn save_solver(
    path: &Path,
    header: &SolverHeader,
    snapshot: &SolverSnapshot,
) -> std::io::Result<()> {
    crate::util::write_atomic(path, &encode_solver(header, snapshot))
}

/// The bytes of a solver checkpoint file (see [`save_solver`]).
pub fn encode_solver(header: &SolverHeader, snapshot: &SolverSnapshot) -> Vec<u8> {
    let mut header = header.clone();
    header.kind = KIND.into();
    header.iteration = snapshot.iteration;
    header.counters = snapshot.counters.clone();
    header.lengths = snapshot.arrays.iter().map(Vec::len).collect();
    let head = serde_json::to_vec(&header).expect("header serialisation cannot fail");
    let total: usize = header.lengths.iter().sum();
    let mut buf = Vec::with_capacity(24 + head.len() + 8 * total);
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&(head.len() as u64).to_le_bytes());
    buf.extend_from_slice(&head);
    for a in &snapshot.arrays {
        for x in a {
            buf.extend_from_slice(&x.to_le_bytes());
        }
    }
    crate::util::seal(&mut buf);
    buf
}

/// Reads a solver checkpoint, checking magic, checksum and array lengths.
pub fn load_solver(path: &Path) -> Result<(SolverHeader, SolverSnapshot), CheckpointError> {
    let buf = std::fs::read(path).map_err(|source| CheckpointError::Io {
        path: path.display().to_string(),
        source,
    })?;
    decode_solver(path, &buf)
}

/// Parses the bytes of a solver checkpoint read from `path` (named in errors).
pub fn decode_solver(
    path: &Path,
    buf: &[u8],
) -> Result<(SolverHeader, SolverSnapshot), CheckpointError> {
    let p = path.display().to_string();
    let corrupt = |reason: &str| CheckpointError::Corrupt {
        path: p.clone(),
        reason: reason.to_string(),
    };
    let (_, body) =
        crate::util::unseal(buf, &[MAGIC], 24, "solver checkpoint").map_err(|e| corrupt(&e))?;
    let hlen = u64::from_le_bytes(body[8..16].try_into().unwrap()) as usize;
    if 16 + hlen > body.len() {
        return Err(corrupt("header length out of range"));
    }
    let header: SolverHeader = serde_json::from_slice(&body[16..16 + hlen])
        .map_err(|e| corrupt(&format!("bad header: {e}")))?;
    if header.kind != KIND {
        return Err(corrupt(&format!(
            "kind `{}` is not a solver checkpoint",
            header.kind
        )));
    }
    let data = &body[16 + hlen..];
    let total: usize = header.lengths.iter().sum();
    if data.len() != 8 * total {
        return Err(corrupt("array section has the wrong size"));
    }
    let mut floats = data
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()));
    let arrays = header
        .lengths
        .iter()
        .map(|&n| floats.by_ref().take(n).collect())
        .collect();
    Ok((
        header.clone(),
        SolverSnapshot {
            iteration: header.iteration,
            counters: header.counters.clone(),
            arrays,
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
        let snapshot = SolverSnapshot {
            iteration: 7,
            counters: vec![123],
            arrays: vec![vec![1.0, -2.0], vec![0.5], vec![], vec![3.0]],
        };
        let header = SolverHeader {
            kind: String::new(),
            game: "kuhn_poker".into(),
            solver: "{\"algorithm\":\"cfr\"}".into(),
            iteration: 0,
            elapsed_seconds: 1.5,
            counters: Vec::new(),
            lengths: Vec::new(),
        };
        save_solver(&path, &header, &snapshot).unwrap();
        let (h, s) = load_solver(&path).unwrap();
        assert_eq!(s, snapshot);
        assert_eq!(
            (h.game.as_str(), h.solver.as_str()),
            ("kuhn_poker", header.solver.as_str())
        );
        assert_eq!(
            (h.iteration, h.elapsed_seconds, h.lengths),
            (7, 1.5, vec![2, 1, 0, 1])
        );
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 12] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = load_solver(&path).unwrap_err().to_string();
        assert!(e.contains("checksum") && e.contains("c.bin"), "{e}");
        std::fs::write(&path, b"hello").unwrap();
        assert!(
            load_solver(&path)
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
