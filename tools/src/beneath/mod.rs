//! Files opened relative to a handle on a directory (the workspace, a merge's target
//! checkout), never through a symbolic link, so that no link swapped in at any moment can lead
//! a read or a write elsewhere. `apply_patch` in the sandbox and every write of a worktree
//! merge go through it.
//!
//! Paths are resolved by `openat2(2)` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS` from the directory handle, one system call for the whole path; where
//! the kernel has no `openat2` (before Linux 5.6, or a seccomp filter refusing it) the path is
//! walked one component at a time with `openat(O_NOFOLLOW)` from the handle, which is as safe.
//! Missing directories are created by the walk (`mkdirat`), each relative to the directory
//! handle opened before it. A file is written as a new file next to it, renamed over the old one
//! (keeping its permission bits), so a hard link to a file elsewhere is never written through.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

mod dir;

pub use dir::Dir;

/// `struct open_how` of `linux/openat2.h` (libc's is non-exhaustive).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

const RESOLVE: u64 =
    libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;

/// Set once `openat2` turned out to be missing: every later path is walked.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Numbers the temporary files of writes in this process.
static TEMP: AtomicU64 = AtomicU64::new(0);

/// What a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Other,
}

/// What a path names when its last component may be a link ([`Root::entry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    File,
    Dir,
    Link,
    Other,
}

/// A handle on a directory; every path is opened beneath it.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
}

impl Root {
    /// Opens `dir` (which may itself be reached through symbolic links: it is the workspace
    /// the user chose).
    pub fn open(dir: &Path) -> io::Result<Self> {
        let path = c_name(dir.as_os_str())?;
        // SAFETY: a valid C string; the fd is owned below.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        Ok(Self { fd: owned(fd)? })
    }

    /// What `rel` is, `None` when it does not exist.
    pub fn kind(&self, rel: &Path) -> io::Result<Option<Kind>> {
        match self.open_path(rel, libc::O_PATH, 0) {
            Ok(fd) => Ok(Some(kind_of(&fd)?)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// What `rel` is, its last component possibly a link (which is not followed); `None`
    /// when it does not exist. A link before the last component is an error.
    pub fn entry(&self, rel: &Path) -> io::Result<Option<Entry>> {
        let (dir, name) = split(rel)?;
        let parent = match self.dir(dir) {
            Ok(parent) => parent,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        Ok(
            stat_at(&parent, &c_name(name)?)?.map(|st| match st.st_mode & libc::S_IFMT {
                libc::S_IFREG => Entry::File,
                libc::S_IFDIR => Entry::Dir,
                libc::S_IFLNK => Entry::Link,
                _ => Entry::Other,
            }),
        )
    }

    /// The text of the regular file `rel`.
    pub fn read(&self, rel: &Path) -> io::Result<String> {
        String::from_utf8(self.read_bytes(rel)?)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))
    }

    /// The bytes of the regular file `rel`.
    pub fn read_bytes(&self, rel: &Path) -> io::Result<Vec<u8>> {
        // Non-blocking, so that a FIFO put there does not hang the caller.
        let fd = self.open_path(rel, libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
        if kind_of(&fd)? != Kind::File {
            return Err(io::Error::other("not a regular file"));
        }
        let mut bytes = Vec::new();
        File::from(fd).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The target of the symbolic link `rel` (its directories followed by no link).
    pub fn read_link(&self, rel: &Path) -> io::Result<Vec<u8>> {
        let (dir, name) = split(rel)?;
        let parent = self.dir(dir)?;
        let name = c_name(name)?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
        // SAFETY: a valid C string relative to an fd we own, and a buffer of the length given.
        let n = unsafe {
            libc::readlinkat(
                parent.as_raw_fd(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        buf.truncate(n);
        Ok(buf)
    }

    /// The directory `rel` (the root itself when empty), as a handle.
    pub fn open_dir(&self, rel: &Path) -> io::Result<Dir> {
        Ok(Dir::new(self.dir(rel)?, rel.to_path_buf()))
    }

    /// The directory `rel`, created with its missing parents one component at a time; the
    /// directories made are pushed to `made`, parents first.
    pub fn make_dir_all(&self, rel: &Path, made: &mut Vec<std::path::PathBuf>) -> io::Result<Dir> {
        let fd = self.make_dirs_noting(rel, Some(made))?;
        Ok(Dir::new(fd, rel.to_path_buf()))
    }

    /// Writes `contents` to `rel`, creating missing directories: into a new file in the same
    /// directory, renamed over `rel`.
    pub fn write(&self, rel: &Path, contents: &str) -> io::Result<()> {
        let (dir, name) = split(rel)?;
        let parent = self.make_dirs(dir)?;
        let name = c_name(name)?;
        let old = stat_at(&parent, &name)?;
        if let Some(old) = &old
            && old.st_mode & libc::S_IFMT == libc::S_IFLNK
        {
            return Err(through_link());
        }
        let temp = c_name(OsStr::new(&format!(
            ".arbor-patch-{}-{}.tmp",
            std::process::id(),
            TEMP.fetch_add(1, Ordering::Relaxed)
        )))?;
        // SAFETY: a valid C string relative to an fd we own; the fd is owned below.
        let fd = unsafe {
            libc::openat(
                parent.as_raw_fd(),
                temp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        };
        let mut file = File::from(owned(fd)?);
        let written = file.write_all(contents.as_bytes()).and_then(|()| {
            if let Some(old) = &old {
                keep_mode_and_owner(&file, old)?;
            }
            Ok(())
        });
        drop(file);
        let renamed = written.and_then(|()| {
            // SAFETY: valid C strings relative to an fd we own.
            check(unsafe {
                libc::renameat(
                    parent.as_raw_fd(),
                    temp.as_ptr(),
                    parent.as_raw_fd(),
                    name.as_ptr(),
                )
            })
        });
        if renamed.is_err() {
            // SAFETY: as above; removes the temporary file we created.
            unsafe { libc::unlinkat(parent.as_raw_fd(), temp.as_ptr(), 0) };
        }
        renamed
    }

    /// Removes the file `rel`; one already gone is fine.
    pub fn remove(&self, rel: &Path) -> io::Result<()> {
        let (dir, name) = split(rel)?;
        let parent = match self.dir(dir) {
            Ok(parent) => parent,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err),
        };
        let name = c_name(name)?;
        // SAFETY: a valid C string relative to an fd we own. unlinkat never follows a link.
        match check(unsafe { libc::unlinkat(parent.as_raw_fd(), name.as_ptr(), 0) }) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// The directory `rel` (the root itself when empty).
    pub(super) fn dir(&self, rel: &Path) -> io::Result<OwnedFd> {
        self.open_path(rel, libc::O_PATH | libc::O_DIRECTORY, 0)
    }

    /// The directory `rel`, created with its missing parents, one component at a time.
    fn make_dirs(&self, rel: &Path) -> io::Result<OwnedFd> {
        self.make_dirs_noting(rel, None)
    }

    fn make_dirs_noting(
        &self,
        rel: &Path,
        mut made: Option<&mut Vec<std::path::PathBuf>>,
    ) -> io::Result<OwnedFd> {
        match self.dir(rel) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            other => return other,
        }
        let mut current = reopen(&self.fd)?;
        let mut at = std::path::PathBuf::new();
        for part in components(rel)? {
            let name = c_name(part)?;
            at.push(part);
            let flags = libc::O_PATH | libc::O_DIRECTORY;
            current = match open_one(&current, &name, flags, 0) {
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    // SAFETY: a valid C string relative to an fd we own.
                    match check(unsafe { libc::mkdirat(current.as_raw_fd(), name.as_ptr(), 0o777) })
                    {
                        Err(err) if err.kind() != io::ErrorKind::AlreadyExists => return Err(err),
                        Err(_) => {}
                        Ok(()) => {
                            if let Some(made) = made.as_mut() {
                                made.push(at.clone());
                            }
                        }
                    }
                    open_one(&current, &name, flags, 0)?
                }
                other => other?,
            };
        }
        Ok(current)
    }

    /// Opens `rel` beneath the root, following no symbolic link.
    fn open_path(&self, rel: &Path, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
        let parts = components(rel)?;
        if parts.is_empty() {
            return reopen(&self.fd);
        }
        if !NO_OPENAT2.load(Ordering::Relaxed) && !force_walk() {
            match openat2(&self.fd, rel, flags, mode) {
                Err(err) if matches!(err.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                }
                other => return other,
            }
        }
        let (last, dirs) = parts.split_last().ok_or_else(through_link)?;
        let mut current = reopen(&self.fd)?;
        for part in dirs {
            current = open_one(
                &current,
                &c_name(part)?,
                libc::O_PATH | libc::O_DIRECTORY,
                0,
            )?;
        }
        open_one(&current, &c_name(last)?, flags, mode)
    }
}

#[cfg(test)]
thread_local! {
    /// Tests walk paths with `openat` on their own thread, as where `openat2` is missing.
    pub static FORCE_WALK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn force_walk() -> bool {
    FORCE_WALK.with(std::cell::Cell::get)
}

#[cfg(not(test))]
fn force_walk() -> bool {
    false
}

fn openat2(dir: &OwnedFd, rel: &Path, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    let path = c_name(rel.as_os_str())?;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: u64::from(mode),
        resolve: RESOLVE,
    };
    // SAFETY: a valid C string, a valid `open_how` of the size passed; the fd is owned below.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    owned(libc::c_int::try_from(fd).unwrap_or(-1)).map_err(|err| match err.raw_os_error() {
        // A link on the way (ELOOP), or a way out of the root (EXDEV).
        Some(libc::ELOOP | libc::EXDEV) => through_link(),
        _ => err,
    })
}

/// One component, relative to `dir`, not following a link.
fn open_one(dir: &OwnedFd, name: &CString, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    // SAFETY: a valid C string relative to an fd we own; the fd is owned below.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    owned(fd).map_err(|err| match err.raw_os_error() {
        // `O_PATH | O_NOFOLLOW | O_DIRECTORY` on a link says "not a directory".
        Some(libc::ENOTDIR | libc::ELOOP) if is_link(dir, name) => through_link(),
        _ => err,
    })
}

/// The error of a path that goes through a symbolic link (`ELOOP`, named for the caller).
pub fn through_link() -> io::Error {
    io::Error::from_raw_os_error(libc::ELOOP)
}

fn is_link(dir: &OwnedFd, name: &CString) -> bool {
    stat_at(dir, name)
        .is_ok_and(|st| st.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK))
}

fn stat_at(dir: &OwnedFd, name: &CString) -> io::Result<Option<libc::stat>> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string relative to an fd we own, and a valid out pointer.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    match check(rc) {
        Ok(()) => Ok(Some(st)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

pub(super) fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: an fd we own and a valid out pointer.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

fn kind_of(fd: &OwnedFd) -> io::Result<Kind> {
    match fstat(fd)?.st_mode & libc::S_IFMT {
        libc::S_IFREG => Ok(Kind::File),
        // `O_PATH | O_NOFOLLOW` hands out the link itself.
        libc::S_IFLNK => Err(through_link()),
        _ => Ok(Kind::Other),
    }
}

/// Gives the new file the old one's permission bits (and, when this process may, its owner).
fn keep_mode_and_owner(file: &File, old: &libc::stat) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: geteuid cannot fail; fchown on an fd we own; a failure leaves our own ownership.
    unsafe {
        if libc::geteuid() == 0 {
            libc::fchown(fd, old.st_uid, old.st_gid);
        }
    }
    // SAFETY: fchmod on an fd we own.
    check(unsafe { libc::fchmod(fd, old.st_mode & 0o7777) })
}

/// A second handle on the same directory.
fn reopen(fd: &OwnedFd) -> io::Result<OwnedFd> {
    fd.try_clone()
}

/// `rel` split into its directory and its last component.
fn split(rel: &Path) -> io::Result<(&Path, &OsStr)> {
    match (rel.parent(), rel.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file path",
        )),
    }
}

/// The normal components of `rel`; anything else (`..`, a root) is refused.
fn components(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(part) => Ok(part),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "path leaves the workspace",
            )),
        })
        .collect()
}

pub(super) fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(io::Error::from)
}

pub(super) fn owned(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd returned by the kernel, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(super) fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
