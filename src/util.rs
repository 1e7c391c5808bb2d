//! Small shared helpers with no dependencies on the rest of the crate.

pub mod check;

/// SplitMix64: a tiny, fast, seedable generator for reproducible playouts and tests.
/// Not for cryptography.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[-bound, bound)` with 24 random bits (network initialisation, synthetic data).
    pub fn symmetric_f32(&mut self, bound: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        (2.0 * u - 1.0) * bound
    }

    /// `n` draws of [`SplitMix64::symmetric_f32`].
    pub fn symmetric_vec_f32(&mut self, n: usize, bound: f32) -> Vec<f32> {
        (0..n).map(|_| self.symmetric_f32(bound)).collect()
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// [`SplitMix64::weighted`] over the `n` weights `weight(0..n)`, computed on the fly (the
    /// same draw, bit for bit, as over a slice of them); returns the index and its weight.
    #[inline]
    pub fn weighted_by(&mut self, n: usize, weight: impl Fn(usize) -> f64) -> (usize, f64) {
        let total: f64 = (0..n).map(&weight).sum();
        let x = self.next_f64() * total;
        Self::scan(x, n, weight)
    }

    /// The index whose cumulative weight interval holds `x` (the last positive weight should
    /// rounding leave `x` past the end), and its weight.
    #[inline]
    fn scan(mut x: f64, n: usize, weight: impl Fn(usize) -> f64) -> (usize, f64) {
        for i in 0..n {
            let w = weight(i);
            if x < w {
                return (i, w);
            }
            x -= w;
        }
        let i = (0..n).rposition(|i| weight(i) > 0.0).unwrap_or(0);
        (i, weight(i))
    }

    /// [`SplitMix64::weighted_by`] for weights that form a probability vector (they sum to 1
    /// up to rounding): the draw is scaled by 1, not by the weights' sum, which saves the pass
    /// that adds them up. Should rounding leave the draw past the last weight, the last
    /// positive weight is taken, as in [`SplitMix64::weighted_by`]. Returns the index and its
    /// weight.
    #[inline]
    pub fn unit_weighted_by(&mut self, n: usize, weight: impl Fn(usize) -> f64) -> (usize, f64) {
        let x = self.next_f64();
        Self::scan(x, n, weight)
    }

    /// Index drawn from non-negative `weights` (need not be normalised; not all zero).
    pub fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.next_f64() * total;
        for (i, &w) in weights.iter().enumerate() {
            if x < w {
                return i;
            }
            x -= w;
        }
        weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
    }
}

/// Asks the CPU to start loading the cache line that holds `p` (a hint: it never faults, reads
/// nothing the program sees and changes no result). Sampled walks use it to overlap the cache
/// misses of data they will read a few steps later. A no-op off x86-64.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    // SAFETY: SSE is part of every x86-64 target, and a prefetch of any address, valid or
    // not, only hints the cache.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Makes glibc's allocator keep freed memory for reuse instead of handing it back to the
/// kernel at once. The training loop allocates and frees tensors of a few hundred kilobytes to
/// a few megabytes many times a second; by default glibc serves each of those with a fresh
/// `mmap` (or trims the heap after freeing it), so every step pays for page faults and page
/// zeroing in the kernel. Raising the mmap threshold to its largest value (32 MiB on 64-bit),
/// the trim threshold to 512 MiB and padding heap growth by 64 MiB keeps those pages mapped.
/// Only where memory comes from and goes back to changes; no computed value does. Call it first
/// thing in `main`, before other threads start. A no-op off glibc.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets allocator parameters; it is called before any other thread
    // exists, and a value glibc refuses leaves that parameter as it was.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

/// SplitMix64's finaliser: a bijective mix of the bits of `z`.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a hash: the checksum of checkpoint and replay files.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(0xcbf2_9ce4_8422_2325, bytes)
}

/// FNV-1a of `bytes` continued from the state `h` (the hash of what came before them).
fn fnv1a_from(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Appends the FNV-1a checksum of `buf` (magic tag and body) as an 8-byte little-endian
/// trailer: the last step of writing each of armac's binary files.
pub fn seal(buf: &mut Vec<u8>) {
    let sum = fnv1a(buf);
    buf.extend_from_slice(&sum.to_le_bytes());
}

/// Checks a file written with [`seal`]: it starts with one of the 8-byte `magics`, is at least
/// `min_len` bytes long (trailer included) and its trailer is the checksum of the rest. Returns
/// which magic it carries and the bytes before the trailer (magic included); the error names
/// the kind of file (`what`, e.g. "replay") and what is wrong with it.
pub fn unseal<'a>(
    bytes: &'a [u8],
    magics: &[&[u8; 8]],
    min_len: usize,
    what: &str,
) -> Result<(usize, &'a [u8]), String> {
    let tag = bytes.get(..8);
    let Some(which) = magics.iter().position(|m| tag == Some(&m[..])) else {
        return Err(format!("not an armac {what} file (bad magic)"));
    };
    if bytes.len() < min_len.max(16) {
        return Err(format!(
            "truncated armac {what} file ({} bytes)",
            bytes.len()
        ));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 8);
    if fnv1a(body).to_le_bytes() != tail {
        return Err("checksum mismatch (truncated or modified file)".into());
    }
    Ok((which, body))
}

/// A failed file operation of [`write_atomic`] / [`write_all_atomic`]: what was attempted, on
/// which path, and the OS error.
#[derive(Debug, thiserror::Error)]
#[error("{op} {}: {source}", path.display())]
pub struct FileOpError {
    /// `"cannot write"` or `"cannot rename into place"`.
    pub op: &'static str,
    pub path: std::path::PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl From<FileOpError> for std::io::Error {
    fn from(e: FileOpError) -> Self {
        std::io::Error::new(e.source.kind(), e.to_string())
    }
}

/// The temporary sibling `path` is written to before it is renamed into place.
fn tmp_sibling(path: &std::path::Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    path.with_file_name(name)
}

/// Creates (or truncates) `path`, writes `bytes` and fsyncs the file.
pub fn write_synced(path: &std::path::Path, bytes: &[u8]) -> Result<(), FileOpError> {
    use std::io::Write;
    let io = |source| FileOpError {
        op: "cannot write",
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::create(path).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)
}

/// Writes every `(path, bytes)` to a temporary sibling (fsynced), then renames them all into
/// place and fsyncs the directory, so a crash leaves either the old file or the complete new
/// one at each path, never a torn file. Temporary files are removed on failure.
pub fn write_all_atomic(files: &[(std::path::PathBuf, Vec<u8>)]) -> Result<(), FileOpError> {
    let tmps: Vec<std::path::PathBuf> = files.iter().map(|(p, _)| tmp_sibling(p)).collect();
    let result = (|| {
        for ((_, bytes), tmp) in files.iter().zip(&tmps) {
            write_synced(tmp, bytes)?;
        }
        for ((path, _), tmp) in files.iter().zip(&tmps) {
            std::fs::rename(tmp, path).map_err(|source| FileOpError {
                op: "cannot rename into place",
                path: path.clone(),
                source,
            })?;
        }
        if let Some(dir) = files.first().and_then(|(p, _)| p.parent()) {
            let dir = if dir.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                dir
            };
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    })();
    if result.is_err() {
        for tmp in &tmps {
            let _ = std::fs::remove_file(tmp);
        }
    }
    result
}

/// [`write_all_atomic`] of one file: readers see the old content or the new, never a torn one.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_all_atomic(&[(path.to_path_buf(), bytes.to_vec())]).map_err(Into::into)
}

/// A field of `/proc/self/status` in MiB (`VmRSS`, `VmHWM`, ...); `None` where the file or
/// the field does not exist (not Linux).
fn proc_status_mb(field: &str) -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line[field.len()..]
        .trim_start_matches(':')
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// CPU time the calling thread has run, in seconds (the first field of
/// `/proc/thread-self/schedstat`; `None` where that file does not exist). Unlike wall time it
/// does not grow while other processes hold the cores, so single-thread benchmarks on a shared
/// machine compare by it.
pub fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

/// The process's resident memory in MiB (Linux; `None` elsewhere).
pub fn resident_memory_mb() -> Option<f64> {
    proc_status_mb("VmRSS")
}

/// The process's peak resident memory so far in MiB (Linux; `None` elsewhere).
pub fn peak_memory_mb() -> Option<f64> {
    proc_status_mb("VmHWM")
}

/// Bytes of the regular files under `dir` (recursively, symlinks not followed); unreadable
/// entries count as empty.
pub fn dir_size(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Length and FNV-1a hash of a file (what checkpoint manifests and the broker's content ids
/// record).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct FileSum {
    pub len: u64,
    pub fnv1a: String,
}

impl FileSum {
    /// The sum of `bytes`.
    pub fn of(bytes: &[u8]) -> FileSum {
        FileSum {
            len: bytes.len() as u64,
            fnv1a: format!("{:016x}", fnv1a(bytes)),
        }
    }

    /// The sum of `bytes` written by [`seal`], without hashing them again: the trailer holds
    /// the hash of everything before it, so the hash of the whole file continues from there
    /// over the trailer's 8 bytes. Equal to [`Self::of`] for a sealed buffer (a buffer whose
    /// trailer is wrong gets a sum that its file will not match when read back).
    ///
    /// # Panics
    /// If `bytes` is shorter than a trailer.
    pub fn of_sealed(bytes: &[u8]) -> FileSum {
        let trailer = &bytes[bytes.len() - 8..];
        let body = u64::from_le_bytes(trailer.try_into().expect("8 bytes"));
        debug_assert_eq!(
            body,
            fnv1a(&bytes[..bytes.len() - 8]),
            "not a sealed buffer"
        );
        FileSum {
            len: bytes.len() as u64,
            fnv1a: format!("{:016x}", fnv1a_from(body, trailer)),
        }
    }
}

/// Most bytes one verified file (of a checkpoint or a model) may have.
pub const MAX_VERIFIED_FILE_BYTES: u64 = 64 << 30;

/// Most bytes a manifest (of a model or of a checkpoint generation) may have.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// Reads `path` when it is a regular file (not a symbolic link, FIFO, device or directory) of
/// at most `max` bytes: its type and length are checked on the opened file before anything is
/// read, the open neither follows a final link nor waits on a FIFO, and the read stops past
/// `max`. `Ok(Err(reason))`: the file is there but refused, and why.
pub fn read_regular(path: &std::path::Path, max: u64) -> std::io::Result<Result<Vec<u8>, String>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(why) = irregular(&std::fs::symlink_metadata(path)?) {
        return Ok(Err(why.into()));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(Err("is not a regular file".into()));
    }
    if meta.len() > max {
        return Ok(Err(format!(
            "has {} bytes, more than the {max} a file may have here",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Ok(Err(format!("grew past {max} bytes while it was read")));
    }
    Ok(Ok(bytes))
}

/// Why an entry of type `meta` (from `symlink_metadata`) is no regular file to read or
/// append to; `None` for a regular file.
pub fn irregular(meta: &std::fs::Metadata) -> Option<&'static str> {
    if meta.file_type().is_symlink() {
        Some("is a symbolic link, not a regular file")
    } else if !meta.is_file() {
        Some("is not a regular file (a directory, FIFO, socket or device)")
    } else {
        None
    }
}

/// Most bytes a run's log (`metrics.csv`, a TensorBoard event file) may have where it is read
/// whole (`--resume` cuts the logs back to the checkpoint's step in memory).
pub const MAX_LOG_BYTES: u64 = 4 << 30;

/// [`read_regular`] with a refusal as an error of kind `InvalidData` that names `path`; a
/// missing file stays `NotFound`.
pub fn read_regular_named(path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_regular(path, max)?.map_err(|why| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} {why}", path.display()),
        )
    })
}

/// Opens `path` for appending (creating a regular file when nothing is there) when it is a
/// regular file: a symbolic link, FIFO, socket, device or directory is refused with an error
/// of kind `InvalidData` naming it, and the open neither follows a final link nor waits on a
/// FIFO.
pub fn append_regular(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} {why}", path.display()),
        )
    };
    if let Some(why) = std::fs::symlink_metadata(path)
        .ok()
        .as_ref()
        .and_then(irregular)
    {
        return Err(refuse(why));
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(refuse("is not a regular file"));
    }
    Ok(file)
}

/// Removes stray temporary files (`*.tmp`, left by a stop during an atomic write) from `dir`.
pub fn remove_temporaries(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".tmp") && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_files_round_trip_and_name_what_is_wrong() {
        let mut buf = b"ARMACXX2".to_vec();
        buf.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        seal(&mut buf);
        assert_eq!(FileSum::of_sealed(&buf), FileSum::of(&buf));
        assert_eq!(buf.len(), 8 + 9 + 8);
        let magics: [&[u8; 8]; 2] = [b"ARMACXX2", b"ARMACXX1"];
        let (which, body) = unseal(&buf, &magics, 16, "test").unwrap();
        assert_eq!((which, body), (0, &buf[..17]));
        // The older tag is recognised as such.
        let mut old = b"ARMACXX1".to_vec();
        seal(&mut old);
        assert_eq!(unseal(&old, &magics, 16, "test").unwrap().0, 1);
        // Every single-byte change after the tag breaks the checksum.
        for i in 8..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x40;
            let e = unseal(&bad, &magics, 16, "test").unwrap_err();
            assert!(e.contains("checksum"), "byte {i}: {e}");
        }
        let e = unseal(&buf[..buf.len() - 1], &magics, 16, "test").unwrap_err();
        assert!(e.contains("checksum"), "{e}");
        let e = unseal(b"ARMACYY2rest of it", &magics, 16, "test").unwrap_err();
        assert!(e.contains("not an armac test file (bad magic)"), "{e}");
        let e = unseal(b"ARM", &magics, 16, "test").unwrap_err();
        assert!(e.contains("bad magic"), "{e}");
        let e = unseal(&buf, &magics, 40, "test").unwrap_err();
        assert!(e.contains("truncated armac test file (25 bytes)"), "{e}");
    }
}
