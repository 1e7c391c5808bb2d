//! What a new run may do with the directory named by `--out`, and `--overwrite`.
//!
//! Every run directory carries [`MARKER`], written when the run creates it. `--overwrite`
//! replaces only a directory that is recognisably a run (the marker, or the layout of a run
//! made before the marker existed: `config.toml` beside the `checkpoint` pointer), and never
//! follows a symbolic link. The new run is built in a hidden sibling directory; the old one
//! is swapped out only once the new run has committed its first checkpoint (or finished), so
//! a replacement that fails before then leaves the old run as it was.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{LOCK_FILE, RunError, RunLock};

/// The file that marks a directory as a run of this program.
pub const MARKER: &str = ".armac-run";
/// The marker's content.
const MARKER_TEXT: &str = "armac-train run directory (armac)\n";

/// Writes the marker into `dir`.
pub fn write_marker(dir: &Path) -> Result<(), RunError> {
    let path = dir.join(MARKER);
    std::fs::write(&path, MARKER_TEXT).map_err(super::io_err("run directory marker", &path))
}

/// What `--out` names before a new run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Nothing there.
    Absent,
    /// A directory holding nothing (or only a lock file).
    Empty,
    /// A run directory of this program.
    Run,
    /// Anything else, with the reason it is not taken as a run.
    Other(String),
}

/// Whether `name` in `dir` is a regular file (not following links).
fn is_file(dir: &Path, name: &str) -> bool {
    std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.file_type().is_file())
}

/// Looks at `out` without following a final symbolic link and without changing anything.
pub fn classify(out: &Path) -> Existing {
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Existing::Absent,
        Err(e) => return Existing::Other(format!("it cannot be inspected ({e})")),
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(out)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        return Existing::Other(format!(
            "it is a symbolic link{target}, which a run never follows; name a directory itself"
        ));
    }
    if !meta.is_dir() {
        return Existing::Other("it is not a directory".into());
    }
    let names: Vec<std::ffi::OsString> = match std::fs::read_dir(out) {
        Ok(it) => it
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .filter(|n| n != LOCK_FILE)
            .collect(),
        Err(e) => return Existing::Other(format!("it cannot be listed ({e})")),
    };
    if names.is_empty() {
        return Existing::Empty;
    }
    let marked = is_file(out, MARKER)
        && std::fs::read(out.join(MARKER)).is_ok_and(|b| b.starts_with(b"armac-train"));
    let legacy = is_file(out, "config.toml")
        && std::fs::symlink_metadata(out.join(super::CHECKPOINT_LINK))
            .is_ok_and(|m| m.file_type().is_symlink());
    if marked || legacy {
        Existing::Run
    } else {
        Existing::Other(format!(
            "it holds {} entr{} but is not a run of armac-train (no {MARKER} marker, and no \
             config.toml beside a checkpoint)",
            names.len(),
            if names.len() == 1 { "y" } else { "ies" }
        ))
    }
}

/// Replacements in progress in this process: (staging directory, directory it replaces,
/// swapped yet).
static STAGED: Mutex<Vec<(PathBuf, PathBuf, bool)>> = Mutex::new(Vec::new());

/// Called by the checkpoint writer once a generation of `run_dir` is committed: when
/// `run_dir` is the staging directory of a replacement not yet swapped, swaps it in now.
pub(crate) fn on_commit(run_dir: &Path) -> std::io::Result<()> {
    let mut staged = STAGED.lock().unwrap_or_else(|e| e.into_inner());
    for (staging, target, swapped) in staged.iter_mut() {
        if staging == run_dir && !*swapped {
            swap_in(staging, target)?;
            *swapped = true;
        }
    }
    Ok(())
}

/// The hidden sibling of `target` for name `tag`: `.<name>.armac-<tag>-<pid>-<n>`, the first
/// `n` that does not exist.
fn sibling(target: &Path, tag: &str) -> std::io::Result<PathBuf> {
    let name = target.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path has no last name",
        )
    })?;
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let pid = std::process::id();
    (0u32..1000)
        .map(|n| parent.join(format!(".{}.armac-{tag}-{pid}-{n}", name.to_string_lossy())))
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .ok_or_else(|| std::io::Error::other("no free sibling name"))
}

/// Removes the hidden siblings of `target` (`.<name>.armac-new-<pid>-<n>` and
/// `.<name>.armac-old-<pid>-<n>`) that a replacement killed with its process left behind:
/// those whose process is no longer alive. Returns the names removed.
pub fn sweep_stale_siblings(target: &Path) -> Vec<String> {
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.armac-");
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let entry = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = stale_pid(&entry, &prefix) else {
            continue;
        };
        if pid_alive(pid) {
            continue;
        }
        let path = parent.join(&entry);
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        let gone = if is_link {
            std::fs::remove_file(&path)
        } else {
            std::fs::remove_dir_all(&path)
        };
        if gone.is_ok() {
            removed.push(entry);
        }
    }
    removed
}

/// The pid in `entry` when it is `<prefix>new-<pid>-<n>` or `<prefix>old-<pid>-<n>`.
fn stale_pid(entry: &str, prefix: &str) -> Option<i32> {
    let rest = entry.strip_prefix(prefix)?;
    let rest = rest
        .strip_prefix("new-")
        .or_else(|| rest.strip_prefix("old-"))?;
    let (pid, n) = rest.split_once('-')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse::<i32>().ok().filter(|&p| p > 0)
}

/// Whether process `pid` exists (signal 0 reaches it, or exists but is not ours to signal).
fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Exchanges the directory entries `a` and `b` atomically where the file system allows it.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let b = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both paths are NUL-terminated strings that live across the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Puts the new run in `staging` at `target` and removes the old run: an atomic exchange
/// (or, where the file system has none, the old run renamed aside first and renamed back if
/// the new one cannot move in), then a link at `staging` to `target` so that paths the run
/// still holds keep working until [`finish`] removes it.
fn swap_in(staging: &Path, target: &Path) -> std::io::Result<()> {
    let aside = sibling(target, "old")?;
    if exchange(staging, target).is_ok() {
        std::fs::rename(staging, &aside)?;
    } else {
        std::fs::rename(target, &aside)?;
        if let Err(e) = std::fs::rename(staging, target) {
            let _ = std::fs::rename(&aside, target);
            return Err(e);
        }
    }
    let name = target.file_name().expect("a sibling was named");
    std::os::unix::fs::symlink(name, staging)?;
    if let Err(e) = std::fs::remove_dir_all(&aside) {
        eprintln!(
            "warning: the replaced run could not be removed completely ({e}); what is left is \
             in {}",
            aside.display()
        );
    }
    Ok(())
}

/// A replacement of the run in `target` by a new run built in `staging`.
pub struct Replacement {
    /// Where the new run is built (pass this to the run).
    pub staging: PathBuf,
    target: PathBuf,
    /// Held until the old run is gone, so no other process resumes it meanwhile.
    _old: RunLock,
}

impl Replacement {
    /// Locks the run in `target` (refused while another process holds it) and creates the
    /// empty staging directory beside it. Nothing in `target` changes.
    pub fn begin(target: &Path) -> Result<Replacement, RunError> {
        let old = RunLock::acquire(target, false)?;
        let staging = sibling(target, "new")
            .and_then(|p| std::fs::create_dir(&p).map(|()| p))
            .map_err(super::io_err("the directory of the new run", target))?;
        STAGED.lock().unwrap_or_else(|e| e.into_inner()).push((
            staging.clone(),
            target.to_path_buf(),
            false,
        ));
        Ok(Replacement {
            staging,
            target: target.to_path_buf(),
            _old: old,
        })
    }

    /// Ends the replacement after the run returned `result`. Not swapped yet: a run that
    /// succeeded is swapped in now; one that failed is removed, leaving the old run as it
    /// was. Then the link at the staging path goes and the summary names `target`.
    pub fn finish(
        self,
        result: Result<super::RunSummary, RunError>,
    ) -> Result<super::RunSummary, RunError> {
        let swapped = {
            let mut staged = STAGED.lock().unwrap_or_else(|e| e.into_inner());
            let i = staged.iter().position(|(s, _, _)| *s == self.staging);
            i.map(|i| staged.remove(i).2).unwrap_or(false)
        };
        let result = match result {
            Ok(summary) if !swapped => swap_in(&self.staging, &self.target)
                .map(|()| summary)
                .map_err(super::io_err("the replaced run directory", &self.target)),
            Err(e) if !swapped => {
                let _ = std::fs::remove_dir_all(&self.staging);
                return Err(e);
            }
            other => other,
        };
        if std::fs::symlink_metadata(&self.staging).is_ok_and(|m| m.file_type().is_symlink()) {
            let _ = std::fs::remove_file(&self.staging);
        }
        let mut summary = result?;
        if summary.run_dir == self.staging {
            summary.run_dir = self.target.clone();
            if is_file(&self.target, super::summary::SUMMARY) {
                super::summary::write_summary(&self.target, &summary)
                    .map_err(super::io_err("summary", &self.target))?;
            }
        }
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::{Existing, MARKER, Replacement, classify, on_commit, write_marker};
    use crate::run::{RunError, RunSummary};
    use std::path::{Path, PathBuf};

    fn fresh(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("armac-replace-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A run directory `dir` holding `file` with `text`.
    fn run_dir(dir: &Path, file: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        write_marker(dir).unwrap();
        std::fs::write(dir.join(file), text).unwrap();
    }

    fn summary(dir: &Path) -> RunSummary {
        RunSummary {
            run_dir: dir.to_path_buf(),
            game: "kuhn_poker".into(),
            algorithm: "cfr".into(),
            iterations: 1,
            nash_conv: f64::NAN,
            seconds: 0.0,
            stopped_early: false,
            acting_steps_per_second: None,
            peak_memory_mb: None,
            cpu_seconds: None,
            budget: None,
        }
    }

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn what_a_directory_is_taken_for() {
        let root = fresh("classify");
        assert_eq!(classify(&root.join("none")), Existing::Absent);
        let empty = root.join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert_eq!(classify(&empty), Existing::Empty);
        let run = root.join("run");
        run_dir(&run, "policy.json", "{}");
        assert_eq!(classify(&run), Existing::Run);
        // The layout of a run made before the marker: config.toml and the pointer.
        let legacy = root.join("legacy");
        std::fs::create_dir(&legacy).unwrap();
        std::fs::write(legacy.join("config.toml"), "game = \"kuhn_poker\"\n").unwrap();
        std::os::unix::fs::symlink("checkpoints/gen_00000001", legacy.join("checkpoint")).unwrap();
        assert_eq!(classify(&legacy), Existing::Run);
        let notes = root.join("notes");
        std::fs::create_dir(&notes).unwrap();
        std::fs::write(notes.join("config.toml"), "mine").unwrap();
        assert!(matches!(classify(&notes), Existing::Other(why) if why.contains(MARKER)));
        let link = root.join("link");
        std::os::unix::fs::symlink(&run, &link).unwrap();
        assert!(matches!(classify(&link), Existing::Other(why) if why.contains("symbolic link")));
        // A marker that is a link is no marker.
        let linked_marker = root.join("linked_marker");
        std::fs::create_dir(&linked_marker).unwrap();
        std::os::unix::fs::symlink(run.join(MARKER), linked_marker.join(MARKER)).unwrap();
        assert!(matches!(classify(&linked_marker), Existing::Other(_)));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_replacement_that_fails_before_its_first_checkpoint_leaves_the_old_run() {
        let root = fresh("fail");
        let target = root.join("run");
        run_dir(&target, "old.txt", "old");
        let r = Replacement::begin(&target).unwrap();
        std::fs::write(r.staging.join("new.txt"), "new").unwrap();
        let staging = r.staging.clone();
        let err = r.finish(Err(RunError::Usage("the run failed".into())));
        assert!(err.is_err());
        assert_eq!(
            std::fs::read_to_string(target.join("old.txt")).unwrap(),
            "old"
        );
        assert_eq!(names(&target), vec![MARKER.to_string(), "old.txt".into()]);
        assert!(std::fs::symlink_metadata(&staging).is_err(), "staging left");
        assert_eq!(names(&root), vec!["run".to_string()]);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_replacement_swaps_at_its_first_commit_and_keeps_its_paths_working() {
        let root = fresh("swap");
        let target = root.join("run");
        run_dir(&target, "old.txt", "old");
        let r = Replacement::begin(&target).unwrap();
        let staging = r.staging.clone();
        write_marker(&staging).unwrap();
        std::fs::write(staging.join("new.txt"), "new").unwrap();
        on_commit(&staging).unwrap();
        assert_eq!(names(&target), vec![MARKER.to_string(), "new.txt".into()]);
        // The run still writes through its own path, and a failure after the swap keeps the
        // new run.
        std::fs::write(staging.join("later.txt"), "later").unwrap();
        let _ = r.finish(Err(RunError::Usage("failed later".into())));
        assert_eq!(
            names(&target),
            vec![MARKER.to_string(), "later.txt".into(), "new.txt".into()]
        );
        assert_eq!(names(&root), vec!["run".to_string()]);
        // A run that finishes without a commit is swapped in at the end; its summary names
        // the target.
        let r = Replacement::begin(&target).unwrap();
        let staging = r.staging.clone();
        write_marker(&staging).unwrap();
        crate::run::summary::write_summary(&staging, &summary(&staging)).unwrap();
        let s = r.finish(Ok(summary(&staging))).unwrap();
        assert_eq!(s.run_dir, target);
        let on_disk = crate::run::summary::read_verified(&target)
            .unwrap()
            .unwrap();
        let on_disk: RunSummary = serde_json::from_slice(&on_disk).unwrap();
        assert_eq!(on_disk.run_dir, target);
        assert_eq!(names(&root), vec!["run".to_string()]);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A replacement killed with its process leaves its hidden sibling; the next run on the
    /// name removes it once that process is gone, and leaves a live one's and other names.
    #[test]
    fn stale_siblings_of_dead_processes_are_swept() {
        let root = fresh("sweep");
        let target = root.join("run");
        run_dir(&target, "old.txt", "old");
        // A pid that cannot be alive (above the kernel's limit) and this process's own.
        let dead = root.join(".run.armac-new-2147483600-0");
        run_dir(&dead, "partial.txt", "x");
        let dead_old = root.join(".run.armac-old-2147483601-3");
        std::fs::create_dir(&dead_old).unwrap();
        let live = root.join(format!(".run.armac-new-{}-0", std::process::id()));
        std::fs::create_dir(&live).unwrap();
        let other = root.join(".other.armac-new-2147483600-0");
        std::fs::create_dir(&other).unwrap();
        let odd = root.join(".run.armac-new-2147483600-x");
        std::fs::create_dir(&odd).unwrap();
        let mut removed = super::sweep_stale_siblings(&target);
        removed.sort();
        assert_eq!(
            removed,
            vec![
                ".run.armac-new-2147483600-0".to_string(),
                ".run.armac-old-2147483601-3".to_string()
            ]
        );
        assert!(live.is_dir() && other.is_dir() && odd.is_dir());
        assert_eq!(names(&target), vec![MARKER.to_string(), "old.txt".into()]);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Time limits out of range (what Python passes without the CLI's parser) are refused
    /// before a run starts, and the run it would replace is left alone.
    #[test]
    fn a_time_limit_out_of_range_is_refused_before_anything_changes() {
        let root = fresh("limits");
        let target = root.join("run");
        run_dir(&target, "old.txt", "old");
        for (max_seconds, max_cpu_seconds) in [(Some(1e20), None), (None, Some(f64::NAN))] {
            let opts = crate::run::TrainOptions {
                out: Some(target.clone()),
                max_seconds,
                max_cpu_seconds,
                overwrite: true,
                quiet: true,
                ..Default::default()
            };
            let config = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/kuhn_cfr.toml");
            let err = crate::run::train(Some(config), &[], &opts).unwrap_err();
            assert!(err.to_string().contains("seconds from 0 to 1e9"), "{err}");
            assert_eq!(names(&target), vec![MARKER.to_string(), "old.txt".into()]);
            assert_eq!(names(&root), vec!["run".to_string()]);
        }
        let _ = std::fs::remove_dir_all(&root);
    }
}
