//! Helpers of the hostile-input tests (`tests/hostile*.rs`): directory snapshots that compare
//! byte for byte, clean refusals (also of commands that might hang), and files to damage.
//! Each file uses a subset.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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

/// The entries in which two snapshots differ (present in one only, or with other content).
pub fn changed(
    a: &Option<BTreeMap<PathBuf, Vec<u8>>>,
    b: &Option<BTreeMap<PathBuf, Vec<u8>>>,
) -> Vec<PathBuf> {
    let (empty_a, empty_b) = (BTreeMap::new(), BTreeMap::new());
    let (a, b) = (
        a.as_ref().unwrap_or(&empty_a),
        b.as_ref().unwrap_or(&empty_b),
    );
    let mut out: Vec<PathBuf> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect();
    out.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    out
}

/// Runs `cmd`, which must fail cleanly: status 1 or 2, a first stderr line `error: ...`
/// containing every one of `needles`, and no panic or backtrace. Returns stderr.
pub fn refused(cmd: &mut Command, needles: &[&str], case: &str) -> String {
    check_refused(&cmd.output().unwrap(), needles, case)
}

/// [`refused`] for a command that must end within `limit` (it is killed and the test fails
/// otherwise, so that a command that hangs fails the test instead of blocking it).
pub fn refused_within(cmd: &mut Command, limit: Duration, needles: &[&str], case: &str) -> String {
    check_refused(&output_within(cmd, limit, case), needles, case)
}

/// The checks of [`refused`] on a finished command's output.
pub fn check_refused(out: &Output, needles: &[&str], case: &str) -> String {
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

/// Runs `cmd` (stdin empty, output captured) to its end; if it is still running after
/// `limit`, kills it and fails the test naming `case`.
pub fn output_within(cmd: &mut Command, limit: Duration, case: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drained while it runs, so that a full pipe cannot stall it.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap();
            panic!(
                "{case}: still running after {limit:?} (killed)\n{}",
                String::from_utf8_lossy(&err)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// The files a model's manifest lists (paths relative to the model), and the first of them
/// at the top of the model folder.
pub fn listed_files(model: &Path) -> (Vec<String>, String) {
    let text = std::fs::read_to_string(model.join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    let listed: Vec<String> = manifest["files"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let top = listed.iter().find(|r| !r.contains('/')).unwrap().clone();
    (listed, top)
}

/// Makes a FIFO at `path`.
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
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
