//! The run directory's lock ([`RunLock`], with the holder's pid in [`LOCK_FILE`]) and the
//! check that a directory is a run directory.

use super::RunError;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The name of the lock file inside a run directory.
pub const LOCK_FILE: &str = "run.lock";

/// An exclusive advisory lock on a run directory, held for the life of a run: a second
/// process that tries to run in (or resume, or overwrite) the same directory gets
/// [`RunError::RunLocked`] naming the holder's pid. The lock is taken on the directory itself,
/// so taking it writes nothing; [`RunLock::record_pid`] writes the holder's pid to
/// [`LOCK_FILE`] once the run is committed to start (a failed resume leaves the directory as it
/// was). Released when dropped or when the process dies.
#[derive(Debug)]
pub struct RunLock {
    _dir: File,
    path: PathBuf,
}

impl RunLock {
    /// Locks `dir`, creating it (and only it) if `create` and it does not exist.
    pub fn acquire(dir: &Path, create: bool) -> Result<RunLock, RunError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| RunError::Io {
                what,
                path: dir.display().to_string(),
                source,
            }
        };
        if create {
            std::fs::create_dir_all(dir).map_err(io("run directory"))?;
        }
        let handle = File::open(dir).map_err(io("run directory"))?;
        match handle.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = lock_pid(dir)
                    .map(|pid| format!(" (pid {pid})"))
                    .unwrap_or_default();
                return Err(RunError::RunLocked {
                    dir: dir.display().to_string(),
                    holder,
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io("run directory lock")(e)),
        }
        // The pid is written through the path: never into a link's target or a FIFO.
        let path = dir.join(LOCK_FILE);
        let meta = std::fs::symlink_metadata(&path);
        if let Some(why) = meta.ok().as_ref().and_then(crate::util::irregular) {
            return Err(RunError::Usage(format!(
                "{} {why}: remove it",
                path.display()
            )));
        }
        Ok(RunLock { _dir: handle, path })
    }

    /// Writes this process's pid to the lock file (`armac-eval lbr --watch` reads it to see
    /// whether the run is still alive).
    pub fn record_pid(&self) -> Result<(), RunError> {
        std::fs::write(&self.path, format!("{}\n", std::process::id())).map_err(|source| {
            RunError::Io {
                what: "lock file".into(),
                path: self.path.display().to_string(),
                source,
            }
        })
    }
}

/// Checks that `dir` is a run directory by its `config.toml`, which must be a regular file
/// (a symbolic link, FIFO or device there is named and refused).
pub(crate) fn check_run_dir(dir: &Path) -> Result<(), RunError> {
    let path = dir.join("config.toml");
    match std::fs::symlink_metadata(&path) {
        Ok(m) => match crate::util::irregular(&m) {
            None => Ok(()),
            Some(why) => Err(RunError::Usage(format!(
                "{} {why}: not a run directory",
                path.display()
            ))),
        },
        Err(_) => Err(RunError::Usage(format!(
            "{} has no config.toml: not a run directory",
            dir.display()
        ))),
    }
}

/// The pid recorded in `dir`'s [`LOCK_FILE`], when that is a regular file holding one.
pub(crate) fn lock_pid(dir: &Path) -> Option<u32> {
    let bytes = crate::util::read_regular(&dir.join(LOCK_FILE), 64)
        .ok()?
        .ok()?;
    std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
}
