//! The session lease: one process drives a session at a time. An exclusive lock (std's
//! `File::try_lock`, a `flock` underneath) on `$ARBOR_HOME/leases/<session>.lock`, which holds
//! the driver's pid. The kernel drops the lock when the process dies, so a dead driver's lease
//! is free to take over.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use arbor_protocol::ThreadId;

/// A held lease; released when dropped.
#[derive(Debug)]
pub struct Lease {
    file: File,
    path: PathBuf,
    session: ThreadId,
    /// The pid recorded by a previous driver that is gone, if any.
    pub took_over_from: Option<u32>,
}

/// Why a lease could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(
        "session {session} is driven by another process (pid {pid}); wait for it to finish or stop it"
    )]
    Held { session: ThreadId, pid: String },
    #[error("lease file {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where a session's lease lives.
pub fn lease_path(home: &Path, session: ThreadId) -> PathBuf {
    home.join("leases").join(format!("{session}.lock"))
}

impl Lease {
    /// Takes the session's lease, or says which pid holds it.
    pub fn acquire(home: &Path, session: ThreadId) -> Result<Self, LeaseError> {
        let path = lease_path(home, session);
        let io = |source| LeaseError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let locked = match file.try_lock() {
            Ok(()) => true,
            Err(TryLockError::WouldBlock) => false,
            Err(TryLockError::Error(err)) => return Err(io(err)),
        };
        let mut previous = String::new();
        file.read_to_string(&mut previous).map_err(io)?;
        let previous = previous.trim().to_string();
        if !locked {
            return Err(LeaseError::Held {
                session,
                pid: if previous.is_empty() {
                    "unknown".to_string()
                } else {
                    previous
                },
            });
        }
        let took_over_from = previous
            .parse::<u32>()
            .ok()
            .filter(|pid| *pid != std::process::id());
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        // The pid is for people and error messages; the lock is what counts, so no sync.
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(Self {
            file,
            path,
            session,
            took_over_from,
        })
    }

    /// The pid holding a session's lease, if a live process holds it.
    pub fn holder(home: &Path, session: ThreadId) -> Option<u32> {
        let path = lease_path(home, session);
        let mut file = File::open(&path).ok()?;
        // Free when a shared lock can be had: no driver holds the exclusive one.
        if !matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock)) {
            return None;
        }
        let mut text = String::new();
        file.read_to_string(&mut text).ok()?;
        text.trim().parse().ok()
    }

    /// The session this lease is for.
    pub fn session(&self) -> ThreadId {
        self.session
    }

    /// The lease file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}
