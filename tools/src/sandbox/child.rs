//! What the child does between `fork` and `exec`: private mounts, capabilities, Landlock, the
//! socket filter.
//!
//! Everything is built in the parent ([`ChildPlan::apply`] only reads it): paths are C strings
//! already, flags are computed, the Landlock ruleset is a ready file descriptor. The child makes
//! raw system calls only, without allocating or taking locks, so it is safe to run after `fork`
//! in a multi-threaded process.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use libc::c_ulong;

/// `ST_RELATIME` (statvfs): not exported by `libc` on every Linux target.
const ST_RELATIME: c_ulong = 4096;

/// Capabilities a sandboxed root must not keep: they reach past Landlock (loading modules, raw
/// devices, rebooting, mounting, tracing, firewalling, …). Numbers from `linux/capability.h`.
const DANGEROUS_CAPS: &[u32] = &[
    9,  // CAP_LINUX_IMMUTABLE
    12, // CAP_NET_ADMIN
    16, // CAP_SYS_MODULE
    17, // CAP_SYS_RAWIO
    19, // CAP_SYS_PTRACE
    20, // CAP_SYS_PACCT
    21, // CAP_SYS_ADMIN
    22, // CAP_SYS_BOOT
    25, // CAP_SYS_TIME
    26, // CAP_SYS_TTY_CONFIG
    27, // CAP_MKNOD
    30, // CAP_AUDIT_CONTROL
    32, // CAP_MAC_OVERRIDE
    33, // CAP_MAC_ADMIN
    34, // CAP_SYSLOG
    35, // CAP_WAKE_ALARM
    36, // CAP_BLOCK_SUSPEND
    38, // CAP_PERFMON
    39, // CAP_BPF
    40, // CAP_CHECKPOINT_RESTORE
];
/// CAP_NET_RAW: raw sockets go around Landlock's TCP rules; dropped when the network is blocked.
const CAP_NET_RAW: u32 = 13;

/// How the private mount namespace is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MountStrategy {
    /// `unshare(CLONE_NEWNS)`: needs CAP_SYS_ADMIN (root on the host).
    MountNs,
    /// `unshare(CLONE_NEWUSER | CLONE_NEWNS)` with the caller's uid and gid mapped to
    /// themselves: for unprivileged users where user namespaces are allowed.
    UserAndMountNs,
}

/// Bind-mount some paths read-only over themselves in a private mount namespace.
#[derive(Debug)]
pub(crate) struct MountPlan {
    strategy: MountStrategy,
    /// `/proc/self/uid_map` and `gid_map` contents, for [`MountStrategy::UserAndMountNs`].
    uid_map: CString,
    gid_map: CString,
    /// Each path with the flags of its read-only remount (the original mount's locked flags
    /// kept, as a user namespace requires).
    protect: Vec<(CString, c_ulong)>,
    /// Mount points below a protected path (the recursive bind brings them along writable):
    /// each remounted read-only too, with its own flags.
    submounts: Vec<(CString, c_ulong)>,
    /// Paths inside protected ones bound again over themselves, writable (with their flags),
    /// once the protected paths are read-only; read-only mounts below them stay read-only.
    reopen: Vec<(CString, c_ulong)>,
    /// The working directory, entered again once the mounts are in place so that a command
    /// started inside `.git` sees the read-only mount too.
    cwd: Option<CString>,
}

impl MountPlan {
    pub(crate) fn new(
        strategy: MountStrategy,
        protect: &[&Path],
        reopen: &[&Path],
        cwd: Option<&Path>,
    ) -> io::Result<Self> {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let submounts = protect
            .iter()
            .flat_map(|path| mounts_below(path))
            .filter(|mount| !read_only_already(mount))
            .map(|mount| Ok((cstring(&mount)?, remount_flags(&mount)?)))
            .collect::<io::Result<Vec<_>>>()?;
        let with_flags = |paths: &[&Path]| {
            paths
                .iter()
                .map(|path| Ok((cstring(path)?, remount_flags(path)?)))
                .collect::<io::Result<Vec<_>>>()
        };
        let protect = with_flags(protect)?;
        let reopen = with_flags(reopen)?;
        Ok(Self {
            submounts,
            strategy,
            uid_map: CString::new(format!("{uid} {uid} 1\n"))?,
            gid_map: CString::new(format!("{gid} {gid} 1\n"))?,
            protect,
            reopen,
            cwd: cwd.map(cstring).transpose()?,
        })
    }

    /// In the child: enter the new namespaces and make the protected paths read-only.
    fn apply(&self) -> io::Result<()> {
        let flags = match self.strategy {
            MountStrategy::MountNs => libc::CLONE_NEWNS,
            MountStrategy::UserAndMountNs => libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
        };
        // SAFETY: unshare only changes this (single-threaded, forked) process's namespaces.
        check(unsafe { libc::unshare(flags) })?;
        if self.strategy == MountStrategy::UserAndMountNs {
            write_file(c"/proc/self/setgroups", c"deny")?;
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            write_file(c"/proc/self/gid_map", &self.gid_map)?;
        }
        // Nothing mounted here may propagate back to the parent's namespace.
        // SAFETY: the strings are valid C strings; null source, type and data are allowed.
        check(unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        })?;
        for (path, flags) in &self.protect {
            bind_onto_itself(path)?;
            remount(path, libc::MS_RDONLY | flags)?;
        }
        for (path, flags) in &self.submounts {
            // The bind of a mount below a protected path, read-only too.
            remount(path, libc::MS_RDONLY | flags)?;
        }
        for (path, flags) in &self.reopen {
            // Read-only mounts below it come along as they are; only its top mount is made
            // writable again.
            bind_onto_itself(path)?;
            remount(path, *flags)?;
        }
        if let Some(cwd) = &self.cwd {
            // SAFETY: a valid C string.
            check(unsafe { libc::chdir(cwd.as_ptr()) })?;
        }
        Ok(())
    }

    /// Whether this strategy works here: tries it on `path` in a forked child that then exits.
    pub(crate) fn probe(strategy: MountStrategy, path: &Path) -> bool {
        let Ok(plan) = MountPlan::new(strategy, &[path], &[], None) else {
            return false;
        };
        // SAFETY: the child only makes system calls on data built before the fork, then
        // leaves with _exit (no destructors, no atexit handlers, no locks).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = if plan.apply().is_ok() { 0 } else { 1 };
            // SAFETY: ends the forked child at once.
            unsafe { libc::_exit(code) };
        }
        if pid < 0 {
            return false;
        }
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child; `status` is a valid out pointer.
            let got = unsafe { libc::waitpid(pid, &mut status, 0) };
            if got == pid {
                return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            }
            if got < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return false;
            }
        }
    }
}

/// Everything the child does before `exec`, in order: mounts, capabilities, no_new_privs,
/// Landlock, the socket filter.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    pub(crate) mounts: Option<MountPlan>,
    /// Capabilities to drop (bounding, ambient, inheritable, permitted, effective) when the
    /// command would otherwise run with root's.
    pub(crate) drop_caps: Option<CapDrop>,
    pub(crate) ruleset: OwnedFd,
    /// The seccomp program of a closed network, built before the fork.
    pub(crate) socket_filter: Option<&'static [seccompiler::sock_filter]>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CapDrop {
    /// One bit per capability number (CAP_LAST_CAP is below 64).
    mask: u64,
}

impl CapDrop {
    pub(crate) fn new(network_blocked: bool) -> Self {
        let mut mask = DANGEROUS_CAPS.iter().fold(0u64, |m, &cap| m | 1 << cap);
        if network_blocked {
            mask |= 1 << CAP_NET_RAW;
        }
        Self { mask }
    }

    fn apply(self) -> io::Result<()> {
        for cap in 0..64u32 {
            if self.mask & (1 << cap) != 0 {
                // SAFETY: prctl with integer arguments. A failure is fine: EINVAL means the
                // kernel does not know the capability, EPERM that we lack CAP_SETPCAP; then
                // clearing the permitted set below, with no_new_privs, still keeps `exec`
                // from granting it again.
                unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
            }
        }
        // SAFETY: prctl with integer arguments.
        check(unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            )
        })?;
        let mut header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let mut data = [CapData::default(); 2];
        // SAFETY: header and two data slots, as version 3 requires.
        check(unsafe {
            libc::syscall(
                libc::SYS_capget,
                &mut header as *mut CapHeader,
                data.as_mut_ptr(),
            ) as libc::c_int
        })?;
        let words = [self.mask as u32, (self.mask >> 32) as u32];
        for (slot, drop) in data.iter_mut().zip(words) {
            slot.effective &= !drop;
            slot.permitted &= !drop;
            slot.inheritable &= !drop;
        }
        // SAFETY: as above; only lowers the sets.
        check(unsafe {
            libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr())
                as libc::c_int
        })
    }
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

impl ChildPlan {
    /// In the child, just before `exec`. An error stops the command from starting: the
    /// sandbox is never silently skipped.
    pub(crate) fn apply(&self) -> io::Result<()> {
        if let Some(mounts) = &self.mounts {
            mounts.apply()?;
        }
        if let Some(caps) = self.drop_caps {
            caps.apply()?;
        }
        // SAFETY: prctl with integer arguments.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        // SAFETY: restricts this process with a ruleset fd we own; flags 0.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0u32,
            )
        };
        check(rc as libc::c_int)?;
        match self.socket_filter {
            Some(program) => super::seccomp::install(program),
            None => Ok(()),
        }
    }
}

/// A recursive bind mount of `path` onto itself.
fn bind_onto_itself(path: &CStr) -> io::Result<()> {
    // SAFETY: a valid C string; null type and data are allowed.
    check(unsafe {
        libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    })
}

/// Remounts the bind mount at `path` with `flags` (read-only when they say so).
fn remount(path: &CStr, flags: c_ulong) -> io::Result<()> {
    // SAFETY: a valid C string; null source, type and data are allowed.
    check(unsafe {
        libc::mount(
            std::ptr::null(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REMOUNT | flags,
            std::ptr::null(),
        )
    })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `text` to `path` with open/write/close (nothing that allocates).
fn write_file(path: &std::ffi::CStr, text: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: a valid C string path; the fd is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd)?;
    let bytes = text.to_bytes();
    // SAFETY: writes from a live buffer of the given length to our fd.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let result = if written < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    };
    // SAFETY: closes the fd opened above, once.
    unsafe { libc::close(fd) };
    result
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::from)
}

/// The flags a read-only remount of `path`'s mount must keep (nosuid, nodev, noexec, atime).
fn remount_flags(path: &Path) -> io::Result<c_ulong> {
    let c_path = cstring(path)?;
    // SAFETY: an all-zero statvfs is a valid value to be overwritten.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a valid out pointer.
    check(unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) })?;
    let keep = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(keep
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms))
}

/// The mount points strictly below `path`, from the mount table of this thread (the command
/// is forked from it), field 5 of `mountinfo` with its octal escapes such as `\040` undone.
fn mounts_below(path: &Path) -> Vec<std::path::PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/mountinfo")
        .or_else(|_| std::fs::read_to_string("/proc/self/mountinfo"))
    else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| std::path::PathBuf::from(std::ffi::OsString::from_vec(unescape(field))))
        .filter(|mount| mount != path && mount.starts_with(path))
        .collect()
}

/// `\ooo` octal escapes undone.
fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

/// Whether the mount at `path` is read-only already (nothing to remount).
fn read_only_already(path: &Path) -> bool {
    let Ok(c_path) = cstring(path) else {
        return false;
    };
    // SAFETY: an all-zero statvfs is a valid value to be overwritten.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a valid out pointer.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
    rc == 0 && stat.f_flag & libc::ST_RDONLY != 0
}
