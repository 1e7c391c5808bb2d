//! Per-information-state sums of the memory's targets ([`MemoryTargets::InfosetMean`] and
//! [`MemoryTargets::InfosetMeanAll`]), and the checkpoint file that keeps the sums of the
//! latter (`memory_means.bin`), which the samples held cannot rebuild.

use super::{Memory, MemoryTargets, Sample, target};
use crate::rl::armac::trajectory::Reader;
use std::collections::HashMap;

/// Fixed-point scale of [`MeanTable`]'s sums.
pub(super) const MEAN_SCALE: f64 = (1u64 << 30) as f64;

/// Weighted sums of the targets per information state held.
#[derive(Clone, Debug, Default)]
pub(super) struct MeanTable {
    pub(super) map: HashMap<u128, MeanEntry>,
}

#[derive(Clone, Debug)]
pub(super) struct MeanEntry {
    /// `Σ w · target[a]` per action, in units of 2^-30.
    pub(super) sums: Vec<i128>,
    /// `Σ w`, same units.
    pub(super) weight: i128,
    /// Samples held at this information state.
    pub(super) count: u32,
    /// `sums / weight` as `f32` (empty while `weight ≤ 0`), refreshed by every change: rows
    /// are drawn far more often than samples come and go.
    pub(super) mean: Vec<f32>,
}

impl MeanTable {
    /// Adds (`sign = 1`) or removes (`sign = -1`) sample `s` of weight `w`.
    pub(super) fn change(&mut self, s: &Sample, w: f32, sign: i128) {
        let key = s.key;
        let t = target(&s.step);
        let wf = f64::from(w);
        let e = self.map.entry(key).or_insert_with(|| MeanEntry {
            sums: vec![0; t.len()],
            weight: 0,
            count: 0,
            mean: Vec::new(),
        });
        for (sum, &y) in e.sums.iter_mut().zip(t) {
            *sum += sign * (wf * f64::from(y) * MEAN_SCALE).round() as i128;
        }
        e.weight += sign * (wf * MEAN_SCALE).round() as i128;
        if sign > 0 {
            e.count += 1;
        } else {
            e.count -= 1;
            if e.count == 0 {
                self.map.remove(&key);
                return;
            }
        }
        e.refresh();
    }

    /// The weighted mean target of the state with key `key` (`None` if none is held).
    pub(super) fn mean_at(&self, key: u128) -> Option<&[f32]> {
        let e = self.map.get(&key)?;
        (e.weight > 0).then_some(&e.mean[..])
    }

    /// A sample at `s`'s state left the reservoir but its target stays in the sums
    /// ([`MemoryTargets::InfosetMeanAll`]); the entry goes when the last sample held there
    /// does.
    pub(super) fn release(&mut self, s: &Sample) {
        if let Some(e) = self.map.get_mut(&s.key) {
            e.count -= 1;
            if e.count == 0 {
                self.map.remove(&s.key);
            }
        }
    }

    /// Appends the table to `buf`: entry count, then per entry (in key order, so equal
    /// tables give equal bytes) its key, weight, sample count, target length and sums.
    fn encode_into(&self, buf: &mut Vec<u8>) {
        let mut keys: Vec<&u128> = self.map.keys().collect();
        keys.sort_unstable();
        buf.extend_from_slice(&(keys.len() as u64).to_le_bytes());
        for k in keys {
            let e = &self.map[k];
            buf.extend_from_slice(&k.to_le_bytes());
            buf.extend_from_slice(&e.weight.to_le_bytes());
            buf.extend_from_slice(&e.count.to_le_bytes());
            buf.extend_from_slice(&(e.sums.len() as u32).to_le_bytes());
            for x in &e.sums {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        }
    }

    /// Reads a table written by [`Self::encode_into`] at `r`'s position, advancing it.
    fn decode_from(r: &mut Reader) -> Result<MeanTable, String> {
        let n = r.u64()?;
        let mut map = HashMap::new();
        for _ in 0..n {
            let key = u128::from_le_bytes(r.take(16)?.try_into().unwrap());
            let weight = i128::from_le_bytes(r.take(16)?.try_into().unwrap());
            let count = r.u32()?;
            let len = r.u32()? as usize;
            let sums: Vec<i128> = r
                .take(len.checked_mul(16).ok_or("truncated")?)?
                .chunks_exact(16)
                .map(|c| i128::from_le_bytes(c.try_into().unwrap()))
                .collect();
            let mut entry = MeanEntry {
                sums,
                weight,
                count,
                mean: Vec::new(),
            };
            entry.refresh();
            if count == 0 || map.insert(key, entry).is_some() {
                return Err("an entry without samples or a repeated state".into());
            }
        }
        Ok(MeanTable { map })
    }
}

impl MeanEntry {
    /// Recomputes `mean` from the sums.
    fn refresh(&mut self) {
        let w = self.weight as f64;
        self.mean.clear();
        if w > 0.0 {
            self.mean
                .extend(self.sums.iter().map(|&x| (x as f64 / w) as f32));
        }
    }
}

/// Tag of [`Memory::encode_means`]'s bytes.
const MEANS_MAGIC: &[u8; 8] = b"ARMACMS1";

impl Memory {
    /// The per-state sums of both reservoirs as sealed bytes (a magic tag, the two tables)
    /// when rows regress on [`MemoryTargets::InfosetMeanAll`], whose sums the samples held
    /// cannot rebuild; `None` for the other targets.
    pub fn encode_means(&self) -> Option<Vec<u8>> {
        if self.targets != MemoryTargets::InfosetMeanAll {
            return None;
        }
        let tables = self.means.as_ref().expect("mean targets keep sums");
        let mut buf = MEANS_MAGIC.to_vec();
        for t in tables {
            t.encode_into(&mut buf);
        }
        crate::util::seal(&mut buf);
        Some(buf)
    }

    /// Replaces the sums with [`Self::encode_means`]'s, after [`Memory::decode`] restored the
    /// samples: every state must be held exactly as often as the file says (the error says
    /// what is wrong).
    pub fn decode_means(&mut self, bytes: &[u8]) -> Result<(), String> {
        let (_, body) = crate::util::unseal(bytes, &[MEANS_MAGIC], 16, "mean-target")?;
        let mut r = Reader { buf: body, pos: 8 };
        let regret = MeanTable::decode_from(&mut r)?;
        let policy = MeanTable::decode_from(&mut r)?;
        if r.pos != body.len() {
            return Err(format!("{} bytes after the tables", body.len() - r.pos));
        }
        let held = self.means.as_ref().ok_or("these settings keep no sums")?;
        for ((got, held), name) in [&regret, &policy]
            .into_iter()
            .zip(held)
            .zip(["regret", "average-policy"])
        {
            let agree = got.map.len() == held.map.len()
                && held
                    .map
                    .iter()
                    .all(|(k, e)| got.map.get(k).is_some_and(|g| g.count == e.count));
            if !agree {
                return Err(format!(
                    "its {name} sums do not match the samples the {name} memory holds"
                ));
            }
        }
        self.means = Some([regret, policy]);
        Ok(())
    }
}
