//! Where a new child works: `spawn_agent`'s `isolation`, else its role's, else (for a child
//! that can change files) the config's `worker_isolation`. A role that says `worktree` cannot
//! be spawned `shared`; a worktree asked for explicitly outside a git repository fails the
//! spawn, one that only the config default asks for falls back to `shared` with a notice.

use std::path::Path;

use arbor_protocol::{Isolation, SandboxMode};
use arbor_roles::{Capabilities, Role};

/// Who asked for the isolation a child gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// `spawn_agent`'s argument or the role.
    Explicitly,
    /// The config's `worker_isolation`.
    ByDefault,
}

/// The isolation a child gets, and who asked for it.
pub fn decide(
    default: Isolation,
    role: &Role,
    caps: &Capabilities,
    argument: Option<&str>,
) -> Result<(Isolation, Asked), String> {
    let argument = match argument.map(str::trim) {
        None => None,
        Some(text) => Some(Isolation::parse(text).ok_or_else(|| {
            format!(
                "invalid arguments for spawn_agent: field `isolation`: {}",
                Isolation::unknown(text)
            )
        })?),
    };
    if role.isolation == Some(Isolation::Worktree) && argument == Some(Isolation::Shared) {
        return Err(format!(
            "role '{}' works in a git worktree of its own (isolation = \"worktree\"), so it \
             cannot be spawned with isolation \"shared\"",
            role.name
        ));
    }
    if let Some(isolation) = argument.or(role.isolation) {
        return Ok((isolation, Asked::Explicitly));
    }
    if can_change_files(caps) {
        return Ok((default, Asked::ByDefault));
    }
    Ok((Isolation::Shared, Asked::ByDefault))
}

/// Whether a child with these capabilities can change files: the agents `worker_isolation`
/// is for (a read-only explorer gains nothing from a worktree).
fn can_change_files(caps: &Capabilities) -> bool {
    caps.sandbox != SandboxMode::ReadOnly
        && (caps.has_tool("apply_patch") || caps.has_tool("exec_command"))
}

/// The error for a worktree asked for outside a git repository.
pub fn not_a_repository(cwd: &Path) -> String {
    format!(
        "isolation \"worktree\" needs a git repository, and {} is not inside one (start the \
         session in a git repository, or spawn with isolation \"shared\")",
        cwd.display()
    )
}

/// The notice when the config's default cannot apply: `why` it cannot (`None`: `cwd` is in no
/// repository).
pub fn fallback_notice(cwd: &Path, child: &arbor_protocol::AgentPath, why: Option<&str>) -> String {
    let why = match why {
        Some(why) => why.to_string(),
        None => format!("{} is not inside a git repository", cwd.display()),
    };
    format!(
        "worker_isolation = \"worktree\" does not apply to {child}: {why}, so it works in the \
         shared checkout"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::ApprovalPolicy;
    use arbor_roles::RoleSet;

    fn role(name: &str) -> Role {
        RoleSet::builtin().get(name).expect("role").clone()
    }

    fn caps_for(role: &Role) -> Capabilities {
        Capabilities::root(SandboxMode::WorkspaceWrite, ApprovalPolicy::OnRequest).narrow_for(role)
    }

    fn check(
        default: Isolation,
        role: &Role,
        argument: Option<&str>,
    ) -> Result<(Isolation, Asked), String> {
        decide(default, role, &caps_for(role), argument)
    }

    #[test]
    fn the_argument_wins_then_the_role_then_the_default_for_writers_only() {
        let worker = role("worker");
        let explorer = role("explorer");
        use Isolation::{Shared, Worktree};
        assert_eq!(check(Shared, &worker, None), Ok((Shared, Asked::ByDefault)));
        assert_eq!(
            check(Worktree, &worker, None),
            Ok((Worktree, Asked::ByDefault))
        );
        assert_eq!(
            check(Worktree, &explorer, None),
            Ok((Shared, Asked::ByDefault))
        );
        assert_eq!(
            check(Shared, &worker, Some("worktree")),
            Ok((Worktree, Asked::Explicitly))
        );
        assert_eq!(
            check(Worktree, &worker, Some("shared")),
            Ok((Shared, Asked::Explicitly))
        );
        let mut isolated = role("worker");
        isolated.name = "fixer".into();
        isolated.isolation = Some(Worktree);
        assert_eq!(
            check(Shared, &isolated, None),
            Ok((Worktree, Asked::Explicitly))
        );
        assert_eq!(
            check(Shared, &isolated, Some("shared")),
            Err(
                "role 'fixer' works in a git worktree of its own (isolation = \"worktree\"), so \
                 it cannot be spawned with isolation \"shared\""
                    .to_string()
            )
        );
        assert_eq!(
            check(Shared, &worker, Some("copy")),
            Err(
                "invalid arguments for spawn_agent: field `isolation`: unknown value `copy`, \
                 expected one of shared, worktree"
                    .to_string()
            )
        );
    }
}
