//! A handle on one directory beneath a [`Root`]: the single-component `*at` calls a worktree
//! merge stages its files with, and the check that the directory is still where it was.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Root, c_name, check, fstat, owned};

/// A handle on a directory beneath a [`Root`], and the path it was opened at. Names given to
/// its methods are single components, acted on relative to the handle: a link swapped in for
/// the directory after it was opened does not move them.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    rel: PathBuf,
}

impl Dir {
    pub(super) fn new(fd: OwnedFd, rel: PathBuf) -> Self {
        Self { fd, rel }
    }

    /// The path it was opened at, relative to its root.
    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// Creates the new file `name` (it must not exist) holding `bytes`, with permission bits
    /// `mode` (less the umask).
    pub fn create_file(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        let name = c_name(name)?;
        // SAFETY: a valid C string relative to an fd we own; the fd is owned below.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        let written = File::from(owned(fd)?).write_all(bytes);
        if written.is_err() {
            // SAFETY: as above; removes the file we created.
            unsafe { libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), 0) };
        }
        written
    }

    /// Creates the symbolic link `name` to `target` (the link is made, never followed).
    pub fn create_symlink(&self, name: &OsStr, target: &[u8]) -> io::Result<()> {
        let (name, target) = (c_name(name)?, c_name(OsStr::from_bytes(target))?);
        // SAFETY: valid C strings, the name relative to an fd we own.
        check(unsafe { libc::symlinkat(target.as_ptr(), self.fd.as_raw_fd(), name.as_ptr()) })
    }

    /// Renames `from` over `to`, both in this directory (whatever is at `to` is replaced, a link
    /// there included, never followed).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (c_name(from)?, c_name(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid C strings relative to an fd we own.
        check(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) })
    }

    /// Removes the entry `name` (a file or a link, never what a link points to); with `dir`, the
    /// empty directory `name`. One already gone is fine.
    pub fn remove(&self, name: &OsStr, dir: bool) -> io::Result<()> {
        let name = c_name(name)?;
        let flags = if dir { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: a valid C string relative to an fd we own. unlinkat never follows a link.
        match check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), flags) }) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Whether this handle's directory is still the one at its path beneath `root` (no
    /// directory on the way was swapped or moved since it was opened).
    pub fn still_at(&self, root: &Root) -> io::Result<bool> {
        let now = match root.dir(&self.rel) {
            Ok(now) => now,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => return Ok(false),
            Err(err) => return Err(err),
        };
        let (a, b) = (fstat(&self.fd)?, fstat(&now)?);
        Ok(a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    }
}
