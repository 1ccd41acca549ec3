//! Opening a session is reconciling it with its log. The process that takes a session over
//! cuts a torn tail off the log, then brings the rollouts and the store up to it: both may lag
//! the log, neither may lead ([`reconcile`]). A process that only reads or appends (`tree`,
//! `mail`, `send`, `approve`, …) reads the store and applies the log's later lines in memory
//! ([`SessionView`]), so it sees everything in the log and writes nothing.

use std::path::{Path, PathBuf};

use arbor_agent_graph::{SessionState, Store, ThreadRecord};
use arbor_protocol::ThreadId;
use arbor_rollout::RolloutProjector;
use arbor_rollout::log::{self, Start};

use crate::error::OrchestratorError;
use crate::lease::Lease;

/// The log of the session whose root is `root`.
pub fn log_path_of(home: &Path, root: &ThreadRecord) -> PathBuf {
    log::log_path(&home.join(&root.rollout_path), root.id())
}

/// Writes the session log of a session an earlier arbor made (rollouts and a journal, no log);
/// the caller holds its lease. Returns notices.
pub fn convert_legacy(
    home: &Path,
    store: &Store,
    root: &ThreadRecord,
) -> Result<Vec<String>, OrchestratorError> {
    crate::legacy::convert(home, store, root, &log_path_of(home, root))
}

/// A session brought up to its log.
#[derive(Debug)]
pub struct Reconciled {
    /// The store's state with every line of the log applied (and committed).
    pub state: SessionState,
    /// Where the log's complete lines end, for its writer.
    pub start: Start,
    /// Lines skipped, a torn tail cut, and the like.
    pub notices: Vec<String>,
}

/// Finds a session's root by handle, id, unique id prefix or `--last`
/// ([`Store::find_session`]); a child's id is refused with the root's handle or id.
pub fn find_root(store: &Store, session: &str) -> Result<ThreadRecord, OrchestratorError> {
    if let Ok(id) = ThreadId::parse(session.trim())
        && let Some(thread) = store.thread(id)?
        && thread.parent_id().is_some()
    {
        let name = store.thread(thread.session_id())?.map_or_else(
            || thread.session_id().to_string(),
            |root| session_name(&root),
        );
        return Err(OrchestratorError::Start(format!(
            "{id} is the agent {} of session {name}, not a session; resume the whole tree with `arbor resume {name}`",
            thread.path(),
        )));
    }
    Ok(store.find_session(session)?)
}

/// What hints name a session by: its handle, or its id for a session made before handles.
pub fn session_name(root: &ThreadRecord) -> String {
    root.meta
        .handle
        .clone()
        .unwrap_or_else(|| root.id().to_string())
}

/// Brings the rollouts and the store of `session` up to its log. Only the process holding the
/// session's lease may do this (it writes both).
pub fn reconcile(
    home: &Path,
    store: &Store,
    session: ThreadId,
    log_path: &Path,
) -> Result<Reconciled, OrchestratorError> {
    let start_err = |err: log::LogError| OrchestratorError::Start(err.to_string());
    let mut notices = Vec::new();
    if !log_path.exists() {
        match store.thread(session)? {
            // Made by an earlier arbor: its rollouts and journal become its log.
            Some(root) if root.parent_id().is_none() => {
                notices.extend(crate::legacy::convert(home, store, &root, log_path)?);
            }
            _ => {
                return Err(OrchestratorError::Start(format!(
                    "session {session} has no session log at {}; `arbor doctor` tells more",
                    log_path.display()
                )));
            }
        }
    }
    let tail = log::open_tail(log_path, false).map_err(start_err)?;
    let mut state = store.load_session(session)?;
    if state.applied.offset > tail.end {
        return Err(OrchestratorError::Start(format!(
            "the store has more of session {session} than its log {} holds (byte {} of {}); \
             run `arbor doctor --rebuild`",
            log_path.display(),
            state.applied.offset,
            tail.end
        )));
    }
    if tail.end > state.applied.offset {
        // Lines a dead driver wrote may be unsynced: sync them before anything derives from
        // them, so the projections never hold more than the disk does.
        log::sync_log(log_path).map_err(start_err)?;
        let (lines, _, skipped) =
            log::read_synced(log_path, state.applied.offset).map_err(start_err)?;
        notices.extend(skipped);
        let mut rollouts = RolloutProjector::new(home);
        for row in state.threads.values() {
            rollouts.register(row.record.id(), Path::new(&row.record.rollout_path));
        }
        rollouts
            .project(&lines)
            .map_err(|err| OrchestratorError::Start(err.to_string()))?;
        let mut from = state.applied.offset;
        for synced in &lines {
            from += synced.bytes().len() as u64;
            state.apply(&synced.line, from);
        }
        state.applied.offset = tail.end;
        store.commit(&mut state)?;
    }
    Ok(Reconciled {
        start: Start {
            end: tail.end,
            last_seq: tail.last_seq,
        },
        state,
        notices,
    })
}

/// A session as a process that does not drive it sees it: the store's state with the log's
/// later lines applied in memory. Nothing is written.
#[derive(Debug)]
pub struct SessionView {
    pub store: Store,
    pub root: ThreadRecord,
    pub state: SessionState,
    pub log_path: PathBuf,
    /// How far into the log the store itself had come (before the later lines were applied).
    pub stored: arbor_agent_graph::LogPosition,
    /// A live process holds the session's lease.
    pub driven: bool,
    /// Lines of the log skipped while reading it.
    pub notices: Vec<String>,
}

impl SessionView {
    /// Opens the session `session` (a handle, an id, a unique prefix of one, or `--last`)
    /// under `home` to read.
    pub fn open(home: &Path, session: &str) -> Result<Self, OrchestratorError> {
        let store = Store::open_read_only(home)?;
        let root = find_root(&store, session)?;
        Self::of(home, store, root)
    }

    /// The view of the session whose root is `root`.
    pub fn of(home: &Path, store: Store, root: ThreadRecord) -> Result<Self, OrchestratorError> {
        let log_path = log_path_of(home, &root);
        let mut state = store.load_session(root.id())?;
        let stored = state.applied;
        let read = log::read_log(&log_path, state.applied.offset)
            .map_err(|err| OrchestratorError::Start(err.to_string()))?;
        for (line, end) in &read.lines {
            state.apply(line, *end);
        }
        let driven = Lease::holder(home, root.id()).is_some();
        Ok(Self {
            store,
            root,
            state,
            log_path,
            stored,
            driven,
            notices: read.notices,
        })
    }
}
