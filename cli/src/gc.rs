//! `arbor gc [--older-than DURATION] [--keep-last N] [--dry-run] [--json]`: the command line
//! of retention (`arbor_orchestrator::retention`, `docs/retention.md`), which `retention =
//! "30d"` in config also runs at the start of every `exec`; durations and sizes as people
//! write them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use arbor_agent_graph::Store;
use arbor_orchestrator::retention::{self, Found, Rules};
use serde_json::json;

use crate::args::GcArgs;
use crate::error::CliError;
use crate::output::{human_bytes, out};

/// `arbor gc`.
pub fn gc(home: &Path, args: &GcArgs) -> Result<u8, CliError> {
    let older_than = args
        .older_than
        .as_deref()
        .map(|text| {
            parse_duration(text).map_err(|err| CliError::usage(format!("--older-than: {err}")))
        })
        .transpose()?;
    if older_than.is_none() && args.keep_last.is_none() {
        return Err(CliError::usage(
            "say which sessions to delete: --older-than DURATION (such as 30d), --keep-last N, or both",
        ));
    }
    let rules = Rules {
        older_than,
        keep_last: args.keep_last,
    };
    let store = crate::store::open_store(home)?;
    drop(store);
    let store = Store::open(home)?;
    let outcome = retention::collect(home, &store, rules, args.dry_run)?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let line = json!({
            "dry_run": args.dry_run,
            "deleted": outcome.deleted.iter().map(Found::to_json).collect::<Vec<_>>(),
            "driven": outcome.driven.iter().map(|(id, pid)| json!({"id": id, "pid": pid})).collect::<Vec<_>>(),
            "freed_bytes": outcome.freed,
            "worktrees": outcome.worktrees,
        });
        return out(writeln!(stdout, "{line}")).map(|()| 0);
    }
    let verb = if args.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    for found in &outcome.deleted {
        out(writeln!(
            stdout,
            "{verb} {}  created {}  last active {}  {}  {}",
            found.id,
            found.created_at,
            found.last_active,
            arbor_protocol::text::count(found.agents, "agent", "agents"),
            human_bytes(found.bytes)
        ))?;
    }
    for done in &outcome.worktrees {
        eprintln!("{done}");
    }
    for (id, pid) in &outcome.driven {
        let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
        eprintln!("kept {id}: a process drives it{by}");
    }
    let freed = if args.dry_run { "would free" } else { "freed" };
    eprintln!(
        "{freed} {} in {} sessions",
        human_bytes(outcome.freed),
        outcome.deleted.len()
    );
    Ok(0)
}

/// `30d`, `12h`, `90m`, `45s`, `2w`: a whole number and one unit.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{text}` has no unit; use s, m, h, d or w (such as 30d)"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` does not start with a whole number (such as 30d)"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}`; use s, m, h, d or w (such as 30d)"
            ));
        }
    };
    Ok(Duration::from_secs(number.saturating_mul(seconds)))
}

/// `retention` in config: the sessions idle longer than it go before the new one starts; what
/// to report. A bad value stops `exec`; a failed deletion is reported and `exec` goes on.
pub async fn retain(home: PathBuf, retention: &str) -> Result<Option<String>, CliError> {
    let older_than = parse_duration(retention)
        .map_err(|err| CliError::usage(format!("config: retention: {err}")))?;
    if !home.join(arbor_agent_graph::STATE_FILE_NAME).exists() {
        return Ok(None);
    }
    let rules = arbor_orchestrator::retention::Rules {
        older_than: Some(older_than),
        keep_last: None,
    };
    let done = tokio::task::spawn_blocking(move || {
        let store = arbor_agent_graph::Store::open(&home)?;
        arbor_orchestrator::retention::collect(&home, &store, rules, false)
    })
    .await
    .map_err(|err| CliError::failed(err.to_string()))?;
    Ok(match done {
        Ok(outcome) if !outcome.deleted.is_empty() => Some(format!(
            "retention: deleted {} sessions idle for over {retention}, freed {}",
            outcome.deleted.len(),
            human_bytes(outcome.freed)
        )),
        Ok(_) => None,
        Err(err) => Some(format!("retention: {err}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_have_one_number_and_one_unit() {
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(12 * 3_600)));
        assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(90 * 60)));
        assert_eq!(parse_duration("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(
            parse_duration("30")
                .expect_err("an error")
                .contains("no unit")
        );
        assert!(
            parse_duration("d")
                .expect_err("an error")
                .contains("whole number")
        );
        assert!(
            parse_duration("3y")
                .expect_err("an error")
                .contains("unknown unit `y`")
        );
        assert!(
            parse_duration("1.5d")
                .expect_err("an error")
                .contains("unknown unit `.5d`")
        );
    }
}
