//! Whether an `exec_command` call may run as it is, must not run, or needs approval (behaviour
//! §7), and the action JSON and keys an approval request carries. Pure: no I/O.

use std::path::Path;

use arbor_agent_graph::{ApprovalRecord, OverrideKey};
use arbor_protocol::{AgentPath, ApprovalPolicy, SandboxMode};
use arbor_tools::{Decision, Evaluation, ExecArgs, PatternToken, Rule, SandboxPermissions};
use serde_json::{Value, json};

/// Starts the model-facing result of a command a `forbidden` rule matches.
pub const FORBIDDEN_SENTENCE: &str =
    "This action is forbidden by the command policy, so it was not run.";
/// The model-facing result when the guardian's own command would need approval.
pub const GUARDIAN_CANNOT_ASK_SENTENCE: &str =
    "This action needs approval, which the guardian cannot ask for, so it was not run.";

/// What an `exec_command` call needs before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Runs in the agent's sandbox without asking anyone.
    Run,
    /// Never runs: a `forbidden` rule matches. The text names the rule.
    Forbidden(String),
    /// Runs only once approved. The text says why, for the approver.
    Approval(String),
}

/// Judges a command: `forbidden` rules always win; then escalation, a `prompt` rule, or (under
/// `untrusted`) a command that is neither known read-only nor allowed by rules needs approval.
pub fn assess(evaluation: &Evaluation, policy: ApprovalPolicy, escalated: bool) -> Need {
    if evaluation.decision == Some(Decision::Forbidden) {
        return Need::Forbidden(rule_text(evaluation, Decision::Forbidden));
    }
    let mut reasons = Vec::new();
    if escalated {
        reasons.push("it asks to run outside the sandbox".to_string());
    }
    if evaluation.decision == Some(Decision::Prompt) {
        reasons.push(format!(
            "{} asks for approval",
            rule_text(evaluation, Decision::Prompt)
        ));
    }
    if policy == ApprovalPolicy::Untrusted && !trusted(evaluation) {
        reasons.push(
            "approval policy untrusted: it is not a known read-only command or allowed by a rule"
                .to_string(),
        );
    }
    if reasons.is_empty() {
        Need::Run
    } else {
        Need::Approval(reasons.join("; "))
    }
}

/// Judges an `apply_patch` (its paths as `apply_patch PATH` pseudo-commands): `forbidden` rules
/// win; a `prompt` rule asks; under `untrusted` every path must be named by an `allow` rule.
pub fn assess_patch(evaluation: &Evaluation, policy: ApprovalPolicy) -> Need {
    if evaluation.decision == Some(Decision::Forbidden) {
        return Need::Forbidden(rule_text(evaluation, Decision::Forbidden));
    }
    if evaluation.decision == Some(Decision::Prompt) {
        return Need::Approval(format!(
            "{} asks for approval",
            rule_text(evaluation, Decision::Prompt)
        ));
    }
    let allowed = (0..evaluation.commands.len())
        .all(|index| evaluation.matches.iter().any(|m| m.command == index));
    if policy == ApprovalPolicy::Untrusted && !allowed {
        return Need::Approval(
            "approval policy untrusted: it changes files no allow rule names".to_string(),
        );
    }
    Need::Run
}

/// The exact planned action of an `apply_patch` call.
pub fn patch_action(
    patch: &str,
    paths: &[String],
    cwd: &Path,
    sandbox: SandboxMode,
    reason: &str,
) -> Value {
    json!({
        "tool": "apply_patch",
        "command": format!("apply_patch {}", paths.join(" ")),
        "paths": paths,
        "patch": patch,
        "cwd": cwd.display().to_string(),
        "sandbox": sandbox.as_str(),
        "approval_reason": reason,
    })
}

/// What makes a retried patch identical: requester, the patch text, cwd.
pub fn patch_key(requester: &AgentPath, patch: &str, cwd: &Path) -> OverrideKey {
    OverrideKey {
        requester: requester.clone(),
        command: format!("apply_patch\n{}", patch.trim()),
        cwd: cwd.display().to_string(),
        escalated: false,
    }
}

/// Whether `untrusted` runs a command without asking: it parsed, and each of its plain commands
/// is known read-only or matched by an `allow` rule (and no rule asks for more).
fn trusted(evaluation: &Evaluation) -> bool {
    if arbor_tools::is_known_read_only(evaluation) {
        return true;
    }
    evaluation.parsed
        && evaluation.decision == Some(Decision::Allow)
        && (0..evaluation.commands.len()).all(|index| {
            let words = &evaluation.commands[index];
            evaluation.matches.iter().any(|m| m.command == index)
                || arbor_tools::is_known_read_only(&Evaluation {
                    command: words.join(" "),
                    parsed: true,
                    commands: vec![words.clone()],
                    matches: Vec::new(),
                    decision: None,
                })
        })
}

/// `rule `git push` (talks to the remote)` for the first match with `decision`.
pub(super) fn rule_text(evaluation: &Evaluation, decision: Decision) -> String {
    match evaluation
        .matches
        .iter()
        .find(|m| m.rule.decision == decision)
    {
        Some(found) => describe_rule(&found.rule),
        None => "a rule".to_string(),
    }
}

fn describe_rule(rule: &Rule) -> String {
    let pattern: Vec<String> = rule
        .pattern
        .iter()
        .map(|token| match token {
            PatternToken::Word(word) => word.clone(),
            PatternToken::AnyOf(words) => format!("[{}]", words.join("|")),
        })
        .collect();
    match &rule.justification {
        Some(why) => format!("rule `{}` ({why})", pattern.join(" ")),
        None => format!("rule `{}`", pattern.join(" ")),
    }
}

/// The model-facing result of a forbidden command.
pub fn forbidden_message(rule: &str) -> String {
    format!("{FORBIDDEN_SENTENCE} Matched {rule}.")
}

/// The exact planned action of an `exec_command` call, as approvers see it and the approval log
/// stores it.
pub fn exec_action(args: &ExecArgs, workdir: &Path, sandbox: SandboxMode, reason: &str) -> Value {
    let mut action = json!({
        "tool": "exec_command",
        "command": args.cmd,
        "cwd": workdir.display().to_string(),
        "sandbox_permissions": args.permissions().as_str(),
        "sandbox": sandbox.as_str(),
        "approval_reason": reason,
    });
    if let Some(timeout_ms) = args.timeout_ms {
        action["timeout_ms"] = json!(timeout_ms);
    }
    action
}

/// What makes a retry identical: requester, canonical command, cwd and escalation.
pub fn override_key(requester: &AgentPath, args: &ExecArgs, workdir: &Path) -> OverrideKey {
    OverrideKey {
        requester: requester.clone(),
        command: arbor_tools::canonical(&args.cmd),
        cwd: workdir.display().to_string(),
        escalated: args.permissions() == SandboxPermissions::RequireEscalated,
    }
}

/// What makes an MCP call's retry identical: requester, and the call in one line (tool and
/// arguments).
pub fn mcp_key(requester: &AgentPath, command: &str, cwd: &str) -> OverrideKey {
    OverrideKey {
        requester: requester.clone(),
        command: command.to_string(),
        cwd: cwd.to_string(),
        escalated: false,
    }
}

/// The override key of a stored request (for an answer given from outside the runtime).
/// `None` for an action that is not an `exec_command`, an `apply_patch` or an MCP call.
pub fn record_key(record: &ApprovalRecord) -> Option<OverrideKey> {
    let action = &record.action;
    if action["tool"] == "apply_patch" {
        return Some(patch_key(
            &record.requester,
            action["patch"].as_str()?,
            Path::new(action["cwd"].as_str()?),
        ));
    }
    if action["tool"].as_str().is_some_and(arbor_mcp::is_mcp) {
        return Some(mcp_key(
            &record.requester,
            action["command"].as_str()?,
            action["cwd"].as_str()?,
        ));
    }
    if action["tool"] != "exec_command" {
        return None;
    }
    Some(OverrideKey {
        requester: record.requester.clone(),
        command: arbor_tools::canonical(action["command"].as_str()?),
        cwd: action["cwd"].as_str()?.to_string(),
        escalated: action["sandbox_permissions"] == SandboxPermissions::RequireEscalated.as_str(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_tools::Policy;

    fn policy() -> Policy {
        let mut policy = Policy::empty();
        policy
            .add_file(
                Path::new("rules.toml"),
                r#"
[[rule]]
pattern = ["git", "push"]
decision = "prompt"
justification = "talks to the remote"

[[rule]]
pattern = ["rm", "-rf"]
decision = "forbidden"

[[rule]]
pattern = ["make"]
decision = "allow"
"#,
            )
            .expect("rules load");
        policy
    }

    /// `(policy, escalated, command)` → the need, as text: `run`, `forbidden: …`, `ask: …`.
    fn check(approval: ApprovalPolicy, escalated: bool, cmd: &str, expect: &str) {
        let got = match assess(&policy().evaluate(cmd), approval, escalated) {
            Need::Run => "run".to_string(),
            Need::Forbidden(rule) => format!("forbidden: {rule}"),
            Need::Approval(reason) => format!("ask: {reason}"),
        };
        assert_eq!(got, expect, "{approval} {escalated} {cmd}");
    }

    #[test]
    fn on_request_asks_for_escalation_and_prompt_rules() {
        use ApprovalPolicy::OnRequest;
        check(OnRequest, false, "cargo test", "run");
        check(
            OnRequest,
            true,
            "cargo test",
            "ask: it asks to run outside the sandbox",
        );
        check(
            OnRequest,
            false,
            "bash -lc 'git status && git push origin'",
            "ask: rule `git push` (talks to the remote) asks for approval",
        );
        check(OnRequest, true, "ls; rm -rf /", "forbidden: rule `rm -rf`");
    }

    #[test]
    fn untrusted_trusts_read_only_and_allowed_commands_only() {
        use ApprovalPolicy::Untrusted;
        check(Untrusted, false, "ls -la && git status", "run");
        check(Untrusted, false, "make test && cat out.txt", "run");
        check(
            Untrusted,
            false,
            "cargo build",
            "ask: approval policy untrusted: it is not a known read-only command or allowed by a rule",
        );
        check(
            Untrusted,
            false,
            "echo $(make)",
            "ask: approval policy untrusted: it is not a known read-only command or allowed by a rule",
        );
    }

    #[test]
    fn never_is_judged_like_on_request() {
        check(ApprovalPolicy::Never, false, "cargo build", "run");
        check(
            ApprovalPolicy::Never,
            true,
            "cargo build",
            "ask: it asks to run outside the sandbox",
        );
    }

    #[test]
    fn patches_are_judged_by_their_paths() {
        let mut policy = policy();
        policy
            .add_file(
                Path::new("patch.toml"),
                "[[rule]]\npattern = [\"apply_patch\", \"notes.md\"]\ndecision = \"allow\"\n\n\
                 [[rule]]\npattern = [\"apply_patch\", \"ci.yml\"]\ndecision = \"forbidden\"\n",
            )
            .expect("rules load");
        let judge = |paths: &[&str], approval| {
            let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
            match assess_patch(&policy.evaluate_patch(&paths), approval) {
                Need::Run => "run".to_string(),
                Need::Forbidden(rule) => format!("forbidden: {rule}"),
                Need::Approval(reason) => format!("ask: {reason}"),
            }
        };
        use ApprovalPolicy::{OnRequest, Untrusted};
        assert_eq!(judge(&["src/a.rs"], OnRequest), "run");
        assert_eq!(judge(&["notes.md"], Untrusted), "run");
        assert_eq!(
            judge(&["notes.md", "src/a.rs"], Untrusted),
            "ask: approval policy untrusted: it changes files no allow rule names"
        );
        assert_eq!(
            judge(&["ci.yml"], OnRequest),
            "forbidden: rule `apply_patch ci.yml`"
        );
    }

    #[test]
    fn keys_use_the_canonical_command() {
        let path = AgentPath::parse("/root/w").expect("path");
        let args = |cmd: &str| ExecArgs {
            cmd: cmd.to_string(),
            workdir: None,
            timeout_ms: None,
            sandbox_permissions: Some(SandboxPermissions::RequireEscalated),
            justification: None,
        };
        let a = override_key(&path, &args("git   push 'origin'"), Path::new("/w"));
        let b = override_key(&path, &args("git push origin"), Path::new("/w"));
        assert_eq!(a, b);
        assert!(a.escalated);
        let action = exec_action(
            &args("git push"),
            Path::new("/w"),
            SandboxMode::WorkspaceWrite,
            "r",
        );
        let record = ApprovalRecord::pending(
            "r1".into(),
            arbor_protocol::ThreadId::new(),
            arbor_protocol::ThreadId::new(),
            path.clone(),
            action,
            None,
        );
        assert_eq!(
            record_key(&record),
            Some(override_key(&path, &args("git push"), Path::new("/w")))
        );
    }
}
