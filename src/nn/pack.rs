//! Optimizer records in a canonical byte order. burn keeps an optimizer's per-parameter state
//! in a hash map whose iteration order changes from process to process, and writes the record's
//! tensors in that order: the same state gives different files. [`optimizer_bytes`] writes the
//! tensors sorted by name (the parameter's id, then the state's name), which reads back into
//! the same record.

use burn::optim::OptimizerRecord;

/// The bytes of `record` with its tensors in name order; the error is burn's message.
pub fn optimizer_bytes(record: OptimizerRecord) -> Result<Vec<u8>, String> {
    let bytes = record.into_bytes().map_err(|e| e.to_string())?;
    let reader = burn_pack::Reader::from_bytes(bytes).map_err(|e| e.to_string())?;
    let scalars = reader.scalars().clone();
    let metadata = reader.metadata().clone();
    let mut tensors = reader.into_tensors().map_err(|e| e.to_string())?;
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    let mut writer = burn_pack::Writer::new(tensors);
    for (k, v) in &scalars {
        writer = writer.with_scalar(k, *v);
    }
    for (k, v) in &metadata {
        writer = writer.with_metadata(k, v);
    }
    let mut out = vec![0u8; writer.size().map_err(|e| e.to_string())?];
    writer.write_into(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}
