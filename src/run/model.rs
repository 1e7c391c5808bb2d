//! Model directories (what `models/` ships and `armac-eval export-model` writes): an ARMAC
//! policy's checkpoint files (`checkpoint/state.json`, `checkpoint/config.toml`, the network of
//! its epoch under `reservoir/`), a `score.json`, and a `manifest.json` that records the length
//! and FNV-1a hash of every other file. Loaders verify every file against the manifest before
//! they read anything, and refuse files the manifest does not list.

use super::generation::{Generation, MANIFEST, POINTER};
use super::{RunError, io_err};
use crate::util::{FileSum, write_atomic};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `kind` of a model manifest.
pub const MODEL_KIND: &str = "armac-model";
const FORMAT: u32 = 1;
/// More files than any model holds: a manifest listing more is refused unread.
const MAX_FILES: usize = 4096;

/// The manifest of a model directory.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelManifest {
    pub kind: String,
    pub format: u32,
    /// Paths relative to the model directory, each with its sum.
    pub files: BTreeMap<String, FileSum>,
}

/// Files whose every byte was checked, and where to read them.
#[derive(Clone, Debug)]
pub struct Verified {
    /// The directory relative paths are resolved against.
    root: PathBuf,
    /// The checkpoint directory (`state.json`, `config.toml`), relative to `root`.
    checkpoint: PathBuf,
    files: BTreeMap<String, FileSum>,
}

impl Verified {
    /// The checkpoint's `state.json`, `config.toml`, ...: `name` in the checkpoint directory.
    pub fn checkpoint_file(&self, name: &str) -> Result<PathBuf, RunError> {
        self.file(&self.checkpoint.join(name).display().to_string())
    }

    /// A verified file by its path relative to the model (or run) directory; a file that was
    /// not verified is refused.
    pub fn file(&self, rel: &str) -> Result<PathBuf, RunError> {
        if self.files.contains_key(rel) {
            Ok(self.root.join(rel))
        } else {
            Err(RunError::Usage(format!(
                "{}: the manifest does not list {rel}, so it cannot be verified",
                self.root.display()
            )))
        }
    }

    /// The number of verified files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file was verified.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The model or run directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Every file under `dir` (recursively, symlinks refused) except the manifest itself, as
/// paths relative to `dir`.
fn list_files(dir: &Path) -> Result<Vec<String>, RunError> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let here = dir.join(&rel);
        for entry in
            std::fs::read_dir(&here).map_err(io_err("cannot read model directory", &here))?
        {
            let entry = entry.map_err(io_err("cannot read model directory", &here))?;
            let name = rel.join(entry.file_name());
            let kind = entry
                .file_type()
                .map_err(io_err("cannot read", &entry.path()))?;
            if kind.is_dir() {
                stack.push(name);
            } else if kind.is_file() {
                let text = name.to_str().ok_or_else(|| {
                    RunError::Usage(format!(
                        "{}: file name is not UTF-8",
                        entry.path().display()
                    ))
                })?;
                if text != MANIFEST {
                    out.push(text.to_string());
                }
            } else {
                return Err(RunError::Usage(format!(
                    "{}: a model directory holds plain files only",
                    entry.path().display()
                )));
            }
            if out.len() > MAX_FILES {
                return Err(RunError::Usage(format!(
                    "{}: more than {MAX_FILES} files; not a model directory",
                    dir.display()
                )));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Writes (or rewrites) `dir/manifest.json` over every other file of `dir`; returns it.
pub fn write_manifest(dir: &Path) -> Result<ModelManifest, RunError> {
    let mut files = BTreeMap::new();
    for rel in list_files(dir)? {
        let path = dir.join(&rel);
        let bytes = std::fs::read(&path).map_err(io_err("cannot read", &path))?;
        files.insert(rel, FileSum::of(&bytes));
    }
    let manifest = ModelManifest {
        kind: MODEL_KIND.into(),
        format: FORMAT,
        files,
    };
    let text = serde_json::to_vec_pretty(&manifest).expect("a manifest serialises");
    let path = dir.join(MANIFEST);
    write_atomic(&path, &text).map_err(io_err("cannot write", &path))?;
    Ok(manifest)
}

/// Whether `dir` is to be read as a model directory: it holds a `manifest.json` (of any
/// content) and is not a generation of a run directory, whose manifest is the generation's.
/// Nothing is verified: [`verify_model`] then names a manifest that is damaged.
pub fn is_model_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(MANIFEST)).is_ok() && !Generation::is_generation_dir(dir)
}

/// Reads `dir/manifest.json` and checks every file it lists, and that it lists every file of
/// the directory; errors name the file that differs.
pub fn verify_model(dir: &Path) -> Result<Verified, RunError> {
    let path = dir.join(MANIFEST);
    let corrupt = |reason: String| RunError::Usage(format!("{}: {reason}", path.display()));
    let bytes = crate::util::read_regular(&path, crate::util::MAX_MANIFEST_BYTES)
        .map_err(io_err("cannot read", &path))?
        .map_err(corrupt)?;
    let manifest: ModelManifest = serde_json::from_slice(&bytes).map_err(|e| {
        let value = serde_json::from_slice::<serde_json::Value>(&bytes).ok();
        if value.is_some_and(|v| v.get("kind").is_none() && v.get("step").is_some()) {
            corrupt(
                "the manifest of a run's checkpoint generation, not of a model: read a \
                 generation inside its run directory (<run>/checkpoint), or export it as a \
                 model with `armac-eval export-model`"
                    .into(),
            )
        } else {
            corrupt(format!("corrupt model manifest ({e})"))
        }
    })?;
    if manifest.kind != MODEL_KIND || manifest.format != FORMAT {
        return Err(corrupt(format!(
            "kind `{}` format {} (this build reads `{MODEL_KIND}` format {FORMAT})",
            manifest.kind, manifest.format
        )));
    }
    for (rel, sum) in &manifest.files {
        if rel.split('/').any(|c| c == ".." || c.is_empty()) {
            return Err(corrupt(format!(
                "lists `{rel}`, which leaves the model directory"
            )));
        }
        sum.verify(&dir.join(rel)).map_err(|e| {
            RunError::Usage(format!(
                "model {}: {e} (a file its {MANIFEST} lists)",
                dir.display()
            ))
        })?;
    }
    for rel in list_files(dir)? {
        if !manifest.files.contains_key(&rel) {
            return Err(corrupt(format!(
                "does not list {rel} (a file added to the model; rewrite the manifest with \
                 `armac-eval manifest --write {}` if it belongs there)",
                dir.display()
            )));
        }
    }
    Ok(Verified {
        root: dir.to_path_buf(),
        checkpoint: PathBuf::from("checkpoint"),
        files: manifest.files,
    })
}

/// The verified checkpoint `path` names: a model directory (its manifest), an ARMAC run
/// directory (its committed generation, read exactly as `--resume` reads it), or one of its
/// generations (`<run>/checkpoint`, `<run>/checkpoints/gen_<n>`).
pub fn verify_checkpoint(path: &Path) -> Result<Verified, RunError> {
    if is_model_dir(path) {
        return verify_model(path);
    }
    let context = || RunError::context(format!("checkpoint {}", path.display()));
    let (run_dir, generation) = if path.join(MANIFEST).is_file() {
        Generation::open_dir(path).map_err(context())?
    } else if path.join(POINTER).is_dir()
        && !path.join(POINTER).is_symlink()
        && !Generation::exists(path)
    {
        return Err(RunError::Usage(format!(
            "{} has no {MANIFEST}, so its files cannot be verified (if you trust them, record \
             them with `armac-eval manifest --write {}`)",
            path.display(),
            path.display()
        )));
    } else if path.join(POINTER).exists() || Generation::exists(path) {
        let g = Generation::open(path).map_err(context())?;
        if let Some(note) = g.fallback_note(path) {
            eprintln!("{note}");
        }
        (path.to_path_buf(), g)
    } else {
        return Err(RunError::Usage(format!(
            "{} is neither a model directory (no {MANIFEST}) nor a run directory with a \
             committed checkpoint",
            path.display()
        )));
    };
    let rel = generation
        .dir
        .strip_prefix(std::fs::canonicalize(&run_dir).unwrap_or(run_dir.clone()))
        .or_else(|_| generation.dir.strip_prefix(&run_dir))
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| generation.dir.clone());
    let mut files: BTreeMap<String, FileSum> = generation
        .manifest
        .files
        .iter()
        .map(|(k, v)| (rel.join(k).display().to_string(), v.clone()))
        .collect();
    files.extend(generation.manifest.shared.clone());
    Ok(Verified {
        root: run_dir,
        checkpoint: rel,
        files,
    })
}

/// The CVPN files of a Student of Games checkpoint, relative to its checkpoint directory.
const SOG_CVPN_FILES: [&str; 2] = ["cvpn/cvpn_meta.json", "cvpn/cvpn_model.bpk"];
const SOG_CVPN_META: &str = SOG_CVPN_FILES[0];
const SOG_CVPN_DIR: &str = "cvpn";

/// Writes the CVPN of the checkpoint directory `src` into `dst` as a policy: its weights in
/// half precision, without the optimizer's state.
fn export_cvpn(src: &Path, dst: &Path) -> Result<(), RunError> {
    use crate::nn::cvpn::Cvpn;
    let fail = |e: crate::nn::armac::NnError| RunError::Usage(format!("{}: {e}", src.display()));
    let cfg = Cvpn::recorded_config(src).map_err(fail)?;
    let device = crate::nn::select_device("flex").map_err(|e| RunError::Usage(e.to_string()))?;
    let net = Cvpn::load(src, &cfg, &device, 1e-3).map_err(fail)?;
    net.save_weights_f16(dst).map_err(fail)
}

/// Whether the verified checkpoint holds a Student of Games CVPN (a SoG run's or model's).
pub fn is_sog_checkpoint(verified: &Verified) -> bool {
    verified.checkpoint_file(SOG_CVPN_META).is_ok()
}

/// `None`, or the refusal of a verified checkpoint that a tabular or sampled solver wrote (its
/// state is `checkpoint.bin`, not a network) where a network or search policy was expected
/// (`path` as the user gave it); the refusal names the run's policy file, which is the
/// solver's average policy.
pub fn solver_checkpoint_refusal(path: &Path, verified: &Verified) -> Option<RunError> {
    verified
        .checkpoint_file(crate::run::tabular::CHECKPOINT_FILE)
        .ok()?;
    let policy = verified.root.join("policy.json");
    let hint = if policy.is_file() {
        format!(
            "its average policy is the policy file {}; use that file instead",
            policy.display()
        )
    } else {
        format!(
            "its average policy is written to {} when the run ends (finish it with \
             `armac-train --resume {}`), and that file is what to use",
            policy.display(),
            verified.root.display()
        )
    };
    Some(RunError::Usage(format!(
        "{} is a tabular solver run ([solver] in its config), not an ARMAC or Student of \
         Games checkpoint: {hint}",
        path.display()
    )))
}

/// The CVPN directory of a verified Student of Games model directory (`sog:DIR` with `DIR`
/// what [`export_model`] wrote from a SoG run), or `None` when `dir` is not a model directory.
/// Every file of the model is checked against its manifest first.
pub fn verified_sog_cvpn(dir: &Path) -> Result<Option<PathBuf>, RunError> {
    if !is_model_dir(dir) {
        return Ok(None);
    }
    let verified = verify_model(dir)?;
    let meta = verified.checkpoint_file(SOG_CVPN_META).map_err(|_| {
        RunError::Usage(format!(
            "{}: a model directory without a CVPN ({SOG_CVPN_META}), so not a Student of \
             Games model",
            dir.display()
        ))
    })?;
    Ok(meta.parent().map(Path::to_path_buf))
}

/// Copies the files a policy needs from the checkpoint `from` names (any form
/// [`verify_checkpoint`] takes; every file verified) into a new model directory `out` with its
/// manifest: `checkpoint/state.json`, `checkpoint/config.toml`, and the network: an ARMAC
/// run's `reservoir/net_<epoch>.bpk`, or a Student of Games run's `checkpoint/cvpn/`. `out`
/// must not exist; it appears complete or not at all.
pub fn export_model(from: &Path, out: &Path) -> Result<ModelManifest, RunError> {
    export_model_with(from, out, None)
}

/// [`export_model`], with `armac.play_threshold = t` written into the model's
/// `checkpoint/config.toml` when `play_threshold` is `Some(t)` (how the model plays; the
/// network is the same). Refused, before anything is written, for a value outside [0, 1)
/// and for a Student of Games checkpoint.
pub fn export_model_with(
    from: &Path,
    out: &Path,
    play_threshold: Option<f64>,
) -> Result<ModelManifest, RunError> {
    if let Some(t) = play_threshold
        && !(0.0..1.0).contains(&t)
    {
        return Err(RunError::Usage(format!(
            "--play-threshold {}: must be in [0, 1)",
            crate::util::check::short_number(t)
        )));
    }
    if out.exists() {
        return Err(RunError::Usage(format!(
            "--out {} exists; a model is written to a new directory",
            out.display()
        )));
    }
    let verified = verify_checkpoint(from)?;
    if let Some(refusal) = solver_checkpoint_refusal(from, &verified) {
        return Err(refusal);
    }
    let state_path = verified.checkpoint_file("state.json")?;
    let mut copies = vec![
        (state_path.clone(), "checkpoint/state.json".to_string()),
        (
            verified.checkpoint_file("config.toml")?,
            "checkpoint/config.toml".to_string(),
        ),
    ];
    // A Student of Games run: its value network, which the search policy loads.
    let mut sog_cvpn = None;
    if is_sog_checkpoint(&verified) {
        let meta = verified.checkpoint_file(SOG_CVPN_META)?;
        for file in SOG_CVPN_FILES {
            verified.checkpoint_file(file)?;
        }
        sog_cvpn = meta.parent().map(Path::to_path_buf);
        if play_threshold.is_some() {
            return Err(RunError::Usage(format!(
                "--play-threshold: {} holds a Student of Games search policy; the threshold \
                 applies to ARMAC networks",
                from.display()
            )));
        }
    } else {
        let state = crate::rl::armac::read_state(&state_path)?;
        let net = crate::rl::armac::residency::reservoir_rel(state.epoch);
        copies.push((verified.file(&net)?, net));
    }
    let name = out
        .file_name()
        .ok_or_else(|| RunError::Usage(format!("--out {}: no directory name", out.display())))?;
    let parent = out.parent().unwrap_or(Path::new("."));
    let tmp = parent.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        for (src, rel) in &copies {
            let dst = tmp.join(rel);
            let dir = dst.parent().expect("a relative path with a directory");
            std::fs::create_dir_all(dir).map_err(io_err("cannot create", dir))?;
            std::fs::copy(src, &dst).map_err(io_err("cannot copy to", &dst))?;
        }
        if let Some(src) = &sog_cvpn {
            export_cvpn(src, &tmp.join("checkpoint").join(SOG_CVPN_DIR))?;
        }
        if let Some(t) = play_threshold {
            set_play_threshold(&tmp.join("checkpoint").join("config.toml"), t)?;
        }
        let manifest = write_manifest(&tmp)?;
        std::fs::rename(&tmp, out).map_err(io_err("cannot create", out))?;
        Ok(manifest)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// Sets `armac.play_threshold = t` in the config file `path`, and checks that the result is
/// a valid ARMAC config.
fn set_play_threshold(path: &Path, t: f64) -> Result<(), RunError> {
    let text = std::fs::read_to_string(path).map_err(io_err("cannot read", path))?;
    let bad = |why: String| RunError::Usage(format!("{}: {why}", path.display()));
    let mut table: toml::Table = text.parse().map_err(|e| bad(format!("{e}")))?;
    let armac = table
        .get_mut("armac")
        .and_then(toml::Value::as_table_mut)
        .ok_or_else(|| bad("no [armac] section".into()))?;
    armac.insert("play_threshold".into(), toml::Value::Float(t));
    let text = toml::to_string(&table).map_err(|e| bad(format!("{e}")))?;
    write_atomic(path, text.as_bytes()).map_err(io_err("cannot write", path))?;
    let (config, _) = super::config::Config::load(&path.display().to_string(), &[])?;
    config.armac()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("armac-model-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("checkpoint")).unwrap();
        std::fs::create_dir_all(d.join("reservoir")).unwrap();
        std::fs::write(d.join("checkpoint/state.json"), b"{\"epoch\": 3}").unwrap();
        std::fs::write(d.join("reservoir/net_000003.bpk"), b"weights").unwrap();
        d
    }

    #[test]
    fn every_file_is_checked_and_named() {
        let d = model("verify");
        write_manifest(&d).unwrap();
        let v = verify_model(&d).unwrap();
        assert!(v.checkpoint_file("state.json").unwrap().is_file());
        assert!(v.checkpoint_file("config.toml").is_err());
        assert!(is_model_dir(&d));
        // One flipped byte.
        std::fs::write(d.join("reservoir/net_000003.bpk"), b"weightz").unwrap();
        let e = verify_model(&d).unwrap_err().to_string();
        assert!(e.contains("reservoir/net_000003.bpk"), "{e}");
        std::fs::write(d.join("reservoir/net_000003.bpk"), b"weights").unwrap();
        // An unlisted file.
        std::fs::write(d.join("extra.txt"), b"x").unwrap();
        let e = verify_model(&d).unwrap_err().to_string();
        assert!(e.contains("extra.txt"), "{e}");
        std::fs::remove_file(d.join("extra.txt")).unwrap();
        // A missing file.
        std::fs::remove_file(d.join("checkpoint/state.json")).unwrap();
        let e = verify_model(&d).unwrap_err().to_string();
        assert!(e.contains("checkpoint/state.json"), "{e}");
        // A damaged manifest.
        std::fs::write(d.join(MANIFEST), b"{\"kind\": 1").unwrap();
        let e = verify_model(&d).unwrap_err().to_string();
        assert!(e.contains("manifest.json"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_directory_without_manifest_or_checkpoint_is_refused() {
        let d = model("bare");
        let e = verify_checkpoint(&d).unwrap_err().to_string();
        assert!(e.contains("no manifest.json"), "{e}");
        std::fs::remove_dir_all(d.join("checkpoint")).unwrap();
        let e = verify_checkpoint(&d).unwrap_err().to_string();
        assert!(e.contains("neither a model directory"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
