//! The one TensorBoard writer of the crate, used by every algorithm: scalar summaries in an
//! event file (TFRecord framing from `tensorboard-rs`'s `RecordWriter`, the `Event` protocol
//! buffer encoded here).
//!
//! Writes are synchronous: when [`TbWriter::flush`] returns, every event logged before it is in
//! the file (in the operating system's hands), so a checkpoint committed afterwards never
//! covers a step whose points a crash could still lose. `tensorboard-rs`'s own `SummaryWriter`
//! hands events to a background thread, and its flush only queues a request: a run killed
//! right after a checkpoint lost points of steps before it, which resume (keeping events up to
//! the checkpoint's step) could not restore.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tensorboard_rs::record_writer::RecordWriter;

/// Writes scalar summaries into an event file in `dir`.
pub struct TbWriter {
    writer: RecordWriter<BufWriter<File>>,
    dir: PathBuf,
    /// The first write error, reported by [`TbWriter::flush`]'s caller through
    /// [`TbWriter::error`] (scalars are best effort and never stop a run).
    error: Option<std::io::Error>,
}

/// Distinguishes the event files a process opens within one second.
static FILE_COUNTER: AtomicU64 = AtomicU64::new(0);

fn wall_time() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited protocol-buffer field.
fn bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// `Event { wall_time = 1, step = 2, summary = 5 { value = 1 { tag = 1, simple_value = 2 } } }`.
fn scalar_event(tag: &str, value: f32, step: u64, wall: f64) -> Vec<u8> {
    let mut v = Vec::with_capacity(tag.len() + 8);
    bytes_field(&mut v, 1, tag.as_bytes());
    v.push((2 << 3) | 5);
    v.extend_from_slice(&value.to_le_bytes());
    let mut summary = Vec::with_capacity(v.len() + 2);
    bytes_field(&mut summary, 1, &v);
    let mut event = Vec::with_capacity(summary.len() + 24);
    event.push((1 << 3) | 1);
    event.extend_from_slice(&wall.to_le_bytes());
    event.push(2 << 3);
    varint(&mut event, step);
    bytes_field(&mut event, 5, &summary);
    event
}

impl TbWriter {
    /// Opens a new event file in `dir` (created if needed), starting with the file-version
    /// event TensorBoard expects.
    pub fn create(dir: &Path) -> std::io::Result<TbWriter> {
        std::fs::create_dir_all(dir)?;
        let wall = wall_time();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty() && !h.contains('/'))
            .unwrap_or_else(|| "localhost".into());
        let name = format!(
            "events.out.tfevents.{:010}.{host}.{}.{}",
            wall as u64,
            std::process::id(),
            FILE_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(dir.join(name))?;
        let mut tb = TbWriter {
            writer: RecordWriter::new(BufWriter::new(file)),
            dir: dir.to_path_buf(),
            error: None,
        };
        let mut event = vec![(1 << 3) | 1];
        event.extend_from_slice(&wall.to_le_bytes());
        bytes_field(&mut event, 3, b"brain.Event:2");
        tb.writer.write(&event)?;
        tb.writer.flush()?;
        Ok(tb)
    }

    /// Logs `value` under `tag` at `step`.
    pub fn scalar(&mut self, tag: &str, value: f64, step: u64) {
        let event = scalar_event(tag, value as f32, step, wall_time());
        if let Err(e) = self.writer.write(&event) {
            self.error.get_or_insert(e);
        }
    }

    /// Writes every event logged so far to the file before returning.
    pub fn flush(&mut self) {
        if let Err(e) = self.writer.flush() {
            self.error.get_or_insert(e);
        }
    }

    /// The first error met while writing events, if any.
    pub fn error(&self) -> Option<&std::io::Error> {
        self.error.as_ref()
    }

    /// The directory of the event file.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TbWriter {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The fields of a serialised protocol-buffer message as (number, wire type, payload):
/// varints and fixed-width values as their little-endian bytes, length-delimited fields as
/// their bytes. `None` when the bytes are not a message.
fn fields(mut d: &[u8]) -> Option<Vec<(u64, u8, &[u8])>> {
    fn varint(d: &mut &[u8]) -> Option<(u64, usize)> {
        let mut v = 0u64;
        for (i, &b) in d.iter().enumerate().take(10) {
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                *d = &d[i + 1..];
                return Some((v, i + 1));
            }
        }
        None
    }
    let mut out = Vec::new();
    while !d.is_empty() {
        let (key, _) = varint(&mut d)?;
        let wire = (key & 7) as u8;
        let n = match wire {
            0 => {
                let start = d;
                let (_, len) = varint(&mut d)?;
                out.push((key >> 3, wire, &start[..len]));
                continue;
            }
            1 => 8,
            2 => varint(&mut d)?.0 as usize,
            5 => 4,
            _ => return None,
        };
        if d.len() < n {
            return None;
        }
        out.push((key >> 3, wire, &d[..n]));
        d = &d[n..];
    }
    Some(out)
}

/// The scalar points (tag, step, value) of every event file in `dir`, in file order; for
/// tests and tools that check what a run logged.
pub fn read_scalars(dir: &Path) -> std::io::Result<Vec<(String, u64, f32)>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("events.out.tfevents"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f)?;
        // TFRecord framing: length (u64), its checksum (u32), data, its checksum (u32).
        let mut pos = 0;
        while pos + 12 <= bytes.len() {
            let len = u64::from_le_bytes(bytes[pos..pos + 8].try_into().expect("8 bytes"));
            let start = pos + 12;
            let Some(end) = start
                .checked_add(len as usize)
                .filter(|e| e + 4 <= bytes.len())
            else {
                break;
            };
            pos = end + 4;
            let Some(event) = fields(&bytes[start..end]) else {
                continue;
            };
            let mut step = 0;
            for &(n, w, v) in &event {
                if n == 2 && w == 0 {
                    step = v
                        .iter()
                        .enumerate()
                        .fold(0u64, |a, (i, b)| a | (u64::from(b & 0x7f) << (7 * i)));
                }
            }
            for &(n, w, summary) in &event {
                if n != 5 || w != 2 {
                    continue;
                }
                for (_, _, value) in fields(summary).unwrap_or_default() {
                    let (mut tag, mut x) = (None, None);
                    for (n, w, v) in fields(value).unwrap_or_default() {
                        match (n, w) {
                            (1, 2) => tag = Some(String::from_utf8_lossy(v).into_owned()),
                            (2, 5) => x = Some(f32::from_le_bytes(v.try_into().expect("4"))),
                            _ => {}
                        }
                    }
                    if let (Some(t), Some(x)) = (tag, x) {
                        out.push((t, step, x));
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_read_back_with_tags_steps_and_values() {
        let dir = std::env::temp_dir().join(format!("armac-tb-read-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        let mut tb = TbWriter::create(&dir).unwrap();
        tb.scalar("actors/a-1/acting_steps_per_second", 1234.5, 3);
        tb.scalar("loss", -0.25, 300);
        tb.flush();
        let got = read_scalars(&dir).unwrap();
        assert_eq!(
            got,
            vec![
                ("actors/a-1/acting_steps_per_second".to_string(), 3, 1234.5),
                ("loss".to_string(), 300, -0.25)
            ]
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The points written read back through the resume code's own record parser, in order,
    /// with their steps, and a flush leaves nothing behind in memory (the file holds them all).
    #[test]
    fn scalars_are_in_the_file_after_flush() {
        let dir = std::env::temp_dir().join(format!("armac-tb-sync-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        let mut tb = TbWriter::create(&dir).unwrap();
        tb.scalar("nash_conv", 0.5, 10);
        tb.scalar("nash_conv", 0.25, 300);
        tb.flush();
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let bytes = std::fs::read(&file).unwrap();
        // Cutting after step 10 keeps the version event and the first point only.
        drop(tb);
        let before = bytes.len();
        crate::run::resume::truncate_events(&dir, 10).unwrap();
        let after = std::fs::read(&file).unwrap().len();
        assert!(after < before && after > 0, "{after} vs {before}");
        crate::run::resume::truncate_events(&dir, 9).unwrap();
        let cut = std::fs::read(&file).unwrap().len();
        assert!(cut < after, "{cut} vs {after}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
