//! The checkpoint protocol every algorithm uses: a checkpoint is a *generation*, a directory
//! `checkpoints/gen_<n>/` holding all of its files and a `manifest.json` (written last) with the
//! length and FNV-1a hash of each of them and of the shared files it references (ARMAC's
//! reservoir networks under `reservoir/`, which are immutable and shared by generations).
//! A generation is committed by switching one pointer: the symlink `checkpoint` is replaced by a
//! rename, so `checkpoint/...` always names the files of one complete generation. The previous
//! generation is removed only after the switch.
//!
//! Resuming ([`Generation::open`]) only reads: it follows the pointer (or, with no usable
//! pointer, takes the newest generation whose manifest verifies) and checks every file. The
//! caller removes incomplete generations ([`Generation::tidy`]) once everything has loaded.
//!
//! Fault injection: with `ARMAC_CRASH_AT=<k>` in the environment, the process exits (status
//! [`CRASH_EXIT`], no cleanup) just before the `k`-th file operation of the checkpoint writer
//! (counted from 1 over the life of the process), so tests can stop a run between any two
//! file operations.

use crate::util::write_synced;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The pointer to the committed generation (a symlink in the run directory).
pub const POINTER: &str = super::CHECKPOINT_LINK;
/// The directory that holds the generations.
pub const GENERATIONS: &str = "checkpoints";
/// The manifest of a generation, written after all its files.
pub const MANIFEST: &str = "manifest.json";
/// The exit status of a fault-injected stop.
pub const CRASH_EXIT: i32 = 86;
const FORMAT: u32 = 1;

/// Errors of the checkpoint protocol, each naming the file.
#[derive(Debug, thiserror::Error)]
pub enum GenerationError {
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("checkpoint file {} is corrupt: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "{} has no complete checkpoint (nothing to resume); start it again with --config ... --overwrite",
        dir.display()
    )]
    NoCheckpoint { dir: PathBuf },
}

pub use crate::util::FileSum;

impl FileSum {
    /// Reads `path` and checks it against `self`: a regular file only (no link, FIFO or
    /// device), its length compared before its content is read, and never more than the
    /// recorded length (capped at [`crate::util::MAX_VERIFIED_FILE_BYTES`]) plus one byte.
    pub fn verify(&self, path: &Path) -> Result<(), GenerationError> {
        let corrupt = |reason: String| GenerationError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        if self.len > crate::util::MAX_VERIFIED_FILE_BYTES {
            return Err(corrupt(format!(
                "the manifest records {} bytes, more than the {} a file may have",
                self.len,
                crate::util::MAX_VERIFIED_FILE_BYTES
            )));
        }
        let on_disk = std::fs::symlink_metadata(path).map(|m| m.len());
        if let Ok(len) = on_disk
            && len != self.len
            && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
        {
            return Err(corrupt(format!(
                "{len} bytes, the manifest records {} bytes (truncated or modified)",
                self.len
            )));
        }
        let bytes = crate::util::read_regular(path, self.len)
            .map_err(|source| GenerationError::Io {
                op: "cannot read checkpoint file",
                path: path.to_path_buf(),
                source,
            })?
            .map_err(corrupt)?;
        let got = FileSum::of(&bytes);
        if got != *self {
            return Err(GenerationError::Corrupt {
                path: path.to_path_buf(),
                reason: format!(
                    "{} bytes with hash {}, the manifest records {} bytes with hash {} \
                     (truncated or modified)",
                    got.len, got.fnv1a, self.len, self.fnv1a
                ),
            });
        }
        Ok(())
    }
}

/// What a generation holds: its step (iteration or epoch), its own files and the shared files
/// it references, each with its sum.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: u32,
    pub step: u64,
    /// Paths relative to the generation directory.
    pub files: BTreeMap<String, FileSum>,
    /// Paths relative to the run directory (e.g. `reservoir/net_000004.bpk`).
    pub shared: BTreeMap<String, FileSum>,
}

static FILE_OPS: AtomicU64 = AtomicU64::new(0);

/// Counts one file operation of the checkpoint writer; stops the process at the one named by
/// `ARMAC_CRASH_AT` (fault injection for crash tests).
pub fn fault_point() {
    static TARGET: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let target = *TARGET.get_or_init(|| {
        std::env::var("ARMAC_CRASH_AT")
            .ok()
            .and_then(|s| s.parse().ok())
    });
    let n = FILE_OPS.fetch_add(1, Ordering::SeqCst) + 1;
    if target == Some(n) {
        eprintln!("ARMAC_CRASH_AT={n}: stopping before checkpoint file operation {n}");
        std::process::exit(CRASH_EXIT);
    }
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> GenerationError {
    let path = path.to_path_buf();
    move |source| GenerationError::Io { op, path, source }
}

fn sync_dir(dir: &Path) -> Result<(), GenerationError> {
    fault_point();
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("cannot sync directory", dir))
}

/// The number of a generation directory name `gen_<n>`.
fn generation_number(name: &str) -> Option<u64> {
    name.strip_prefix("gen_")?.parse().ok()
}

/// Generation directories of `run_dir`, by number (ascending).
fn list_generations(run_dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(run_dir.join(GENERATIONS))
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let n = generation_number(e.file_name().to_str()?)?;
            Some((n, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Runs `load` (a reader of `run_dir`'s committed checkpoint) and, when it fails while the run
/// commits a newer checkpoint (the pointer names another generation after the attempt than
/// before it: the older one's files may have gone mid-read), runs it again, at most `retries`
/// more times. Any other failure, and every failure on a directory without a pointer (a model
/// directory), is returned as it is.
pub fn load_committed<T, E>(
    run_dir: &Path,
    retries: usize,
    mut load: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let mut left = retries;
    loop {
        let before = pointed(run_dir);
        match load() {
            Err(_) if left > 0 && before.is_some() && pointed(run_dir) != before => left -= 1,
            result => return result,
        }
    }
}

/// The generation the pointer names, if it is a symlink to `checkpoints/gen_<n>`.
fn pointed(run_dir: &Path) -> Option<u64> {
    let target = std::fs::read_link(run_dir.join(POINTER)).ok()?;
    let name = target.file_name()?.to_str()?;
    generation_number(name)
}

/// The complete generations of `run_dir` (their manifest, written after all their files, is
/// readable), oldest first, as `(step, directory)`; nothing is verified or changed.
pub fn complete_generations(run_dir: &Path) -> Vec<(u64, PathBuf)> {
    list_generations(run_dir)
        .into_iter()
        .filter_map(|(_, dir)| {
            let bytes =
                crate::util::read_regular(&dir.join(MANIFEST), crate::util::MAX_MANIFEST_BYTES)
                    .ok()?
                    .ok()?;
            let m: Manifest = serde_json::from_slice(&bytes).ok()?;
            Some((m.step, dir))
        })
        .collect()
}

/// Writes one generation. Files go straight into the fresh directory (nothing else reads it
/// before the commit); [`GenerationWriter::commit`] writes the manifest and switches the
/// pointer.
pub struct GenerationWriter {
    run_dir: PathBuf,
    number: u64,
    dir: PathBuf,
    manifest: Manifest,
}

impl GenerationWriter {
    /// Starts generation `max + 1` of `run_dir` for `step`.
    pub fn begin(run_dir: &Path, step: u64) -> Result<GenerationWriter, GenerationError> {
        let number = list_generations(run_dir)
            .last()
            .map(|(n, _)| n + 1)
            .unwrap_or(1)
            .max(pointed(run_dir).map(|n| n + 1).unwrap_or(1));
        let dir = run_dir.join(GENERATIONS).join(format!("gen_{number:08}"));
        fault_point();
        std::fs::create_dir_all(&dir).map_err(io("cannot create checkpoint directory", &dir))?;
        Ok(GenerationWriter {
            run_dir: run_dir.to_path_buf(),
            number,
            dir,
            manifest: Manifest {
                format: FORMAT,
                step,
                files: BTreeMap::new(),
                shared: BTreeMap::new(),
            },
        })
    }

    /// The generation directory (for writers that produce their own files; record them with
    /// [`Self::record`]).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `bytes` (fsynced) to `rel` inside the generation.
    pub fn add(&mut self, rel: &str, bytes: &[u8]) -> Result<(), GenerationError> {
        self.add_summed(rel, bytes, FileSum::of(bytes))
    }

    /// [`Self::add`] for a buffer written by [`crate::util::seal`], whose sum comes from its
    /// trailer ([`FileSum::of_sealed`]) rather than from a second pass over its bytes.
    pub fn add_sealed(&mut self, rel: &str, bytes: &[u8]) -> Result<(), GenerationError> {
        self.add_summed(rel, bytes, FileSum::of_sealed(bytes))
    }

    fn add_summed(&mut self, rel: &str, bytes: &[u8], sum: FileSum) -> Result<(), GenerationError> {
        let path = self.dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io("cannot create directory", parent))?;
        }
        fault_point();
        write_synced(&path, bytes).map_err(|e| GenerationError::Io {
            op: e.op,
            path: e.path,
            source: e.source,
        })?;
        self.manifest.files.insert(rel.to_string(), sum);
        Ok(())
    }

    /// Records (and fsyncs) every file under `rel`, written into the generation by someone else.
    pub fn record(&mut self, rel: &str) -> Result<(), GenerationError> {
        let path = self.dir.join(rel);
        if path.is_dir() {
            let mut names: Vec<String> = std::fs::read_dir(&path)
                .map_err(io("cannot list", &path))?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect();
            names.sort();
            for n in names {
                self.record(&format!("{rel}/{n}"))?;
            }
            return sync_dir(&path);
        }
        fault_point();
        let f = std::fs::File::open(&path).map_err(io("cannot open", &path))?;
        f.sync_all().map_err(io("cannot sync", &path))?;
        let bytes = std::fs::read(&path).map_err(io("cannot read", &path))?;
        self.manifest
            .files
            .insert(rel.to_string(), FileSum::of(&bytes));
        Ok(())
    }

    /// References a shared file of the run directory (`rel` from the run directory) with its sum.
    pub fn reference(&mut self, rel: &str, sum: FileSum) {
        self.manifest.shared.insert(rel.to_string(), sum);
    }

    /// Writes the manifest, fsyncs, switches the pointer to this generation and removes the
    /// older generations. Returns the committed manifest.
    pub fn commit(self) -> Result<Manifest, GenerationError> {
        let text = serde_json::to_vec_pretty(&self.manifest).expect("manifest serialises");
        let path = self.dir.join(MANIFEST);
        fault_point();
        write_synced(&path, &text).map_err(|e| GenerationError::Io {
            op: e.op,
            path: e.path,
            source: e.source,
        })?;
        sync_dir(&self.dir)?;
        sync_dir(&self.run_dir.join(GENERATIONS))?;
        let next = self.run_dir.join(format!("{POINTER}.next"));
        let _ = std::fs::remove_file(&next);
        let target = Path::new(GENERATIONS).join(format!("gen_{:08}", self.number));
        fault_point();
        std::os::unix::fs::symlink(&target, &next).map_err(io("cannot create pointer", &next))?;
        fault_point();
        let pointer = self.run_dir.join(POINTER);
        std::fs::rename(&next, &pointer).map_err(io("cannot switch pointer", &pointer))?;
        sync_dir(&self.run_dir)?;
        // A run replacing another (`--overwrite`) takes the old one's place at its first
        // committed checkpoint.
        super::replace::on_commit(&self.run_dir)
            .map_err(io("cannot move the new run into place of", &self.run_dir))?;
        for (n, dir) in list_generations(&self.run_dir) {
            if n != self.number {
                fault_point();
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        Ok(self.manifest)
    }
}

/// A committed, verified generation (read-only).
#[derive(Clone, Debug)]
pub struct Generation {
    pub number: u64,
    /// Its directory (read its files here).
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// Set when the pointer was dangling (it named a generation that is gone) and the newest
    /// complete generation was taken instead: the generation the pointer named.
    pub dangling_pointer: Option<u64>,
}

impl Generation {
    fn load(run_dir: &Path, number: u64) -> Result<Generation, GenerationError> {
        let dir = Generation::dir_of(run_dir, number);
        let path = dir.join(MANIFEST);
        let bytes = crate::util::read_regular(&path, crate::util::MAX_MANIFEST_BYTES)
            .map_err(io("cannot read checkpoint manifest", &path))?
            .map_err(|reason| GenerationError::Corrupt {
                path: path.clone(),
                reason,
            })?;
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| GenerationError::Corrupt {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if manifest.format != FORMAT {
            return Err(GenerationError::Corrupt {
                path,
                reason: format!("format {} (this build reads {FORMAT})", manifest.format),
            });
        }
        for (rel, sum) in &manifest.files {
            sum.verify(&dir.join(rel))?;
        }
        for (rel, sum) in &manifest.shared {
            sum.verify(&run_dir.join(rel))?;
        }
        Ok(Generation {
            number,
            dir,
            manifest,
            dangling_pointer: None,
        })
    }

    /// The committed generation of `run_dir`, fully verified, without changing anything: the
    /// one the pointer names; with no pointer (a stop before the first commit finished), the
    /// newest generation whose manifest and files verify.
    /// A dangling pointer (its generation directory is gone) counts as no pointer;
    /// [`Generation::dangling_pointer`] then records it.
    pub fn open(run_dir: &Path) -> Result<Generation, GenerationError> {
        let dangling = match pointed(run_dir) {
            Some(n) if Generation::dir_of(run_dir, n).is_dir() => {
                return Generation::load(run_dir, n);
            }
            other => other,
        };
        let mut first_err = None;
        for (n, _) in list_generations(run_dir).into_iter().rev() {
            match Generation::load(run_dir, n) {
                Ok(mut g) => {
                    g.dangling_pointer = dangling;
                    return Ok(g);
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(GenerationError::Corrupt { path, reason }) => {
                Err(GenerationError::Corrupt { path, reason })
            }
            _ => Err(GenerationError::NoCheckpoint {
                dir: run_dir.to_path_buf(),
            }),
        }
    }

    /// The directory of generation `number` of `run_dir`.
    fn dir_of(run_dir: &Path, number: u64) -> PathBuf {
        run_dir.join(GENERATIONS).join(format!("gen_{number:08}"))
    }

    /// The committed generation whose directory is `dir` (`<run>/checkpoint`, or
    /// `<run>/checkpoints/gen_<n>`), fully verified, and its run directory.
    pub fn open_dir(dir: &Path) -> Result<(PathBuf, Generation), GenerationError> {
        let real = std::fs::canonicalize(dir).map_err(io("cannot read checkpoint", dir))?;
        let number = real
            .file_name()
            .and_then(|n| generation_number(n.to_str()?));
        let run_dir = real
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == GENERATIONS))
            .and_then(Path::parent);
        match (number, run_dir) {
            (Some(n), Some(run)) => Ok((run.to_path_buf(), Generation::load(run, n)?)),
            _ => Err(GenerationError::Corrupt {
                path: dir.to_path_buf(),
                reason: format!(
                    "not a checkpoint generation (expected {POINTER} or {GENERATIONS}/gen_<n> \
                     of a run directory)"
                ),
            }),
        }
    }

    /// Whether `dir` is, by its path (after links), a generation directory of a run:
    /// `<run>/checkpoints/gen_<n>`, which `<run>/checkpoint` points to. Nothing is read.
    pub fn is_generation_dir(dir: &Path) -> bool {
        std::fs::canonicalize(dir).is_ok_and(|real| {
            real.file_name()
                .and_then(|n| generation_number(n.to_str()?))
                .is_some()
                && real
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == GENERATIONS)
        })
    }

    /// What to tell the user when [`Generation::open`] fell back from a dangling pointer.
    pub fn fallback_note(&self, run_dir: &Path) -> Option<String> {
        self.dangling_pointer.map(|n| {
            format!(
                "note: {}/{POINTER} names generation {n}, which is gone; using the newest \
                 complete generation, {} (step {})",
                run_dir.display(),
                self.number,
                self.manifest.step
            )
        })
    }

    /// Whether `run_dir` has any checkpoint at all (pointer or generation directory).
    pub fn exists(run_dir: &Path) -> bool {
        pointed(run_dir).is_some() || !list_generations(run_dir).is_empty()
    }

    /// Removes every other generation (incomplete ones left by a stop during a write), a stale
    /// pointer temporary, and points the pointer at this generation. Call only once the resume
    /// has loaded everything.
    pub fn tidy(&self, run_dir: &Path) -> Result<(), GenerationError> {
        for (n, dir) in list_generations(run_dir) {
            if n != self.number {
                std::fs::remove_dir_all(&dir).map_err(io("cannot remove", &dir))?;
            }
        }
        let _ = std::fs::remove_file(run_dir.join(format!("{POINTER}.next")));
        if pointed(run_dir) != Some(self.number) {
            let next = run_dir.join(format!("{POINTER}.next"));
            let target = Path::new(GENERATIONS).join(format!("gen_{:08}", self.number));
            std::os::unix::fs::symlink(&target, &next)
                .map_err(io("cannot create pointer", &next))?;
            let pointer = run_dir.join(POINTER);
            std::fs::rename(&next, &pointer).map_err(io("cannot switch pointer", &pointer))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("armac-gen-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write_gen(dir: &Path, step: u64, payload: &[u8]) -> Manifest {
        std::fs::create_dir_all(dir.join("reservoir")).unwrap();
        let shared = format!("reservoir/net_{step:06}.bpk");
        std::fs::write(dir.join(&shared), payload).unwrap();
        let mut w = GenerationWriter::begin(dir, step).unwrap();
        w.add("state.json", payload).unwrap();
        std::fs::create_dir_all(w.dir().join("learner")).unwrap();
        std::fs::write(w.dir().join("learner/model.bin"), b"weights").unwrap();
        w.record("learner").unwrap();
        w.reference(&shared, FileSum::of(payload));
        w.commit().unwrap()
    }

    /// A load that fails while the run commits a newer generation is run again; one that
    /// fails with the pointer unchanged, or on a directory without one, is not; a run that
    /// keeps committing gets `retries` more tries, no more.
    #[test]
    fn a_load_is_retried_only_when_the_run_commits_during_it() {
        let dir = tmp("retry");
        write_gen(&dir, 5, b"five");
        let read = |d: &Path| std::fs::read(d.join(POINTER).join("state.json"));
        let mut calls = 0;
        let got = load_committed(&dir, 3, || {
            calls += 1;
            if calls == 1 {
                write_gen(&dir, 6, b"six");
                return Err("the older generation went away");
            }
            Ok(read(&dir).unwrap())
        });
        assert_eq!((got, calls), (Ok(b"six".to_vec()), 2));
        let mut calls = 0;
        let got: Result<(), _> = load_committed(&dir, 3, || {
            calls += 1;
            Err("corrupt")
        });
        assert_eq!((got, calls), (Err("corrupt"), 1));
        let mut calls = 0;
        let got: Result<(), _> = load_committed(&dir, 3, || {
            calls += 1;
            write_gen(&dir, 6 + calls, b"next");
            Err("moved again")
        });
        assert_eq!((got, calls), (Err("moved again"), 4));
        let model = tmp("retry-model");
        let mut calls = 0;
        let got: Result<(), _> = load_committed(&model, 3, || {
            calls += 1;
            Err("no pointer")
        });
        assert_eq!((got, calls), (Err("no pointer"), 1));
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&model).unwrap();
    }

    #[test]
    fn a_dangling_pointer_falls_back_to_the_newest_complete_generation_and_says_so() {
        let dir = tmp("dangling");
        write_gen(&dir, 5, b"five");
        let pointer = dir.join(POINTER);
        std::fs::remove_file(&pointer).unwrap();
        std::os::unix::fs::symlink(Path::new(GENERATIONS).join("gen_00000099"), &pointer).unwrap();
        let g = Generation::open(&dir).unwrap();
        assert_eq!((g.manifest.step, g.dangling_pointer), (5, Some(99)));
        let note = g.fallback_note(&dir).unwrap();
        assert!(
            note.contains("generation 99") && note.contains("step 5"),
            "{note}"
        );
        // Opening changed nothing: the pointer still dangles until a resume tidies it.
        assert!(
            std::fs::read_link(&pointer)
                .unwrap()
                .ends_with("gen_00000099")
        );
        // Through the generation directory itself.
        let (run, h) = Generation::open_dir(&g.dir).unwrap();
        assert_eq!((h.number, h.dangling_pointer), (g.number, None));
        assert_eq!(run, std::fs::canonicalize(&dir).unwrap());
        assert!(Generation::open_dir(&dir).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn commit_switches_the_pointer_and_keeps_one_generation() {
        let dir = tmp("commit");
        assert!(!Generation::exists(&dir));
        assert!(matches!(
            Generation::open(&dir),
            Err(GenerationError::NoCheckpoint { .. })
        ));
        write_gen(&dir, 3, b"three");
        let m = write_gen(&dir, 7, b"seven");
        let g = Generation::open(&dir).unwrap();
        assert_eq!((g.number, g.manifest.step), (2, 7));
        assert_eq!(g.manifest, m);
        assert!(m.files.contains_key("learner/model.bin"));
        assert_eq!(
            std::fs::read(dir.join("checkpoint/state.json")).unwrap(),
            b"seven"
        );
        assert_eq!(list_generations(&dir).len(), 1);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_uncommitted_generation_is_ignored_and_tidied() {
        let dir = tmp("uncommitted");
        write_gen(&dir, 3, b"three");
        // A later generation stopped before its manifest: the pointer still names gen 1.
        let mut w = GenerationWriter::begin(&dir, 9).unwrap();
        w.add("state.json", b"nine").unwrap();
        drop(w);
        let g = Generation::open(&dir).unwrap();
        assert_eq!(g.manifest.step, 3);
        assert_eq!(list_generations(&dir).len(), 2);
        g.tidy(&dir).unwrap();
        assert_eq!(list_generations(&dir).len(), 1);
        // With the pointer gone (stopped before the first switch), the newest complete one wins.
        std::fs::remove_file(dir.join(POINTER)).unwrap();
        assert_eq!(Generation::open(&dir).unwrap().manifest.step, 3);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_modified_file_or_shared_file_is_named() {
        let dir = tmp("corrupt");
        write_gen(&dir, 4, b"four");
        std::fs::write(dir.join("checkpoint/state.json"), b"fivE").unwrap();
        let e = Generation::open(&dir).unwrap_err().to_string();
        assert!(e.contains("state.json") && e.contains("modified"), "{e}");
        std::fs::write(dir.join("checkpoint/state.json"), b"four").unwrap();
        Generation::open(&dir).unwrap();
        std::fs::write(dir.join("reservoir/net_000004.bpk"), b"fouR").unwrap();
        let e = Generation::open(&dir).unwrap_err().to_string();
        assert!(e.contains("net_000004.bpk"), "{e}");
        std::fs::remove_file(dir.join("reservoir/net_000004.bpk")).unwrap();
        let e = Generation::open(&dir).unwrap_err().to_string();
        assert!(e.contains("net_000004.bpk"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
