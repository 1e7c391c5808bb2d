//! `--hands-out FILE.phhs`: every hand a command plays, written in the Poker Hand History
//! format ([`crate::eval::phh`]) as it is played.

use crate::eval::matchup::PlayedHand;
use crate::eval::phh::{PhhTable, PhhWriter};
use crate::game::{Action, Game};
use crate::run::{RunError, io_err};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// A `.phhs` file being written.
pub struct HandsOut {
    writer: PhhWriter<BufWriter<File>>,
    path: PathBuf,
}

/// What a recorder returns for one hand.
pub type RecordResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

impl HandsOut {
    /// Creates (or truncates) `path` for hands of `game`; refused unless the game is heads-up
    /// no-limit Texas hold'em.
    pub fn create(game: &dyn Game, path: &Path) -> Result<HandsOut, RunError> {
        let table = PhhTable::new(&game.load_string()).map_err(RunError::context("--hands-out"))?;
        let file = File::create(path).map_err(io_err("the hand histories", path))?;
        Ok(HandsOut {
            writer: PhhWriter::new(table, BufWriter::new(file)),
            path: path.to_path_buf(),
        })
    }

    /// Appends one hand, `names[p]` having played OpenSpiel player `p`.
    pub fn write(&mut self, names: [&str; 2], history: &[Action]) -> RecordResult {
        self.writer.write_hand(names, history)
    }

    /// Appends a hand of a match between `a` and `b` (names).
    pub fn write_match_hand(&mut self, a: &str, b: &str, hand: PlayedHand<'_>) -> RecordResult {
        let names = if hand.a_seat == 0 { [a, b] } else { [b, a] };
        self.write(names, hand.history)
    }

    /// Flushes the file; returns the number of hands written.
    pub fn finish(self) -> Result<u64, RunError> {
        let hands = self.writer.hands();
        self.writer
            .finish()
            .map_err(io_err("the hand histories", &self.path))?;
        Ok(hands)
    }
}
