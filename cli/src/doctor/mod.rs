//! `arbor doctor [--rebuild]`. The session logs are the source of truth; the store and the
//! rollouts are written from them. `doctor` applies every log from its first line to an empty
//! state and compares: the store (with the lines it has not seen applied, as every read does),
//! and each rollout, which must hold its agent's lines of the log (a prefix of them while it
//! lags). Before that it looks at the environment a run would meet (`env.rs`). `--rebuild`
//! (`rebuild.rs`) is the same code: the states are written into a new store file that replaces
//! the old one in one rename once it is complete, and rollouts that are unreadable or lag are
//! rewritten from the log the same way.

mod env;
mod rebuild;

pub use rebuild::rebuild;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use arbor_agent_graph::{EdgeStatus, STATE_FILE_NAME, SessionState, Store};
use arbor_orchestrator::SessionView;
use arbor_protocol::{RolloutLine, ThreadId};
use arbor_rollout::log::for_each_line;
use arbor_rollout::read_rollout;

use crate::args::DoctorArgs;
use crate::error::CliError;
use crate::output::out;

/// One session as its log tells it.
pub(super) struct Rebuilt {
    state: SessionState,
    /// Every line of each agent that belongs in its rollout, in order.
    rollouts: BTreeMap<ThreadId, Vec<RolloutLine>>,
    notices: Vec<String>,
}

/// Every session log under the home: `sessions/YYYY/MM/DD/log-<session>.jsonl`.
pub(super) fn logs(home: &Path) -> Result<Vec<(ThreadId, PathBuf)>, CliError> {
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
pub(super) fn rebuild_one(session: ThreadId, log: &Path) -> Result<Rebuilt, CliError> {
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
    if rebuilt.worktrees != stored.worktrees {
        problems.push("the store's worktrees differ from the log's".to_string());
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
pub(super) fn check_rollouts(
    home: &Path,
    rebuilt: &Rebuilt,
    driven: bool,
) -> Vec<(ThreadId, String)> {
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

/// What `doctor` finds, printed line by line as it is found: `ok:`, `notice:`, `warning:` or
/// `problem:` and what it is about. Problems make the exit code 1.
#[derive(Debug, Default)]
pub(super) struct Report {
    problems: usize,
}

impl Report {
    fn line(&mut self, kind: &str, text: &str) -> Result<(), CliError> {
        out(writeln!(std::io::stdout().lock(), "{kind}: {text}"))
    }

    pub(super) fn ok(&mut self, text: &str) -> Result<(), CliError> {
        self.line("ok", text)
    }

    pub(super) fn notice(&mut self, text: &str) -> Result<(), CliError> {
        self.line("notice", text)
    }

    pub(super) fn warning(&mut self, text: &str) -> Result<(), CliError> {
        self.line("warning", text)
    }

    pub(super) fn problem(&mut self, text: &str) -> Result<(), CliError> {
        self.problems += 1;
        self.line("problem", text)
    }
}

/// `arbor doctor`: the environment, then the store and the rollouts against the logs.
pub async fn check(home: &Path, args: &DoctorArgs) -> Result<u8, CliError> {
    let workspace = crate::exec::workspace_of(&crate::args::RunOptions {
        cwd: args.cwd.clone(),
        ..crate::args::RunOptions::defaults()
            .ok_or_else(|| CliError::failed("cannot make the default run options"))?
    })?;
    let mut report = Report::default();
    env::check(home, &workspace, args, &mut report).await?;
    check_store(home, &mut report)?;
    Ok(if report.problems == 0 { 0 } else { 1 })
}

/// Compares the store and the rollouts with the logs and reports every difference.
fn check_store(home: &Path, report: &mut Report) -> Result<(), CliError> {
    let sessions = logs(home)?;
    let rebuild = format!(
        "`arbor doctor --rebuild` makes it again from the {} session logs, keeping the damaged \
         file beside it",
        sessions.len()
    );
    if !home.join(STATE_FILE_NAME).exists() {
        if sessions.is_empty() {
            return report.ok(&format!("no sessions yet in {}", home.display()));
        }
        return report.problem(&format!(
            "{} is missing; {rebuild}",
            home.join(STATE_FILE_NAME).display()
        ));
    }
    let store = match Store::open_read_only(home) {
        Ok(store) => store,
        Err(err) if err.is_damaged() => return report.problem(&format!("{err}; {rebuild}")),
        Err(err) => return report.problem(&err.to_string()),
    };
    let before = report.problems;
    let mut threads = 0;
    for (session, log) in sessions {
        let rebuilt = rebuild_one(session, &log)?;
        for notice in &rebuilt.notices {
            report.notice(notice)?;
        }
        threads += rebuilt.state.threads.len();
        let root = match store.thread(session) {
            Ok(Some(root)) => root,
            Ok(None) => {
                report.problem(&format!(
                    "session {session} has a log ({}) but is not in the store",
                    log.display()
                ))?;
                continue;
            }
            Err(err) if err.is_damaged() => return report.problem(&format!("{err}; {rebuild}")),
            Err(err) => return Err(err.into()),
        };
        let view = match SessionView::of(home, store.clone(), root) {
            Ok(view) => view,
            Err(arbor_orchestrator::OrchestratorError::Store(err)) if err.is_damaged() => {
                return report.problem(&format!("{err}; {rebuild}"));
            }
            Err(err) => return Err(err.into()),
        };
        for problem in compare(&rebuilt.state, &view.state, view.driven) {
            report.problem(&problem)?;
        }
        for (_, problem) in check_rollouts(home, &rebuilt, view.driven) {
            report.problem(&problem)?;
        }
    }
    // Worktrees no open agent owns are worth knowing about, not a problem of the store.
    for line in crate::worktrees::orphan_lines(home) {
        report.notice(&line)?;
    }
    let found = report.problems - before;
    if found == 0 {
        return report.ok(&format!("{threads} threads agree with their session logs"));
    }
    out(writeln!(
        std::io::stdout().lock(),
        "{found} problems; `arbor doctor --rebuild` rebuilds the store and the rollouts from the logs"
    ))
}
