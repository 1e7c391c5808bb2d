//! Errors of the trainers (ARMAC and Student of Games). Each variant reads like the
//! [`crate::run::RunError`] variant of the same name, into which the run layer converts it;
//! the conversion runs one way only (the trainers never carry a run-layer error).

use std::path::Path;

/// What stopped a trainer.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error(transparent)]
    Game(#[from] crate::game::GameError),
    #[error(transparent)]
    Tree(#[from] crate::tree::TreeError),
    #[error("cannot write {what} at {path}: {source}")]
    Io {
        what: String,
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Usage(String),
    /// A step failed; `context` says which, `source` why (printed as a chain).
    #[error("{context}")]
    Failed {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stop (a time limit or a signal) came inside a unit of work (a round), which was
    /// abandoned part-way: the state it changed is fit only to be dropped.
    #[error("stopped inside a unit of work, which was abandoned")]
    Stopped,
}

impl TrainError {
    /// Wraps an error of a step with what was being done (for `map_err`).
    pub fn context<E: std::error::Error + Send + Sync + 'static>(
        context: impl Into<String>,
    ) -> impl FnOnce(E) -> TrainError {
        let context = context.into();
        move |e| TrainError::Failed {
            context,
            source: Box::new(e),
        }
    }
}

/// `map_err` for file operations: names `what` and the path.
pub fn io_err(what: &str, p: &Path) -> impl FnOnce(std::io::Error) -> TrainError {
    let what = what.to_string();
    let path = p.display().to_string();
    move |source| TrainError::Io { what, path, source }
}
