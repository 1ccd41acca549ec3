//! `arbor doctor [--rebuild]`. The session logs are the source of truth; the store and the
//! rollouts are written from them. `doctor` applies every log from its first line to an empty
//! state and compares: the store (with the lines it has not seen applied, as every read does),
//! and each rollout, which must hold its agent's lines of the log (a prefix of them while it
//! lags). `--rebuild` is the same code: the states are written into a new store file that
//! replaces the old one in one rename once it is complete, and rollouts that are unreadable or
//! lag are rewritten from the log the same way.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use arbor_agent_graph::{EdgeStatus, STATE_FILE_NAME, SessionState, Store};
use arbor_orchestrator::{Lease, SessionView};
use arbor_protocol::{RolloutLine, ThreadId, Timestamp};
use arbor_rollout::log::for_each_line;
use arbor_rollout::read_rollout;

use crate::error::CliError;

/// One session as its log tells it.
struct Rebuilt {
    state: SessionState,
    /// Every line of each agent that belongs in its rollout, in order.
    rollouts: BTreeMap<ThreadId, Vec<RolloutLine>>,
    notices: Vec<String>,
}

/// Every session log under the home: `sessions/YYYY/MM/DD/log-<session>.jsonl`.
fn logs(home: &Path) -> Result<Vec<(ThreadId, PathBuf)>, CliError> {
    let mut found = Vec::new();
    let sessions = home.join(arbor_rollout::SESSIONS_DIR);
    for year in subdirs(&sessions)? {
        for month in subdirs(&year)? {
            for day in subdirs(&month)? {
                let entries = std::fs::read_dir(&day).map_err(|err| {
                    CliError::failed(format!("cannot list {}: {err}", day.display()))
                })?;
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let id = name
                        .strip_prefix("log-")
                        .and_then(|rest| rest.strip_suffix(".jsonl"))
                        .and_then(|id| ThreadId::parse(id).ok());
                    if let Some(id) = id {
                        found.push((id, entry.path()));
                    }
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(CliError::failed(format!(
                "cannot list {}: {err}",
                dir.display()
            )));
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Applies a whole log to an empty state.
fn rebuild_one(session: ThreadId, log: &Path) -> Result<Rebuilt, CliError> {
    let mut state = SessionState::new(session);
    let mut rollouts: BTreeMap<ThreadId, Vec<RolloutLine>> = BTreeMap::new();
    let (end, torn, mut notices) = for_each_line(log, 0, |line, end| {
        state.apply(&line, end);
        if line.item.in_rollout()
            && let Some(thread) = line.thread
        {
            rollouts.entry(thread).or_default().push(line);
        }
        Ok(())
    })?;
    state.applied.offset = end;
    if torn > 0 {
        notices.push(format!(
            "session log {}: {torn} bytes of a torn last line (the next driver cuts them off)",
            log.display()
        ));
    }
    notices.append(&mut state.notices.clone());
    Ok(Rebuilt {
        state,
        rollouts,
        notices,
    })
}

/// What differs between the state the log gives and the store's (`driven`: a live driver's
/// projections may lag, so statuses are not compared).
fn compare(rebuilt: &SessionState, stored: &SessionState, driven: bool) -> Vec<String> {
    let mut problems = Vec::new();
    for (id, want) in &rebuilt.threads {
        let path = &want.record.path();
        let Some(have) = stored.thread(*id) else {
            problems.push(format!("{path} ({id}) is in the log but not in the store"));
            continue;
        };
        if have.record.parent_id() != want.record.parent_id()
            || have.record.path() != want.record.path()
        {
            problems.push(format!(
                "{path} ({id}): the store's parent or path differs from the log"
            ));
        }
        if have.edge != want.edge {
            problems.push(format!(
                "{path}: edge is {}, the log says {}",
                have.edge.map_or("none", EdgeStatus::as_str),
                want.edge.map_or("none", EdgeStatus::as_str)
            ));
        }
        if !driven && have.record.status != want.record.status {
            problems.push(format!(
                "{path}: the store says {} but the log says {}",
                have.record.status, want.record.status
            ));
        }
    }
    for id in stored.threads.keys() {
        if !rebuilt.threads.contains_key(id) {
            problems.push(format!("thread {id} is in the store but not in the log"));
        }
    }
    let ids = |state: &SessionState| -> Vec<String> {
        state
            .mail
            .values()
            .map(|row| row.mail.id.to_string())
            .collect()
    };
    if ids(rebuilt) != ids(stored) {
        problems.push(format!(
            "unread mail differs: the log leaves {} unread, the store {}",
            rebuilt.mail.len(),
            stored.mail.len()
        ));
    }
    let decisions = |state: &SessionState| -> Vec<(String, String)> {
        state
            .approvals
            .iter()
            .map(|a| (a.id.clone(), a.outcome.to_string()))
            .collect()
    };
    if decisions(rebuilt) != decisions(stored) {
        problems.push("the approval log differs from the session log".to_string());
    }
    problems
}

/// What is wrong with the rollouts of a session: unreadable, or not holding its agents' lines.
fn check_rollouts(home: &Path, rebuilt: &Rebuilt, driven: bool) -> Vec<(ThreadId, String)> {
    let mut problems = Vec::new();
    for (id, row) in &rebuilt.state.threads {
        let path = home.join(&row.record.rollout_path);
        let want = rebuilt.rollouts.get(id).map_or(&[][..], Vec::as_slice);
        let read = match read_rollout(&path) {
            Ok(read) => read,
            Err(err) => {
                problems.push((*id, format!("{}: unreadable: {err}", path.display())));
                continue;
            }
        };
        let have: Vec<Option<u64>> = read.lines.iter().map(|(_, line)| line.seq).collect();
        let expected: Vec<Option<u64>> = want.iter().map(|line| line.seq).collect();
        let prefix = have.len() <= expected.len() && expected[..have.len()] == have[..];
        if !prefix {
            problems.push((
                *id,
                format!(
                    "{}: holds lines that are not its agent's lines of the log",
                    path.display()
                ),
            ));
        } else if have.len() < expected.len() && !driven {
            problems.push((
                *id,
                format!(
                    "{}: lacks {} of its agent's lines of the log",
                    path.display(),
                    expected.len() - have.len()
                ),
            ));
        }
    }
    problems
}

/// Compares the store and the rollouts with the logs and reports every difference.
pub fn check(home: &Path) -> Result<u8, CliError> {
    let store = crate::read::open_store(home)?;
    let mut problems = Vec::new();
    let mut threads = 0;
    let mut stdout = std::io::stdout().lock();
    for (session, log) in logs(home)? {
        let rebuilt = rebuild_one(session, &log)?;
        for notice in &rebuilt.notices {
            crate::output::out(writeln!(stdout, "notice: {notice}"))?;
        }
        threads += rebuilt.state.threads.len();
        let root = match store.thread(session)? {
            Some(root) => root,
            None => {
                problems.push(format!(
                    "session {session} has a log ({}) but is not in the store",
                    log.display()
                ));
                continue;
            }
        };
        let view = SessionView::of(home, store.clone(), root)?;
        problems.extend(compare(&rebuilt.state, &view.state, view.driven));
        problems.extend(
            check_rollouts(home, &rebuilt, view.driven)
                .into_iter()
                .map(|(_, problem)| problem),
        );
    }
    if problems.is_empty() {
        crate::output::out(writeln!(
            stdout,
            "ok: {threads} threads agree with their session logs"
        ))?;
        return Ok(0);
    }
    for problem in &problems {
        crate::output::out(writeln!(stdout, "problem: {problem}"))?;
    }
    crate::output::out(writeln!(
        stdout,
        "{} problems; `arbor doctor --rebuild` rebuilds the store and the rollouts from the logs",
        problems.len()
    ))?;
    Ok(1)
}

/// Rebuilds `state.sqlite` (and every rollout that is unreadable or lags) from the logs alone.
/// The new store is built in a file of its own and renamed over the old one once complete; the
/// old one is kept under a name of its own.
pub fn rebuild(home: &Path) -> Result<u8, CliError> {
    let mut leases = Vec::new();
    convert_legacy(home, &mut leases)?;
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
    let backup = replace_store(&state_file, &building, &suffix)?;
    if let Some(backup) = backup {
        eprintln!("kept the old store as {}", backup.display());
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
/// rebuild keeps them.
fn convert_legacy(home: &Path, leases: &mut Vec<Lease>) -> Result<(), CliError> {
    if !home.join(STATE_FILE_NAME).exists() {
        return Ok(());
    }
    let store = Store::open(home)?;
    for root in store.sessions()? {
        if arbor_orchestrator::open::log_path_of(home, &root).exists() {
            continue;
        }
        leases.push(take_lease(home, root.id())?);
        for notice in arbor_orchestrator::open::convert_legacy(home, &store, &root)? {
            eprintln!("notice: {notice}");
        }
    }
    store.close();
    Ok(())
}

fn take_lease(home: &Path, session: ThreadId) -> Result<Lease, CliError> {
    match Lease::acquire(home, session) {
        Ok(lease) => Ok(lease),
        Err(arbor_orchestrator::LeaseError::Held { pid, .. }) => Err(CliError {
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

/// Replaces the store at `state` with the complete one at `built`: the old one's WAL is
/// checkpointed into it first (so no stale WAL meets the new file), it is kept under a
/// `.bak-<suffix>` name (a hard link: it stays in place until the rename), then the new file
/// is renamed over it in one step. Returns the backup's path, if there was an old store.
fn replace_store(state: &Path, built: &Path, suffix: &str) -> Result<Option<PathBuf>, CliError> {
    let fail = |what: &str, err: std::io::Error| CliError::failed(format!("{what}: {err}"));
    let mut backup = None;
    if state.exists() {
        // Opening and closing the old store checkpoints and removes its WAL.
        Store::open_file(state)?.close();
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
                fail(
                    &format!("cannot keep the old store as {}", kept.display()),
                    err,
                )
            })?;
        backup = Some(kept);
    }
    std::fs::rename(built, state)
        .map_err(|err| fail(&format!("cannot put {} in place", built.display()), err))?;
    for leftover in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{leftover}", state.display()));
        let _ = std::fs::remove_file(format!("{}{leftover}", built.display()));
    }
    Ok(backup)
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
