//! Trajectories produced by ARMAC's actors and consumed by its learner.
//!
//! A trajectory records every decision of one episode (chance steps are not stored: the critic
//! sees histories through both players' information-state tensors, so chance is part of the
//! environment's transition, as in the paper's footnote on augmented information states).

/// One decision point of an episode.
#[derive(Clone, Debug)]
pub struct Step {
    /// The player who acted.
    pub player: usize,
    /// Information-state tensors of player 0 and player 1 at this history (the critic's input;
    /// `info[player]` is the acting player's own input). Recurrent networks: both players'
    /// observation tensors at this decision (the episode's steps form the sequence).
    pub info: [Vec<f32>; 2],
    /// Legal actions, as a mask over the game's distinct actions.
    pub legal: Vec<bool>,
    /// The action taken.
    pub action: usize,
    /// At the learning player's decisions in learning episodes: the past network's advantages
    /// `q_j(h, a) − v_j(h)` for every action (zero on illegal ones), the mean-regret target.
    pub advantage: Option<Vec<f32>>,
    /// At the opponent's decisions in learning episodes: the policy `π^j(s)` it played, the
    /// average-policy target.
    pub played_policy: Option<Vec<f32>>,
    /// The learning player's behaviour reach `η_i^μ` before this decision: the product of the
    /// probabilities of its own earlier actions in the episode under the policy it sampled them
    /// from (1 at its first decision and in episodes without a learning player).
    pub reach: f32,
}

/// One finished episode.
#[derive(Clone, Debug)]
pub struct Trajectory {
    /// The epoch whose snapshots generated it.
    pub epoch: u64,
    /// The learning player `i` of Algorithm 1.
    pub learning_player: usize,
    /// `false` for episodes that only rank exploration candidates: they may train the critic but
    /// not the regret or policy heads.
    pub learning: bool,
    pub steps: Vec<Step>,
    /// Terminal returns of both players.
    pub returns: [f32; 2],
    /// Chance nodes whose outcome the episode sampled (with `armac.allin_runouts`, the node
    /// where the run-outs start is not one of them: it ends the episode).
    pub chance_nodes: u32,
}

impl Trajectory {
    /// Number of decisions.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// `true` for an episode without decisions.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The states the episode visited: its decisions, its chance nodes and the terminal (or
    /// the node its run-outs started from) — the "nodes touched" of the papers' budgets.
    pub fn nodes(&self) -> u64 {
        self.steps.len() as u64 + u64::from(self.chance_nodes) + 1
    }

    /// The decisions of the learning player in a learning episode (0 in the others).
    pub fn learning_decisions(&self) -> u64 {
        if !self.learning {
            return 0;
        }
        let p = self.learning_player;
        self.steps.iter().filter(|s| s.player == p).count() as u64
    }
}

const REPLAY_MAGIC: &[u8; 8] = b"ARMACRP3";
/// The second format (no chance-node count per trajectory; read as 0).
const REPLAY_MAGIC_V2: &[u8; 8] = b"ARMACRP2";
/// The first format (no behaviour reach per step; read as reach 1; no chance-node count).
const REPLAY_MAGIC_V1: &[u8; 8] = b"ARMACRP1";

fn put_f32s(buf: &mut Vec<u8>, xs: &[f32]) {
    for x in xs {
        buf.extend_from_slice(&x.to_le_bytes());
    }
}

/// Encodes trajectories (a replay memory) as bytes: a magic tag, the tensor and action sizes,
/// the trajectories, and an FNV-1a checksum. `info_len` is the information-state tensor length
/// and `num_actions` the number of distinct actions; every step must match them.
pub fn encode_replay<'a>(
    trajs: impl ExactSizeIterator<Item = &'a Trajectory>,
    info_len: usize,
    num_actions: usize,
) -> Vec<u8> {
    let mut buf = replay_header(info_len, num_actions, trajs.len());
    for t in trajs {
        put_trajectory(&mut buf, t);
        for s in &t.steps {
            put_step(&mut buf, s, info_len, num_actions);
        }
    }
    finish_replay(buf)
}

fn replay_header(info_len: usize, num_actions: usize, count: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    buf.extend_from_slice(REPLAY_MAGIC);
    for n in [info_len, num_actions, count] {
        buf.extend_from_slice(&(n as u64).to_le_bytes());
    }
    buf
}

fn put_trajectory(buf: &mut Vec<u8>, t: &Trajectory) {
    buf.extend_from_slice(&t.epoch.to_le_bytes());
    buf.push(t.learning_player as u8);
    buf.push(u8::from(t.learning));
    put_f32s(buf, &t.returns);
    buf.extend_from_slice(&(t.steps.len() as u32).to_le_bytes());
    buf.extend_from_slice(&t.chance_nodes.to_le_bytes());
}

fn put_step(buf: &mut Vec<u8>, s: &Step, info_len: usize, num_actions: usize) {
    assert!(s.info[0].len() == info_len && s.legal.len() == num_actions);
    buf.push(s.player as u8);
    buf.extend_from_slice(&(s.action as u32).to_le_bytes());
    buf.extend(s.legal.iter().map(|&l| u8::from(l)));
    put_f32s(buf, &s.info[0]);
    put_f32s(buf, &s.info[1]);
    put_f32s(buf, &[s.reach]);
    for v in [&s.advantage, &s.played_policy] {
        match v {
            Some(v) => {
                buf.push(1);
                put_f32s(buf, v);
            }
            None => buf.push(0),
        }
    }
}

/// Appends the checksum.
fn finish_replay(mut buf: Vec<u8>) -> Vec<u8> {
    crate::util::seal(&mut buf);
    buf
}

/// Reads little-endian fields from the front of a byte buffer (the replay and memory files).
pub(super) struct Reader<'a> {
    pub(super) buf: &'a [u8],
    pub(super) pos: usize,
}

impl Reader<'_> {
    /// The next `n` bytes, or "truncated".
    pub(super) fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or("truncated")?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    pub(super) fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub(super) fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub(super) fn f32s(&mut self, n: usize) -> Result<Vec<f32>, String> {
        Ok(self
            .take(4 * n)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }
    fn opt(&mut self, n: usize) -> Result<Option<Vec<f32>>, String> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.f32s(n)?)),
            f => Err(format!("bad flag {f}")),
        }
    }
}

/// Decodes [`encode_replay`]'s bytes, checking the magic, checksum and sizes; the error says
/// what is wrong.
pub fn decode_replay(
    bytes: &[u8],
    info_len: usize,
    num_actions: usize,
) -> Result<Vec<Trajectory>, String> {
    let magics = [REPLAY_MAGIC, REPLAY_MAGIC_V2, REPLAY_MAGIC_V1];
    let (which, body) = crate::util::unseal(bytes, &magics, 40, "replay")?;
    let with_reach = which < 2;
    let with_chance = which == 0;
    let mut r = Reader { buf: body, pos: 8 };
    let (il, na, n) = (r.u64()? as usize, r.u64()? as usize, r.u64()? as usize);
    if (il, na) != (info_len, num_actions) {
        return Err(format!(
            "it holds tensors of length {il} with {na} actions; the game has {info_len} and {num_actions}"
        ));
    }
    let mut out = Vec::with_capacity(n.min(1 << 20));
    for _ in 0..n {
        let epoch = r.u64()?;
        let learning_player = r.u8()? as usize;
        let learning = r.u8()? != 0;
        let ret = r.f32s(2)?;
        let len = r.u32()? as usize;
        let chance_nodes = if with_chance { r.u32()? } else { 0 };
        let mut steps = Vec::with_capacity(len.min(1 << 16));
        for _ in 0..len {
            let player = r.u8()? as usize;
            let action = r.u32()? as usize;
            let legal = r.take(na)?.iter().map(|&b| b != 0).collect();
            let info = [r.f32s(il)?, r.f32s(il)?];
            let reach = if with_reach { r.f32s(1)?[0] } else { 1.0 };
            let advantage = r.opt(na)?;
            let played_policy = r.opt(na)?;
            if player > 1 || action >= na {
                return Err(format!("bad step (player {player}, action {action})"));
            }
            steps.push(Step {
                player,
                info,
                legal,
                action,
                advantage,
                played_policy,
                reach,
            });
        }
        if learning_player > 1 {
            return Err(format!("bad learning player {learning_player}"));
        }
        out.push(Trajectory {
            epoch,
            learning_player,
            learning,
            steps,
            returns: [ret[0], ret[1]],
            chance_nodes,
        });
    }
    if r.pos != body.len() {
        return Err("trailing bytes".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_round_trips_and_rejects_corruption() {
        let step = |p: usize, adv: bool| Step {
            player: p,
            info: [vec![0.5, -1.0, 2.0], vec![1.0, 0.0, 3.5]],
            legal: vec![true, false],
            action: 0,
            advantage: adv.then(|| vec![0.25, 0.0]),
            played_policy: (!adv).then(|| vec![1.0, 0.0]),
            reach: if adv { 0.5 } else { 1.0 },
        };
        let trajs = vec![
            Trajectory {
                epoch: 7,
                learning_player: 1,
                learning: true,
                steps: vec![step(0, false), step(1, true)],
                returns: [1.5, -1.5],
                chance_nodes: 2,
            },
            Trajectory {
                epoch: 8,
                learning_player: 0,
                learning: false,
                steps: vec![],
                returns: [0.0, 0.0],
                chance_nodes: 0,
            },
        ];
        let bytes = encode_replay(trajs.iter(), 3, 2);
        let back = decode_replay(&bytes, 3, 2).unwrap();
        assert_eq!(format!("{back:?}"), format!("{trajs:?}"));
        assert!(
            decode_replay(&bytes, 4, 2)
                .unwrap_err()
                .contains("length 3")
        );
        let mut bad = bytes.clone();
        bad[20] ^= 1;
        assert!(decode_replay(&bad, 3, 2).unwrap_err().contains("checksum"));
        assert!(decode_replay(&bytes[..30], 3, 2).is_err());
    }
}
