//! The crate's one error enum, and the internal failure type store operations return before
//! the file path and operation name are attached.

use std::path::PathBuf;

use arbor_protocol::ThreadId;

/// Everything that can go wrong in the store. Every variant about the file names its path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory that should hold the state file could not be created.
    #[error("cannot create state directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// SQLite could not open the file at all.
    #[error("cannot open state file {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The file opened but refused a setting the store relies on.
    #[error("state file {path}: {reason}")]
    Setup { path: PathBuf, reason: String },
    /// The file exists but is not an arbor store: random bytes, or another program's database.
    #[error("state file {path} is not an arbor store: {reason}")]
    NotArborStore { path: PathBuf, reason: String },
    /// The file was written by a newer arbor whose schema this build does not know.
    #[error(
        "state file {path} has schema version {found}, newer than the {supported} this arbor \
         supports; upgrade arbor"
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// A schema migration failed; the file is left at the previous version.
    #[error("state file {path}: migration to schema version {version} failed: {source}")]
    Migration {
        path: PathBuf,
        version: i64,
        source: rusqlite::Error,
    },
    /// A statement failed.
    #[error("state file {path}: {op} failed: {source}")]
    Sqlite {
        path: PathBuf,
        op: &'static str,
        source: rusqlite::Error,
    },
    /// The group transaction holding this write could not be committed; nothing of it was kept.
    #[error("state file {path}: {op} failed: commit failed: {message}")]
    Commit {
        path: PathBuf,
        op: &'static str,
        message: String,
    },
    /// A stored value does not parse: the file was edited by hand or damaged.
    #[error("state file {path}: {op} failed: stored {what} `{value}` is invalid")]
    Corrupt {
        path: PathBuf,
        op: &'static str,
        what: &'static str,
        value: String,
    },
    /// The store was closed (or its writer thread stopped) before the write ran.
    #[error("state file {path}: the store is closed")]
    Closed { path: PathBuf },
    /// The writer thread could not be started.
    #[error("state file {path}: cannot start the writer thread: {source}")]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
    /// No thread with this id is indexed.
    #[error("unknown thread {0}")]
    UnknownThread(ThreadId),
    /// No approval request with this id is recorded.
    #[error("unknown approval request `{0}`")]
    UnknownApproval(String),
    /// The edge would make a thread its own ancestor.
    #[error("edge {parent} -> {child} would make a cycle")]
    Cycle { parent: ThreadId, child: ThreadId },
    /// Neither a handle nor an id prefix of at least [`crate::MIN_SESSION_PREFIX`] characters.
    #[error(
        "session `{0}` is not a handle, and as an id prefix it is too short: give at least 8 \
         characters (`arbor sessions` lists the sessions)"
    )]
    PrefixTooShort(String),
    /// No session has this handle or an id that starts with it.
    #[error("no session matches `{0}`: `arbor sessions` lists the sessions' handles and ids")]
    SessionNotFound(String),
    /// Several sessions have ids that start with the prefix (or, made at the same moment by
    /// two processes, this handle).
    #[error(
        "session `{prefix}` is ambiguous: it matches {}; give the handle or more of the id",
        join_sessions(.matches)
    )]
    AmbiguousSession {
        prefix: String,
        /// Each match's id and handle.
        matches: Vec<(ThreadId, Option<String>)>,
    },
    /// An option where a session was expected, other than `--last`.
    #[error("`{0}` is not an option of this command; SESSION may be a handle, an id or --last")]
    UnknownOption(String),
    /// `--last` in a home that has no session yet.
    #[error("no sessions yet in {0}: `arbor exec` starts one")]
    NoSessions(PathBuf),
    /// A caller passed a value the store refuses.
    #[error("invalid {what}: {message}")]
    Invalid { what: &'static str, message: String },
}

fn join_sessions(matches: &[(ThreadId, Option<String>)]) -> String {
    matches
        .iter()
        .map(|(id, handle)| match handle {
            Some(handle) => format!("{id} ({handle})"),
            None => id.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why one operation failed, before the store adds its path and the operation's name.
#[derive(Debug)]
pub(crate) enum Fail {
    Sql(rusqlite::Error),
    Corrupt { what: &'static str, value: String },
    Store(StoreError),
}

impl StoreError {
    /// Whether a session could not be found by the id or prefix the user gave (a usage error,
    /// not a failure of the store).
    pub fn is_lookup(&self) -> bool {
        matches!(
            self,
            Self::SessionNotFound(_)
                | Self::AmbiguousSession { .. }
                | Self::PrefixTooShort(_)
                | Self::NoSessions(_)
                | Self::UnknownOption(_)
        )
    }

    /// Whether the file is damaged or not a store at all (random bytes, a cut file, another
    /// program's database): a store `arbor doctor --rebuild` makes again from the logs. A store
    /// of a newer arbor is not damaged.
    pub fn is_damaged(&self) -> bool {
        let source = match self {
            Self::NotArborStore { .. } | Self::Corrupt { .. } => return true,
            Self::Sqlite { source, .. }
            | Self::Open { source, .. }
            | Self::Migration { source, .. } => source,
            _ => return false,
        };
        matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
        )
    }

    /// Whether the write failed because the disk is full.
    pub fn is_full(&self) -> bool {
        let source = match self {
            Self::Sqlite { source, .. } | Self::Open { source, .. } => source,
            _ => return false,
        };
        source.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
    }

    /// Whether the write failed only because another process held the store's write lock
    /// past the busy timeout: it may simply be tried again.
    pub fn is_busy(&self) -> bool {
        let source = match self {
            Self::Sqlite { source, .. } | Self::Open { source, .. } => source,
            _ => return false,
        };
        matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }
}

impl From<rusqlite::Error> for Fail {
    fn from(err: rusqlite::Error) -> Self {
        Self::Sql(err)
    }
}

impl From<rusqlite::types::FromSqlError> for Fail {
    fn from(err: rusqlite::types::FromSqlError) -> Self {
        Self::Sql(err.into())
    }
}

impl From<StoreError> for Fail {
    fn from(err: StoreError) -> Self {
        Self::Store(err)
    }
}

impl Fail {
    /// A stored value that does not parse.
    pub(crate) fn corrupt(what: &'static str, value: impl Into<String>) -> Self {
        Self::Corrupt {
            what,
            value: value.into(),
        }
    }

    /// The public error, naming the file and the operation.
    pub(crate) fn into_store(self, path: &std::path::Path, op: &'static str) -> StoreError {
        match self {
            Self::Sql(source) => StoreError::Sqlite {
                path: path.to_path_buf(),
                op,
                source,
            },
            Self::Corrupt { what, value } => StoreError::Corrupt {
                path: path.to_path_buf(),
                op,
                what,
                value,
            },
            Self::Store(err) => err,
        }
    }
}

/// What store operations return internally.
pub(crate) type OpResult<T> = Result<T, Fail>;
