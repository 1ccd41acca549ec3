//! `RoleSet`: the built-ins overlaid with role files from `$ARBOR_HOME` and the workspace, and the
//! lookups `spawn_agent` needs.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::RoleError;
use crate::builtin::{builtin_guardian, builtin_roles};
use crate::role::{DEFAULT_ROLE, GUARDIAN_ROLE, Role, RoleSource};

/// The roles of one session, by name.
///
/// **Invariant:** the built-in names (`default`, `explorer`, `worker`, `guardian`) are always
/// present; files can redefine them but never remove them.
#[derive(Debug, Clone)]
pub struct RoleSet {
    /// Every role but the guardian.
    roles: BTreeMap<String, Role>,
    /// Kept apart so it is always there and never listed as spawnable.
    guardian: Role,
}

impl Default for RoleSet {
    fn default() -> Self {
        Self::builtin()
    }
}

impl RoleSet {
    /// Only the built-in roles.
    pub fn builtin() -> Self {
        let mut set = Self {
            roles: BTreeMap::new(),
            guardian: builtin_guardian(),
        };
        for role in builtin_roles() {
            set.insert(role);
        }
        set
    }

    /// The built-ins, then every `*.toml` in `<home>/roles/`, then in
    /// `<workspace>/.arbor/roles/`, each directory in sorted file-name order. A later layer
    /// replaces a role of the same name; two files of one directory defining the same name is an
    /// error. Missing directories are fine.
    pub fn load(home: &Path, workspace: &Path) -> Result<Self, RoleError> {
        let mut set = Self::builtin();
        for dir in [home.join("roles"), workspace.join(".arbor").join("roles")] {
            for role in load_dir(&dir)? {
                set.insert(role);
            }
        }
        Ok(set)
    }

    /// Adds a role or replaces the one of the same name. A redefined guardian keeps its
    /// internal invariants (read-only, at most `exec_command`, no spawning).
    pub fn insert(&mut self, role: Role) {
        if role.is_internal() {
            self.guardian = role.clamp_internal();
        } else {
            self.roles.insert(role.name.clone(), role);
        }
    }

    /// Any role by name, the guardian included.
    pub fn get(&self, name: &str) -> Result<&Role, RoleError> {
        if name == GUARDIAN_ROLE {
            return Ok(&self.guardian);
        }
        self.roles
            .get(name)
            .ok_or_else(|| RoleError::UnknownAgentType(name.to_owned()))
    }

    /// The role a model asked for in `spawn_agent` (`None` is `default`); internal roles are
    /// refused.
    pub fn for_spawn(&self, agent_type: Option<&str>) -> Result<&Role, RoleError> {
        let role = self.get(agent_type.unwrap_or(DEFAULT_ROLE))?;
        if role.is_internal() {
            return Err(RoleError::NotSpawnable(role.name.clone()));
        }
        Ok(role)
    }

    /// The guardian's role (behaviour §7).
    pub fn guardian(&self) -> &Role {
        &self.guardian
    }

    /// Every role, the guardian included, sorted by name.
    pub fn all(&self) -> Vec<&Role> {
        let mut all: Vec<&Role> = self.roles.values().chain([&self.guardian]).collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The roles a model may name in `spawn_agent`, sorted by name (the guardian left out).
    pub fn spawnable(&self) -> Vec<&Role> {
        self.roles.values().collect()
    }

    /// The text listing the spawnable roles, for the `spawn_agent` tool description.
    pub fn describe_for_spawn(&self) -> String {
        let mut text =
            format!("Available agent types (agent_type; `{DEFAULT_ROLE}` when omitted):\n");
        for role in self.spawnable() {
            let description = role.description.split_whitespace().collect::<Vec<_>>();
            text.push_str(&format!("- {}: {}\n", role.name, description.join(" ")));
        }
        text
    }
}

/// The roles of one directory, in sorted file-name order.
fn load_dir(dir: &Path) -> Result<Vec<Role>, RoleError> {
    let read_dir_error = |source| RoleError::ReadDir {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_dir_error(e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(read_dir_error)?.path();
        if path.extension().is_some_and(|ext| ext == "toml") && path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();

    let mut roles: Vec<Role> = Vec::with_capacity(paths.len());
    for path in paths {
        let text = fs::read_to_string(&path).map_err(|source| RoleError::ReadFile {
            path: path.clone(),
            source,
        })?;
        let role = Role::from_toml(&path, &text)?;
        if let Some(other) = roles.iter().find(|r| r.name == role.name) {
            return Err(RoleError::Duplicate {
                path,
                name: role.name,
                other: source_path(&other.source),
            });
        }
        roles.push(role);
    }
    Ok(roles)
}

fn source_path(source: &RoleSource) -> PathBuf {
    match source {
        RoleSource::File(path) => path.clone(),
        RoleSource::BuiltIn => PathBuf::from("built-in"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use arbor_protocol::SandboxMode;

    use super::*;
    use crate::role::{EXPLORER_ROLE, WORKER_ROLE};

    /// A home and a workspace in one temp dir, with role files written on demand.
    struct Dirs {
        _tmp: tempfile::TempDir,
        home: PathBuf,
        workspace: PathBuf,
    }

    impl Dirs {
        fn new() -> Self {
            let tmp = tempfile::tempdir().expect("tempdir");
            let home = tmp.path().join("home");
            let workspace = tmp.path().join("ws");
            Self {
                _tmp: tmp,
                home,
                workspace,
            }
        }

        fn home_role(&self, file: &str, text: &str) -> PathBuf {
            write(&self.home.join("roles"), file, text)
        }

        fn workspace_role(&self, file: &str, text: &str) -> PathBuf {
            write(&self.workspace.join(".arbor/roles"), file, text)
        }

        fn load(&self) -> Result<RoleSet, RoleError> {
            RoleSet::load(&self.home, &self.workspace)
        }
    }

    fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
        fs::create_dir_all(dir).expect("mkdir");
        let path = dir.join(file);
        fs::write(&path, text).expect("write");
        path
    }

    fn role_toml(name: &str, description: &str) -> String {
        format!(
            "name = \"{name}\"\ndescription = \"{description}\"\ndeveloper_instructions = \"i\"\n"
        )
    }

    fn names(roles: &[&Role]) -> Vec<String> {
        roles.iter().map(|r| r.name.clone()).collect()
    }

    #[test]
    fn builtins_present_and_guardian_internal() {
        let set = RoleSet::builtin();
        assert_eq!(
            names(&set.all()),
            ["default", "explorer", "guardian", "worker"]
        );
        assert_eq!(names(&set.spawnable()), ["default", "explorer", "worker"]);
        for role in set.all() {
            assert_eq!(role.source, RoleSource::BuiltIn);
            assert!(crate::role::check_name(&role.name).is_ok());
        }
        assert_eq!(set.guardian().name, GUARDIAN_ROLE);
        assert!(set.get(GUARDIAN_ROLE).is_ok());
        let err = set.for_spawn(Some(GUARDIAN_ROLE)).map(|r| &r.name);
        assert_eq!(
            err.map_err(|e| e.to_string()),
            Err("agent_type 'guardian' is internal and cannot be spawned".to_owned())
        );
        assert_eq!(
            set.for_spawn(None).map(|r| r.name.as_str()).ok(),
            Some(DEFAULT_ROLE)
        );
        assert_eq!(
            set.for_spawn(Some(WORKER_ROLE))
                .map(|r| r.name.as_str())
                .ok(),
            Some(WORKER_ROLE)
        );
    }

    #[test]
    fn builtin_shapes() {
        let set = RoleSet::builtin();
        let explorer = set.get(EXPLORER_ROLE).expect("explorer");
        assert_eq!(explorer.sandbox_mode, Some(SandboxMode::ReadOnly));
        assert!(!explorer.allows_tool("apply_patch"));
        assert!(explorer.allows_tool("exec_command"));
        assert!(!explorer.can_spawn);
        let worker = set.get(WORKER_ROLE).expect("worker");
        assert_eq!(worker.tools, None);
        assert!(worker.can_spawn);
        let guardian = set.guardian();
        assert_eq!(guardian.tools, Some(vec!["exec_command".to_owned()]));
        assert_eq!(guardian.sandbox_mode, Some(SandboxMode::ReadOnly));
        assert!(!guardian.can_spawn);
    }

    #[test]
    fn unknown_agent_type() {
        let set = RoleSet::builtin();
        for result in [set.get("x"), set.for_spawn(Some("x"))] {
            assert_eq!(
                result.map(|r| &r.name).map_err(|e| e.to_string()),
                Err("unknown agent_type 'x'".to_owned())
            );
        }
    }

    #[test]
    fn missing_dirs_give_builtins() {
        let dirs = Dirs::new();
        let set = dirs.load().expect("load");
        assert_eq!(names(&set.all()), names(&RoleSet::builtin().all()));
    }

    #[test]
    fn workspace_over_home_over_builtin() {
        let dirs = Dirs::new();
        let home_worker = dirs.home_role("worker.toml", &role_toml("worker", "home worker"));
        dirs.home_role("fast.toml", &role_toml("fast", "home fast"));
        let ws_fast = dirs.workspace_role("fast.toml", &role_toml("fast", "workspace fast"));
        dirs.home_role("d.toml", &role_toml("default", "home default"));
        dirs.workspace_role("d.toml", &role_toml("default", "workspace default"));
        dirs.home_role("notes.txt", "not a role");
        dirs.home_role("other.toml.bak", "not a role either");
        let set = dirs.load().expect("load");

        let worker = set.get("worker").expect("worker");
        assert_eq!(worker.description, "home worker");
        assert_eq!(worker.source, RoleSource::File(home_worker));
        assert_eq!(
            set.get("default").map(|r| r.description.as_str()).ok(),
            Some("workspace default")
        );
        let fast = set.get("fast").expect("fast");
        assert_eq!(fast.description, "workspace fast");
        assert_eq!(fast.source, RoleSource::File(ws_fast));
        assert_eq!(
            set.get("explorer").map(|r| &r.source).ok(),
            Some(&RoleSource::BuiltIn)
        );
        assert_eq!(
            names(&set.spawnable()),
            ["default", "explorer", "fast", "worker"]
        );
    }

    #[test]
    fn file_name_does_not_matter_but_duplicates_in_one_dir_do() {
        let dirs = Dirs::new();
        let first = dirs.workspace_role("a.toml", &role_toml("same", "one"));
        let second = dirs.workspace_role("b.toml", &role_toml("same", "two"));
        let err = dirs.load().map(|_| ()).expect_err("duplicate");
        assert_eq!(
            err.to_string(),
            format!(
                "role file {}: role `same` is already defined by {}",
                second.display(),
                first.display()
            )
        );
    }

    #[test]
    fn bad_file_error_names_file_and_field() {
        let dirs = Dirs::new();
        dirs.workspace_role("a_good.toml", &role_toml("good", "d"));
        let bad = dirs.workspace_role(
            "fast.toml",
            &format!("{}sandbox_mode = \"wide\"\n", role_toml("fast", "d")),
        );
        let err = dirs.load().map(|_| ()).expect_err("bad sandbox");
        assert_eq!(
            err.to_string(),
            format!(
                "role file {}: field `sandbox_mode`: unknown variant `wide`, expected one of \
                 read-only, workspace-write, danger-full-access",
                bad.display()
            )
        );
    }

    #[test]
    fn redefined_guardian_stays_internal_and_narrow() {
        let dirs = Dirs::new();
        dirs.home_role(
            "guardian.toml",
            &format!(
                "{}can_spawn = true\nsandbox_mode = \"danger-full-access\"\n\
                 tools = [\"exec_command\", \"apply_patch\", \"spawn_agent\"]\n",
                role_toml("guardian", "my reviewer")
            ),
        );
        let set = dirs.load().expect("load");
        let guardian = set.guardian();
        assert_eq!(guardian.description, "my reviewer");
        assert!(!guardian.can_spawn);
        assert_eq!(guardian.sandbox_mode, Some(SandboxMode::ReadOnly));
        assert_eq!(guardian.tools, Some(vec!["exec_command".to_owned()]));
        assert!(!names(&set.spawnable()).contains(&"guardian".to_owned()));
        assert!(set.for_spawn(Some("guardian")).is_err());
    }

    #[test]
    fn describe_for_spawn_lists_spawnable_roles() {
        let expect = "\
Available agent types (agent_type; `default` when omitted):
- default: General-purpose agent for any task; keeps the parent's tools and sandbox.
- explorer: Fast, read-only agent for well-scoped questions about the code (where is X, how does Y work); cannot edit files or spawn agents.
- worker: Makes code changes; give it a self-contained task and tell it which files it owns.
";
        assert_eq!(RoleSet::builtin().describe_for_spawn(), expect);
    }
}
