//! The Linux sandbox (behaviour §8): a [`Launcher`] that confines a command with Landlock
//! between `fork` and `exec`, and an honest report of what is enforced.
//!
//! `read-only` may read and execute everywhere and write only to device files such as
//! `/dev/null`; `workspace-write` may also write the workspace and the temp dirs, except `.git`
//! and `.arbor` inside the workspace, which are bind-mounted read-only in a private mount
//! namespace (or, where no mount namespace can be made, left out of per-entry grants);
//! `danger-full-access` is no sandbox. Without network access a socket filter (`seccomp.rs`)
//! leaves commands unix and UDP sockets only. See `docs/sandbox.md`.

mod child;
#[cfg(test)]
mod home_tests;
#[cfg(test)]
mod net_tests;
mod ruleset;
mod seccomp;
mod status;
#[cfg(test)]
mod tests;

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use arbor_protocol::SandboxMode;
use serde::Serialize;

use crate::ToolError;
use crate::exec::Launcher;
use child::{CapDrop, ChildPlan, MountPlan, MountStrategy};
use ruleset::Grants;
use status::describe;

/// The workspace entries that stay read-only in `workspace-write`.
pub const PROTECTED_ENTRIES: &[&str] = &[".git", ".arbor"];

/// What a sandbox really enforces, for the user and the model. Never claims more than is in
/// place: without Landlock, or in `danger-full-access`, `enforced` is false and the label
/// `none`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxStatus {
    pub mode: SandboxMode,
    /// A Landlock restriction is applied to every command.
    pub enforced: bool,
    /// One line, e.g. `landlock workspace-write (.git and .arbor read-only, tcp blocked, socket
    /// filter: unix and udp only)`, or `none`.
    pub label: String,
    /// Details and limits, one sentence each.
    pub notes: Vec<String>,
}

/// The status of `mode` on this machine with the network blocked (the default).
pub fn sandbox_status(mode: SandboxMode) -> SandboxStatus {
    describe(mode, false, Support::get()).0
}

/// The sandbox as a [`Launcher`]. Build it once per (mode, workspace, network) and share it:
/// construction probes the kernel (cached per process), `prepare` builds the ruleset of each
/// command before it is spawned.
#[derive(Debug)]
pub struct SandboxLauncher {
    mode: SandboxMode,
    workspace: PathBuf,
    allow_network: bool,
    /// More paths that stay read-only (the arbor home), wherever they are.
    extra_protected: Vec<PathBuf>,
    /// The workspace stays writable even when it lies inside one of those (a worktree agent's
    /// worktree in the home).
    writable_workspace: bool,
    status: SandboxStatus,
    protection: Option<Protection>,
    support: Support,
}

/// How `.git` and `.arbor` are kept read-only in `workspace-write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protection {
    Mounts(MountStrategy),
    PerEntry,
}

/// What this machine offers, found once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Support {
    landlock: Landlock,
    /// The first mount-namespace strategy that worked, if any.
    mounts: Option<MountStrategy>,
    /// The process runs with root's capabilities, which the sandbox must drop.
    root: bool,
    /// The socket filter of a closed network can be installed here (`seccomp.rs`).
    socket_filter: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Landlock {
    Abi(i32),
    NotEnabled,
    NotImplemented,
}

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask `landlock_create_ruleset` for the ABI version.
const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;

impl Support {
    fn get() -> Support {
        static SUPPORT: OnceLock<Support> = OnceLock::new();
        *SUPPORT.get_or_init(Support::detect)
    }

    fn detect() -> Support {
        // SAFETY: with a null attribute, size 0 and the version flag the call creates nothing
        // and returns the ABI version or an error.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        let landlock = if abi > 0 {
            Landlock::Abi(i32::try_from(abi).unwrap_or(i32::MAX))
        } else if io::Error::last_os_error().raw_os_error() == Some(libc::EOPNOTSUPP) {
            Landlock::NotEnabled
        } else {
            Landlock::NotImplemented
        };
        let probe_dir = std::env::temp_dir();
        let probe_dir = if probe_dir.is_dir() {
            probe_dir
        } else {
            PathBuf::from("/")
        };
        let mounts = [MountStrategy::MountNs, MountStrategy::UserAndMountNs]
            .into_iter()
            .find(|&strategy| MountPlan::probe(strategy, &probe_dir));
        // SAFETY: geteuid cannot fail and touches no memory.
        let root = unsafe { libc::geteuid() } == 0;
        Support {
            landlock,
            mounts,
            root,
            socket_filter: seccomp::probe(),
        }
    }
}

impl SandboxLauncher {
    /// A launcher for `mode` with `workspace` as the writable root of `workspace-write`.
    pub fn new(mode: SandboxMode, workspace: impl Into<PathBuf>, allow_network: bool) -> Self {
        Self::with_support(mode, workspace.into(), allow_network, Support::get())
    }

    pub(crate) fn with_support(
        mode: SandboxMode,
        workspace: PathBuf,
        allow_network: bool,
        support: Support,
    ) -> Self {
        let (status, protection) = describe(mode, allow_network, support);
        Self {
            mode,
            workspace,
            allow_network,
            extra_protected: Vec::new(),
            writable_workspace: false,
            status,
            protection,
            support,
        }
    }

    /// Keeps `paths` (and everything under them) read-only too in `workspace-write`, wherever
    /// they are: arbor's home, whose store holds the approvals, must never be writable from a
    /// sandbox, even when it lies in the workspace or a temp dir.
    pub fn protecting(mut self, paths: Vec<PathBuf>) -> Self {
        if self.status.enforced && self.mode == SandboxMode::WorkspaceWrite {
            for path in &paths {
                self.status.notes.push(format!(
                    "{} stays read-only wherever it lies (the arbor home)",
                    path.display()
                ));
            }
        }
        self.extra_protected = paths;
        self
    }

    /// Keeps `paths` read-only too, like [`SandboxLauncher::protecting`]; `why` says what they
    /// are in the status notes.
    pub fn also_read_only(mut self, paths: Vec<PathBuf>, why: &str) -> Self {
        if self.status.enforced && self.mode == SandboxMode::WorkspaceWrite {
            for path in &paths {
                self.status.notes.push(format!(
                    "{} stays read-only wherever it lies ({why})",
                    path.display()
                ));
            }
        }
        self.extra_protected.extend(paths);
        self
    }

    /// Keeps the workspace writable even where it lies inside a path kept read-only (a worktree
    /// agent's worktree inside the arbor home): in the private mount namespace it is bound
    /// again, writable, over the read-only mount, its own `.git` and `.arbor` still read-only.
    pub fn writable_workspace(mut self) -> Self {
        if self.status.enforced && self.mode == SandboxMode::WorkspaceWrite {
            self.status.notes.push(format!(
                "{} stays writable inside the read-only paths around it (the agent's own \
                 worktree)",
                self.workspace.display()
            ));
        }
        self.writable_workspace = true;
        self
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn allow_network(&self) -> bool {
        self.allow_network
    }

    /// What this launcher enforces.
    pub fn status(&self) -> &SandboxStatus {
        &self.status
    }

    /// Everything the child will do, built now in the parent; `None` when nothing is enforced.
    fn child_plan(&self, cwd: Option<&Path>) -> Result<Option<ChildPlan>, ToolError> {
        let Landlock::Abi(abi) = self.support.landlock else {
            return Ok(None);
        };
        if !self.status.enforced {
            return Ok(None);
        }
        let mut grants = Grants {
            abi,
            writable: Vec::new(),
            block_network: !self.allow_network,
        };
        let mut mounts = None;
        if self.mode == SandboxMode::WorkspaceWrite {
            // Canonical paths, so that a workspace reached through a symbolic link is still
            // recognised inside a temp dir.
            let canonical = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
            let roots: Vec<PathBuf> = writable_roots(&self.workspace)
                .into_iter()
                .map(canonical)
                .collect();
            let workspace = canonical(self.workspace.clone());
            let mut protected = protected_paths(&workspace, &roots);
            for extra in &self.extra_protected {
                let extra = canonical(extra.clone());
                // Outside every writable root it is read-only anyway.
                let writable = roots.iter().any(|root| extra.starts_with(root));
                if writable && extra.exists() && !protected.contains(&extra) {
                    protected.push(extra);
                }
            }
            // A workspace inside a read-only path is bound again, writable, over it.
            let reopen: Vec<&Path> = (self.writable_workspace
                && protected
                    .iter()
                    .any(|p| workspace != *p && workspace.starts_with(p)))
            .then_some(workspace.as_path())
            .into_iter()
            .collect();
            match self.protection {
                Some(Protection::Mounts(strategy)) => {
                    let protected: Vec<&Path> = protected.iter().map(PathBuf::as_path).collect();
                    let cwd = cwd
                        .map(std::path::absolute)
                        .transpose()
                        .map_err(ToolError::Mounts)?;
                    mounts = Some(
                        MountPlan::new(strategy, &protected, &reopen, cwd.as_deref())
                            .map_err(ToolError::Mounts)?,
                    );
                    grants.writable = roots;
                }
                Some(Protection::PerEntry) | None => {
                    grants.writable = ruleset::per_entry_grants(&roots, &protected)?;
                }
            }
        }
        Ok(Some(ChildPlan {
            mounts,
            drop_caps: self.support.root.then(|| CapDrop::new(!self.allow_network)),
            ruleset: grants.build()?,
            socket_filter: if self.allow_network || !self.support.socket_filter {
                None
            } else {
                seccomp::program()
            },
        }))
    }
}

/// What stays read-only: `.git` and `.arbor` of `workspace`, those that exist, and when the
/// workspace has no `.git` of its own, the `.git` of the repository enclosing it if that lies
/// in a writable root (a workspace that is a subdirectory of a repository under `/tmp`).
fn protected_paths(workspace: &Path, roots: &[PathBuf]) -> Vec<PathBuf> {
    let exists = |path: &Path| path.symlink_metadata().is_ok();
    let mut protected: Vec<PathBuf> = PROTECTED_ENTRIES
        .iter()
        .map(|name| workspace.join(name))
        .filter(|path| exists(path))
        .collect();
    if !exists(&workspace.join(".git")) {
        let enclosing = workspace
            .ancestors()
            .skip(1)
            .map(|dir| dir.join(".git"))
            .find(|git| exists(git));
        if let Some(git) = enclosing
            && roots.iter().any(|root| git.starts_with(root))
        {
            protected.push(git);
        }
    }
    protected
}

/// Set in the environment of every command a [`SandboxLauncher`] starts (to its label): arbor
/// refuses to answer approvals, or to trust a workspace, from such a command.
pub const SANDBOX_ENV: &str = "ARBOR_SANDBOX";

impl Launcher for SandboxLauncher {
    fn prepare(&self, cmd: &mut Command) -> io::Result<()> {
        cmd.env(SANDBOX_ENV, &self.status.label);
        let Some(plan) = self.child_plan(cmd.get_current_dir())? else {
            return Ok(());
        };
        // SAFETY: the hook runs in the forked child before exec. `ChildPlan::apply` only makes
        // system calls on data built above (C strings, flags, an open ruleset fd): no
        // allocation, no locks. Any failure is returned, so the command does not start.
        unsafe {
            cmd.pre_exec(move || plan.apply());
        }
        Ok(())
    }

    fn sandbox_label(&self) -> &str {
        &self.status.label
    }
}

/// The temp dirs a `workspace-write` command may write besides its workspace, those that
/// exist: `/tmp`, `$TMPDIR` (when absolute and not `/`) and `/dev/shm`.
pub fn temp_roots() -> Vec<PathBuf> {
    let mut roots = vec![PathBuf::from("/tmp")];
    if let Some(tmpdir) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && tmpdir.is_absolute()
        && tmpdir != Path::new("/")
    {
        roots.push(tmpdir);
    }
    roots.push(PathBuf::from("/dev/shm"));
    roots.retain(|root| root.is_dir());
    roots.dedup();
    roots
}

/// The workspace and the temp dirs ([`temp_roots`]).
fn writable_roots(workspace: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = workspace
        .is_dir()
        .then(|| workspace.to_path_buf())
        .into_iter()
        .collect();
    roots.extend(temp_roots().into_iter().filter(|root| root != workspace));
    roots
}
