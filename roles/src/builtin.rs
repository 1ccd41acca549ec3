//! The built-in roles: `default`, `explorer`, `worker` and the internal `guardian`.

use arbor_protocol::SandboxMode;

use crate::role::{
    DEFAULT_ROLE, EXPLORER_ROLE, GUARDIAN_ROLE, Role, RoleSource, TOOL_NAMES, WORKER_ROLE,
};

const DEFAULT_INSTRUCTIONS: &str = "\
You are an arbor agent: a general-purpose coding agent working in a shared repository, one \
node in a tree of agents. Carry the task you were given through to the end. Read the code \
before you change it, keep each change small and focused, and run the relevant build and tests \
before you report. When you delegate, give each child a self-contained task, say which files it \
owns, and wait for its result instead of redoing its work. Finish with a short, concrete final \
message: what you did, how you verified it, and what is left.";

const EXPLORER_INSTRUCTIONS: &str = "\
You are an explorer: a fast, read-only agent that answers one well-scoped question about the \
code. Your sandbox is read-only; you cannot edit files or spawn agents. Use exec_command with \
read-only commands (rg, ls, sed -n, git log, git show, git diff) and prefer targeted searches \
over reading whole trees. Stop as soon as you can answer. Your final message is the answer for \
the agent that asked: lead with the answer, cite file paths and line numbers, quote only the \
lines that matter, and say plainly what you did not find or could not check.";

const WORKER_INSTRUCTIONS: &str = "\
You are a worker: you make the changes your parent assigns. Your parent tells you which files \
you own; edit only those. Other agents may be editing the same tree at the same time, so if \
the task needs a change outside your files, do not make it: say so in your final message. Edit \
with apply_patch, then build and run the relevant tests with exec_command and fix what you \
broke. Do not revert, reformat or tidy code you did not write. Finish with a short report: the \
files you changed, what you verified and how, and anything left undone.";

/// The built-in roles, in name order.
pub fn builtin_roles() -> Vec<Role> {
    vec![default(), explorer(), builtin_guardian(), worker()]
}

fn default() -> Role {
    Role {
        name: DEFAULT_ROLE.to_owned(),
        description: "General-purpose agent for any task; keeps the parent's tools and sandbox."
            .to_owned(),
        developer_instructions: DEFAULT_INSTRUCTIONS.to_owned(),
        model: None,
        reasoning_effort: None,
        tools: None,
        sandbox_mode: None,
        nickname_candidates: None,
        can_spawn: true,
        isolation: None,
        auto_merge: None,
        source: RoleSource::BuiltIn,
    }
}

fn explorer() -> Role {
    let tools = TOOL_NAMES
        .iter()
        .filter(|t| matches!(**t, "send_message" | "list_agents" | "exec_command"))
        .map(|t| (*t).to_owned())
        .collect();
    Role {
        name: EXPLORER_ROLE.to_owned(),
        description: "Fast, read-only agent for well-scoped questions about the code (where is \
                      X, how does Y work); cannot edit files or spawn agents."
            .to_owned(),
        developer_instructions: EXPLORER_INSTRUCTIONS.to_owned(),
        model: None,
        reasoning_effort: Some("low".to_owned()),
        tools: Some(tools),
        sandbox_mode: Some(SandboxMode::ReadOnly),
        nickname_candidates: None,
        can_spawn: false,
        isolation: None,
        auto_merge: None,
        source: RoleSource::BuiltIn,
    }
}

fn worker() -> Role {
    Role {
        name: WORKER_ROLE.to_owned(),
        description: "Makes code changes; give it a self-contained task and tell it which files \
                      it owns."
            .to_owned(),
        developer_instructions: WORKER_INSTRUCTIONS.to_owned(),
        model: None,
        reasoning_effort: None,
        tools: None,
        sandbox_mode: None,
        nickname_candidates: None,
        can_spawn: true,
        isolation: None,
        auto_merge: None,
        source: RoleSource::BuiltIn,
    }
}

/// The built-in guardian role.
pub fn builtin_guardian() -> Role {
    Role {
        name: GUARDIAN_ROLE.to_owned(),
        description: "Internal approval reviewer; runs at /root/guardian and is never spawned by \
                      a model."
            .to_owned(),
        developer_instructions: arbor_guardian::GUARDIAN_INSTRUCTIONS.to_owned(),
        model: None,
        reasoning_effort: None,
        tools: Some(vec!["exec_command".to_owned()]),
        sandbox_mode: Some(SandboxMode::ReadOnly),
        nickname_candidates: None,
        can_spawn: false,
        isolation: None,
        auto_merge: None,
        source: RoleSource::BuiltIn,
    }
}
