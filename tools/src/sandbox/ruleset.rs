//! Building the Landlock ruleset of one command, in the parent, before `fork`.
//!
//! Read and execute are allowed everywhere; writing is allowed only on the grants given here
//! (device files such as `/dev/null`, and in `workspace-write` the workspace and temp dirs, or
//! their entries one by one when `.git` and `.arbor` cannot be bind-mounted). Creating
//! character or block devices is never allowed. Without `allow_network`, TCP bind and connect
//! are denied (ABI 4); abstract unix sockets and signals to processes outside the sandbox are
//! scoped (ABI 6).

use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::ToolError;
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, make_bitflags,
};

/// Device files every sandboxed command may read and write.
pub(crate) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The newest ABI whose rights this code asks for; a newer kernel is used at this level.
pub(crate) const VETTED_ABI: i32 = 6;

impl From<ToolError> for io::Error {
    fn from(err: ToolError) -> Self {
        io::Error::other(err)
    }
}

/// What one ruleset grants.
#[derive(Debug)]
pub(crate) struct Grants {
    /// The kernel's ABI, capped at [`VETTED_ABI`].
    pub(crate) abi: i32,
    /// Paths (directories or files) where everything but device creation is allowed.
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) block_network: bool,
}

impl Grants {
    /// Creates the ruleset and returns its file descriptor, ready for `landlock_restrict_self`.
    /// Every right of the ABI is a hard requirement: the kernel reported that ABI, so a right it
    /// then refuses is an error, never a silently weaker sandbox.
    pub(crate) fn build(&self) -> Result<OwnedFd, ToolError> {
        let abi = ABI::from(self.abi.min(VETTED_ABI));
        let handled = AccessFs::from_all(abi) & !BitFlags::from(AccessFs::IoctlDev);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(handled)?;
        if self.block_network && abi >= ABI::V4 {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
        if abi >= ABI::V6 {
            let scopes = if self.block_network {
                Scope::Signal | Scope::AbstractUnixSocket
            } else {
                BitFlags::from(Scope::Signal)
            };
            ruleset = ruleset.scope(scopes)?;
        }
        let mut created = ruleset.create()?;
        created = created.add_rule(PathBeneath::new(open("/")?, AccessFs::from_read(abi)))?;

        let file_rights = AccessFs::from_file(abi) & handled;
        let device_rights =
            file_rights & make_bitflags!(AccessFs::{ReadFile | WriteFile | Truncate});
        for device in DEVICES {
            if Path::new(device).exists() {
                created = created.add_rule(PathBeneath::new(open(device)?, device_rights))?;
            }
        }

        let write_rights = handled & !make_bitflags!(AccessFs::{MakeChar | MakeBlock});
        for path in &self.writable {
            let rights = if path.is_dir() {
                write_rights
            } else {
                write_rights & file_rights
            };
            let fd = match open(path) {
                Ok(fd) => fd,
                // An entry of a shared temp dir removed since it was listed needs no grant.
                Err(_) if path.symlink_metadata().is_err() => continue,
                Err(err) => return Err(err),
            };
            created = created.add_rule(PathBeneath::new(fd, rights))?;
        }
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or(ToolError::NoRuleset)
    }
}

fn open(path: impl AsRef<Path>) -> Result<PathFd, ToolError> {
    PathFd::new(path.as_ref()).map_err(|source| ToolError::LandlockOpen {
        path: path.as_ref().to_path_buf(),
        source,
    })
}

/// The write grants that leave `protected` out when Landlock alone must do it: each root whole
/// when nothing protected is beneath it, otherwise its entries one by one (recursing towards
/// the protected paths), the root directory itself not writable. Symbolic links are never
/// granted: a grant follows the link to its target.
pub(crate) fn per_entry_grants(
    roots: &[PathBuf],
    protected: &[PathBuf],
) -> Result<Vec<PathBuf>, ToolError> {
    let mut grants = Vec::new();
    for root in roots {
        walk(root, protected, &mut grants)?;
    }
    Ok(grants)
}

fn walk(dir: &Path, protected: &[PathBuf], grants: &mut Vec<PathBuf>) -> Result<(), ToolError> {
    if protected.iter().any(|p| p == dir) {
        return Ok(());
    }
    if !protected.iter().any(|p| p.starts_with(dir)) {
        grants.push(dir.to_path_buf());
        return Ok(());
    }
    let list_error = |source| ToolError::LandlockList {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        // Removed since its parent was listed (temp dirs are shared): nothing to grant.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(list_error(e)),
    };
    for entry in entries {
        let entry = entry.map_err(list_error)?;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&entry.path(), protected, grants)?;
        } else if !kind.is_symlink() && !protected.contains(&entry.path()) {
            grants.push(entry.path());
        }
    }
    Ok(())
}
