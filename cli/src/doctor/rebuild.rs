//! `arbor doctor --rebuild`: `state.sqlite` (and every rollout that is unreadable or lags) made
//! again from the session logs alone, into a file of its own that is renamed over the old one
//! once complete. The old store is kept beside it: as a backup when it opens, under a
//! `.damaged-` name when it does not (random bytes, a cut file, another program's database).

use std::path::{Path, PathBuf};

use arbor_agent_graph::{STATE_FILE_NAME, Store};
use arbor_orchestrator::Lease;
use arbor_protocol::{ThreadId, Timestamp};

use super::{Rebuilt, check_rollouts, logs, rebuild_one};
use crate::error::CliError;

/// Rebuilds `state.sqlite` (and every rollout that is unreadable or lags) from the logs alone.
/// The new store is built in a file of its own and renamed over the old one once complete; the
/// old one is kept under a name of its own.
pub fn rebuild(home: &Path) -> Result<u8, CliError> {
    let mut leases = Vec::new();
    if let Some(damage) = convert_legacy(home, &mut leases)? {
        eprintln!(
            "notice: the store cannot be read ({damage}): it is rebuilt from the session logs \
             alone (a session an arbor before session logs made would live only in it)"
        );
    }
    let sessions = logs(home)?;
    for (session, _) in &sessions {
        if !leases.iter().any(|lease| lease.session() == *session) {
            leases.push(take_lease(home, *session)?);
        }
    }
    let state_file = home.join(STATE_FILE_NAME);
    remove_leftovers(home);
    let suffix = format!("{}-{}", Timestamp::now().file_stamp(), std::process::id());
    let building = home.join(format!("{STATE_FILE_NAME}.rebuild-{suffix}"));
    let built = build_store(home, &sessions, &building);
    let (threads, mail, approvals, rewritten) = match built {
        Ok(counts) => counts,
        Err(err) => {
            remove_store_files(&building);
            return Err(err);
        }
    };
    match replace_store(&state_file, &building, &suffix)? {
        Some(Kept::Backup(path)) => eprintln!("kept the old store as {}", path.display()),
        Some(Kept::Damaged(path)) => {
            eprintln!(
                "kept the damaged store beside the new one as {}",
                path.display()
            );
        }
        None => {}
    }
    drop(leases);
    println!(
        "rebuilt {} from {} session logs: {threads} threads, {mail} unread mail, {approvals} \
         approval requests; {rewritten} rollouts rewritten",
        state_file.display(),
        sessions.len(),
    );
    Ok(0)
}

/// Sessions an earlier arbor made (in the store, with no log) get their log first, so that the
/// rebuild keeps them. A store that cannot be read has none to give: what is wrong with it is
/// returned.
fn convert_legacy(home: &Path, leases: &mut Vec<Lease>) -> Result<Option<String>, CliError> {
    if !home.join(STATE_FILE_NAME).exists() {
        return Ok(None);
    }
    let store = match Store::open(home) {
        Ok(store) => store,
        Err(err) if err.is_damaged() => return Ok(Some(err.to_string())),
        Err(err) => return Err(err.into()),
    };
    let roots = match store.sessions() {
        Ok(roots) => roots,
        Err(err) if err.is_damaged() => {
            store.close();
            return Ok(Some(err.to_string()));
        }
        Err(err) => return Err(err.into()),
    };
    for root in roots {
        if arbor_orchestrator::open::log_path_of(home, &root).exists() {
            continue;
        }
        leases.push(take_lease(home, root.id())?);
        for notice in arbor_orchestrator::open::convert_legacy(home, &store, &root)? {
            eprintln!("notice: {notice}");
        }
    }
    store.close();
    Ok(None)
}

fn take_lease(home: &Path, session: ThreadId) -> Result<Lease, CliError> {
    match Lease::acquire(home, session) {
        Ok(lease) => Ok(lease),
        Err(arbor_orchestrator::OrchestratorError::Held { pid, .. }) => Err(CliError {
            code: 3,
            message: format!(
                "session {session} is driven by process {pid}; stop it before rebuilding"
            ),
        }),
        Err(err) => Err(CliError::failed(err.to_string())),
    }
}

/// Writes every session's state into the new store at `path` and rewrites lagging rollouts.
fn build_store(
    home: &Path,
    sessions: &[(ThreadId, PathBuf)],
    path: &Path,
) -> Result<(usize, usize, usize, usize), CliError> {
    let store = Store::open_file(path)?;
    let (mut threads, mut mail, mut approvals, mut rewritten) = (0, 0, 0, 0);
    for (session, log) in sessions {
        let mut rebuilt = rebuild_one(*session, log)?;
        for notice in &rebuilt.notices {
            eprintln!("notice: {notice}");
        }
        for (id, problem) in check_rollouts(home, &rebuilt, false) {
            eprintln!("notice: {problem}: rewritten from the log");
            rewrite_rollout(home, &rebuilt, id)?;
            rewritten += 1;
        }
        threads += rebuilt.state.threads.len();
        mail += rebuilt.state.mail.len();
        approvals += rebuilt.state.approvals.len();
        store.commit(&mut rebuilt.state)?;
    }
    store.close();
    Ok((threads, mail, approvals, rewritten))
}

/// Writes an agent's rollout anew from the log (a file of its own, renamed into place).
fn rewrite_rollout(home: &Path, rebuilt: &Rebuilt, id: ThreadId) -> Result<(), CliError> {
    let Some(row) = rebuilt.state.thread(id) else {
        return Ok(());
    };
    let path = home.join(&row.record.rollout_path);
    let fail =
        |err: std::io::Error| CliError::failed(format!("cannot rewrite {}: {err}", path.display()));
    let mut bytes = Vec::new();
    for line in rebuilt.rollouts.get(&id).into_iter().flatten() {
        serde_json::to_writer(&mut bytes, line)
            .map_err(|err| CliError::failed(format!("cannot encode a line: {err}")))?;
        bytes.push(b'\n');
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let temp = path.with_extension(format!("jsonl.rebuild-{}", std::process::id()));
    std::fs::write(&temp, &bytes).map_err(fail)?;
    std::fs::rename(&temp, &path).map_err(fail)
}

/// Where the old store was kept.
enum Kept {
    /// It opened: a copy of it as it was.
    Backup(PathBuf),
    /// It did not open (damaged, or not a store): the file itself, with its WAL and shared
    /// memory files beside it under the same name.
    Damaged(PathBuf),
}

/// Replaces the store at `state` with the complete one at `built`: the old one's WAL is
/// checkpointed into it first (so no stale WAL meets the new file), it is kept under a
/// `.bak-<suffix>` name (a hard link: it stays in place until the rename), then the new file
/// is renamed over it in one step. An old store that does not open is moved aside whole, WAL
/// and all, as `.damaged-<suffix>`. Returns where the old one went, if there was one.
fn replace_store(state: &Path, built: &Path, suffix: &str) -> Result<Option<Kept>, CliError> {
    let fail = |what: &str, err: std::io::Error| CliError::failed(format!("{what}: {err}"));
    let mut kept = None;
    if state.exists() {
        match Store::open_file(state) {
            // Opening and closing the old store checkpoints and removes its WAL.
            Ok(old) => {
                old.close();
                kept = Some(Kept::Backup(keep_backup(state, built, suffix)?));
            }
            Err(err) if err.is_damaged() => {
                let aside = PathBuf::from(format!("{}.damaged-{suffix}", state.display()));
                for extra in ["-wal", "-shm"] {
                    let from = format!("{}{extra}", state.display());
                    if Path::new(&from).exists() {
                        std::fs::rename(&from, format!("{}{extra}", aside.display()))
                            .map_err(|err| fail(&format!("cannot move {from} aside"), err))?;
                    }
                }
                std::fs::rename(state, &aside)
                    .map_err(|err| fail(&format!("cannot move {} aside", state.display()), err))?;
                kept = Some(Kept::Damaged(aside));
            }
            Err(err) => {
                remove_store_files(built);
                return Err(err.into());
            }
        }
    }
    std::fs::rename(built, state)
        .map_err(|err| fail(&format!("cannot put {} in place", built.display()), err))?;
    for leftover in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{leftover}", state.display()));
        let _ = std::fs::remove_file(format!("{}{leftover}", built.display()));
    }
    Ok(kept)
}

/// Keeps the closed old store at `state` as `.bak-<suffix>` (refused while another process
/// has it open).
fn keep_backup(state: &Path, built: &Path, suffix: &str) -> Result<PathBuf, CliError> {
    let wal = PathBuf::from(format!("{}-wal", state.display()));
    if wal.metadata().is_ok_and(|meta| meta.len() > 0) {
        remove_store_files(built);
        return Err(CliError::failed(format!(
            "{} is in use by another process; stop it before rebuilding",
            state.display()
        )));
    }
    let kept = PathBuf::from(format!("{}.bak-{suffix}", state.display()));
    std::fs::hard_link(state, &kept)
        .or_else(|_| std::fs::copy(state, &kept).map(|_| ()))
        .map_err(|err| {
            CliError::failed(format!(
                "cannot keep the old store as {}: {err}",
                kept.display()
            ))
        })?;
    Ok(kept)
}

/// Files a rebuild that was killed left behind (never in use: the store is replaced last).
fn remove_leftovers(home: &Path) {
    let prefix = format!("{STATE_FILE_NAME}.rebuild-");
    for entry in std::fs::read_dir(home).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn remove_store_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
