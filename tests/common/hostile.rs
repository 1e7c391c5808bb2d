//! Helpers of the hostile-input tests (`tests/hostile*.rs`): directory snapshots that compare
//! byte for byte, clean refusals, and files to damage.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every entry under `dir` (files with their bytes, symlinks with their targets), or `None`
/// when `dir` does not exist.
pub fn snapshot(dir: &Path) -> Option<BTreeMap<PathBuf, Vec<u8>>> {
    if std::fs::symlink_metadata(dir).is_err() {
        return None;
    }
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, target.into_os_string().into_encoded_bytes());
            } else if meta.is_dir() {
                out.insert(rel, b"<dir>".to_vec());
                stack.push(p);
            } else if meta.is_file() {
                out.insert(rel, std::fs::read(&p).unwrap());
            } else {
                // A FIFO or device: its type, never its content.
                out.insert(rel, format!("<{:?}>", meta.file_type()).into_bytes());
            }
        }
    }
    Some(out)
}

/// Runs `cmd`, which must fail cleanly: status 1 or 2, a first stderr line `error: ...`
/// containing every one of `needles`, and no panic or backtrace. Returns stderr.
pub fn refused(cmd: &mut Command, needles: &[&str], case: &str) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let first = err
        .lines()
        .find(|l| l.starts_with("error"))
        .unwrap_or_default();
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "{case}: expected exit 1 or 2, got {:?}\n{err}",
        out.status
    );
    assert!(
        !err.contains("panicked") && !err.contains("stack backtrace"),
        "{case}: panic\n{err}"
    );
    for n in needles {
        assert!(
            first.contains(n),
            "{case}: the error line should name {n:?}:\n{err}"
        );
    }
    err
}

/// GiB of memory available (`MemAvailable`), infinite where unknown.
pub fn available_gib() -> f64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let line = t
                .lines()
                .find(|l| l.starts_with("MemAvailable:"))?
                .to_string();
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(f64::INFINITY, |kib| kib / 1048576.0)
}

pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

/// Flips one byte in the middle of `path`.
pub fn flip(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let mut bad = bytes.clone();
    let i = bad.len() / 2;
    bad[i] ^= 0x20;
    std::fs::write(path, &bad).unwrap();
    bytes
}

pub fn copy_dir(from: &Path, to: &Path) {
    for (rel, bytes) in snapshot(from).unwrap() {
        let src = from.join(&rel);
        let dst = to.join(&rel);
        let meta = std::fs::symlink_metadata(&src).unwrap();
        if meta.file_type().is_symlink() {
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if meta.is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
        } else {
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::fs::write(&dst, bytes).unwrap();
        }
    }
}
