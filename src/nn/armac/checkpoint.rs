//! Files: model bytes, atomic multi-file writes, and the checksummed checkpoint metadata.

use super::config::ArmacNetConfig;
use super::config::NnError;
use super::config::SnapshotPrecision;
use super::net::ArmacNet;
use burn::module::Module;
use burn::module::Param;
use burn::store::ModuleRecord;
use burn::tensor::Bytes;
use burn::tensor::Tensor;
use serde::Deserialize;
use serde::Serialize;
use std::path::Path;
use std::path::PathBuf;

/// [`crate::util::write_all_atomic`] with the network layer's error type.
pub(crate) fn write_all_atomic(files: &[(PathBuf, Vec<u8>)]) -> Result<(), NnError> {
    crate::util::write_all_atomic(files).map_err(|e| NnError::Io {
        op: e.op,
        path: e.path,
        source: e.source,
    })
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, NnError> {
    std::fs::read(path).map_err(|source| NnError::Io {
        op: "cannot read",
        path: path.to_path_buf(),
        source,
    })
}

pub(super) fn model_bytes(model: &ArmacNet) -> Result<Vec<u8>, NnError> {
    let bytes = model
        .clone()
        .into_record()
        .into_bytes()
        .map_err(|e| NnError::Serialize {
            what: "the model",
            msg: e.to_string(),
        })?;
    Ok(bytes.to_vec())
}

/// Applies model-file `bytes` (read from `path`, named in errors) to `template`.
pub(super) fn load_model_bytes(
    template: ArmacNet,
    path: &Path,
    bytes: Vec<u8>,
) -> Result<ArmacNet, NnError> {
    // Half-precision snapshot files are cast to the module's f32 as they load.
    let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(bytes))
        .map_err(|e| NnError::Corrupt {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?
        .cast_to_module_dtype();
    template
        .try_load_record(record)
        .map_err(|e| NnError::Mismatch {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })
}

#[derive(Serialize, Deserialize)]
pub(super) struct CheckpointMeta {
    pub(super) format: u32,
    pub(super) config: ArmacNetConfig,
    pub(super) steps: u64,
    /// Length and FNV-1a hash of the model file.
    pub(super) model_file: FileCheck,
    /// Length and FNV-1a hash of the optimizer file.
    pub(super) optimizer_file: FileCheck,
    /// The Polyak average's decay and file check (absent when averaging is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ema: Option<EmaMeta>,
}

/// The Polyak average in a learner checkpoint.
#[derive(Serialize, Deserialize, PartialEq, Debug)]
pub(super) struct EmaMeta {
    pub(super) decay: f64,
    pub(super) file: FileCheck,
}

/// Size and content hash of a checkpoint file, recorded in the metadata so that a truncated or
/// altered file is caught even where its own format would not notice.
#[derive(Serialize, Deserialize, PartialEq, Debug)]
pub(crate) struct FileCheck {
    pub(super) len: u64,
    pub(super) fnv1a: String,
}

impl FileCheck {
    pub(crate) fn of(bytes: &[u8]) -> Self {
        let h = crate::util::fnv1a(bytes);
        Self {
            len: bytes.len() as u64,
            fnv1a: format!("{h:016x}"),
        }
    }

    pub(crate) fn verify(&self, path: &Path, bytes: &[u8]) -> Result<(), NnError> {
        let got = Self::of(bytes);
        if got == *self {
            Ok(())
        } else {
            Err(NnError::Corrupt {
                path: path.to_path_buf(),
                msg: format!(
                    "{} bytes with hash {}, but the checkpoint metadata recorded {} bytes with \
                     hash {} (truncated or overwritten)",
                    got.len, got.fnv1a, self.len, self.fnv1a
                ),
            })
        }
    }
}

/// Collects every float parameter of a module, flattened, in visiting order.
pub(super) struct CollectFloats(pub(super) Vec<Tensor<1>>);

impl burn::module::ModuleVisitor for CollectFloats {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let t = param.val();
        let n = t.shape().num_elements();
        self.0.push(t.reshape([n]));
    }
}

/// Moves every float parameter towards the matching one of [`CollectFloats`] (same module
/// structure, same order): `p ← keep·p + (1 − keep)·q`.
pub(super) struct BlendFloats {
    pub(super) other: std::vec::IntoIter<Tensor<1>>,
    pub(super) keep: f64,
}

impl burn::module::ModuleMapper for BlendFloats {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let q = self.other.next().expect("modules of the same structure");
        let keep = self.keep;
        param.map(|p| {
            let dims = p.dims();
            p.mul_scalar(keep) + q.reshape(dims).mul_scalar(1.0 - keep)
        })
    }
}

/// Casts every float parameter of a module to one dtype (a [`burn::module::ModuleMapper`]).
pub(crate) struct CastFloats(pub(crate) burn::tensor::FloatDType);

impl burn::module::ModuleMapper for CastFloats {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let dtype = self.0;
        param.map(|t| t.cast(dtype))
    }
}

/// `model` with every weight rounded to `precision` (and held in f32 again): the network that
/// a snapshot file of that precision loads back into, bit for bit.
pub(super) fn round_model(model: ArmacNet, precision: SnapshotPrecision) -> ArmacNet {
    use burn::tensor::FloatDType;
    match precision {
        SnapshotPrecision::F32 => model,
        SnapshotPrecision::F16 => model
            .map(&mut CastFloats(FloatDType::F16))
            .map(&mut CastFloats(FloatDType::F32)),
    }
}

/// The model file bytes of `model` with its weights stored in `precision` (loading casts them
/// back to the module's f32, see [`load_model_bytes`]).
pub(super) fn model_bytes_as(
    model: &ArmacNet,
    precision: SnapshotPrecision,
) -> Result<Vec<u8>, NnError> {
    match precision {
        SnapshotPrecision::F32 => model_bytes(model),
        SnapshotPrecision::F16 => model_bytes(
            &model
                .clone()
                .map(&mut CastFloats(burn::tensor::FloatDType::F16)),
        ),
    }
}
