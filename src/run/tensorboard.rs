//! The one TensorBoard writer of the crate, used by every algorithm. It wraps `tensorboard-rs`
//! and calls only the parts of it that work (scalars); the directory is created here so that
//! failures become errors instead of the crate's internal panics.

use std::path::{Path, PathBuf};
use tensorboard_rs::summary_writer::SummaryWriter;

/// Writes scalar summaries into an event file in `dir`.
pub struct TbWriter {
    writer: SummaryWriter,
    dir: PathBuf,
}

impl TbWriter {
    /// Opens a new event file in `dir` (created if needed).
    pub fn create(dir: &Path) -> std::io::Result<TbWriter> {
        std::fs::create_dir_all(dir)?;
        // Probe writability so that the writer thread of tensorboard-rs cannot panic on it.
        let probe = dir.join(".tb_probe");
        std::fs::write(&probe, b"")?;
        std::fs::remove_file(&probe)?;
        Ok(TbWriter {
            writer: SummaryWriter::new(dir),
            dir: dir.to_path_buf(),
        })
    }

    /// Logs `value` under `tag` at `step`.
    pub fn scalar(&mut self, tag: &str, value: f64, step: u64) {
        self.writer.add_scalar(tag, value as f32, step as usize);
    }

    /// Pushes buffered events to disk.
    pub fn flush(&mut self) {
        self.writer.flush();
    }

    /// The directory of the event file.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TbWriter {
    fn drop(&mut self) {
        self.writer.flush();
    }
}
