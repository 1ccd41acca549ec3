//! The exact commands hints print, such as the one that continues an interrupted run: the
//! session by its handle, with the options the run was given, so that it can be pasted as it
//! is.

use std::path::Path;

use clap::ValueEnum;

use crate::args::RunOptions;

/// What hints name a session by: its handle, or its id for a session made before handles.
pub fn session_name(orch: &arbor_orchestrator::Orchestrator) -> String {
    orch.handle()
        .map_or_else(|| orch.session_id().to_string(), str::to_string)
}

/// `arbor resume SESSION --continue` with the home (when it is not the default one) and every
/// option of `run` that was not left at its default.
pub fn resume_continue(home: &Path, run: &RunOptions, session: &str) -> String {
    let mut words = vec!["arbor".to_string()];
    if crate::home_dir(None).ok().as_deref() != Some(home) {
        words.extend(["--home".to_string(), quote(&home.display().to_string())]);
    }
    words.extend([
        "resume".to_string(),
        session.to_string(),
        "--continue".to_string(),
    ]);
    words.extend(run_flags(run));
    words.join(" ")
}

/// The options of `run` that differ from their defaults, as flags (`--cwd` aside: a session
/// keeps its workspace).
fn run_flags(run: &RunOptions) -> Vec<String> {
    let mut flags = Vec::new();
    let mut flag = |name: &str, value: String| {
        flags.push(format!("--{name}"));
        flags.push(quote(&value));
    };
    if let Some(script) = &run.script {
        let script = std::path::absolute(script).unwrap_or_else(|_| script.clone());
        flag("script", script.display().to_string());
    }
    if let Some(provider) = run.provider {
        flag("provider", name(provider));
    }
    if let Some(model) = &run.model {
        flag("model", model.clone());
    }
    if let Some(url) = &run.base_url {
        flag("base-url", url.clone());
    }
    let Some(defaults) = RunOptions::defaults() else {
        return flags;
    };
    if name(run.approval_policy) != name(defaults.approval_policy) {
        flag("approval-policy", name(run.approval_policy));
    }
    if name(run.reviewer) != name(defaults.reviewer) {
        flag("reviewer", name(run.reviewer));
    }
    if let Some(wait) = run.approval_wait {
        flag("approval-wait", wait.to_string());
    }
    if name(run.sandbox) != name(defaults.sandbox) {
        flag("sandbox", name(run.sandbox));
    }
    for (option, value, default) in [
        (
            "max-depth",
            u64::from(run.max_depth),
            u64::from(defaults.max_depth),
        ),
        ("max-running", run.max_running, defaults.max_running),
        ("max-resident", run.max_resident, defaults.max_resident),
    ] {
        if value != default {
            flag(option, value.to_string());
        }
    }
    if let Some(budget) = run.budget_tokens {
        flag("budget-tokens", budget.to_string());
    }
    if run.no_project_docs {
        flags.push("--no-project-docs".to_string());
    }
    if run.json {
        flags.push("--json".to_string());
    }
    flags
}

/// The name a value of an option is given by on the command line.
fn name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map(|value| value.get_name().to_string())
        .unwrap_or_default()
}

/// `text` as one shell word: as it is when it holds nothing the shell treats specially,
/// otherwise in single quotes.
fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_the_shell_would_split_them() {
        assert_eq!(quote("/tmp/s.json"), "/tmp/s.json");
        assert_eq!(quote("my script.json"), "'my script.json'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }
}
