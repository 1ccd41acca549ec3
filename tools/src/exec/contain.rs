//! Keeping hold of every process a command starts, `setsid` and double forks included.
//!
//! A process group is not enough: `setsid` (or `setpgid`) leaves it, and a process whose parent
//! exits is adopted by init. So each command runs under a small supervisor: the process arbor
//! spawns makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`) and forks; the child
//! becomes the command (its own process group, the launcher's sandbox, then `exec`), the parent
//! stays behind as the supervisor. Every descendant of the command that loses its parent is
//! adopted by the supervisor rather than by init, whatever session or group it moved to, so it
//! stays in the supervisor's subtree.
//!
//! The supervisor reports the command's pid, then its wait status and whether anything it
//! started still runs, on a pipe, and keeps running while any descendant lives. It reads a control pipe whose other end only arbor holds: when
//! that end closes (arbor kills the command, ends the session, or dies) it kills the command's
//! group, then, round after round, every process it has adopted, until it has no child left,
//! and exits. The supervisor ignores the usual termination signals; only `SIGKILL` ends it
//! early.
//!
//! Everything the supervisor runs happens in a child forked from a multi-threaded process: raw
//! system calls on stack buffers only, no allocation, no locks.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// How long a killing round waits for a child to be reaped before looking again, in ms.
const KILL_ROUND_MS: libc::c_int = 50;

/// The pipes between arbor and one command's supervisor, made before the spawn.
#[derive(Debug)]
pub(crate) struct Supervision {
    /// The supervisor's ends: it reads `control`, writes `report`.
    control_read: OwnedFd,
    report_write: OwnedFd,
    /// arbor's ends.
    control_write: OwnedFd,
    report_read: OwnedFd,
}

/// arbor's side of a running supervisor: closing `control` kills everything it holds.
#[derive(Debug)]
pub(crate) struct Supervisor {
    pub(crate) control: OwnedFd,
    pub(crate) report: OwnedFd,
}

impl Supervision {
    pub(crate) fn new() -> io::Result<Self> {
        let (control_read, control_write) = pipe()?;
        let (report_read, report_write) = pipe()?;
        Ok(Self {
            control_read,
            report_write,
            control_write,
            report_read,
        })
    }

    /// Installs the supervisor in `cmd`. It must be the first `pre_exec` hook: the hooks
    /// installed after it (the sandbox) run in the command only.
    pub(crate) fn install(&self, cmd: &mut Command) {
        let control = self.control_read.as_raw_fd();
        let report = self.report_write.as_raw_fd();
        // SAFETY: the hook runs in the forked child before exec and only makes system calls
        // on integers and stack buffers (see `split`); the supervisor branch never returns.
        unsafe {
            cmd.pre_exec(move || split(control, report));
        }
    }

    /// After the spawn: arbor keeps its ends and closes the supervisor's.
    pub(crate) fn started(self) -> Supervisor {
        Supervisor {
            control: self.control_write,
            report: self.report_read,
        }
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: two fresh descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// In the spawned child: become a subreaper and fork. The child returns (to the sandbox hooks
/// and `exec`); the parent supervises and never returns.
fn split(control: RawFd, report: RawFd) -> io::Result<()> {
    // SAFETY: an all-zero sigset is valid storage for sigemptyset.
    let mut chld: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: sigset functions on valid pointers; prctl with integer arguments.
    unsafe {
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        check(libc::sigprocmask(libc::SIG_BLOCK, &chld, &mut old))?;
        check(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
    }
    // SAFETY: fork in a single-threaded child; both branches only make system calls.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // The command: its own group (so the supervisor can kill it without killing itself)
        // and the signal mask it would have had.
        // SAFETY: system calls on this process only.
        unsafe {
            check(libc::setpgid(0, 0))?;
            check(libc::sigprocmask(
                libc::SIG_SETMASK,
                &old,
                std::ptr::null_mut(),
            ))?;
        }
        return Ok(());
    }
    supervise(pid, control, report, &chld)
}

/// The supervisor's life; ends the process.
fn supervise(command: libc::pid_t, control: RawFd, report: RawFd, chld: &libc::sigset_t) -> ! {
    write_int(report, command);
    // SAFETY: a valid sigset; -1 makes a new signalfd.
    let signals = unsafe { libc::signalfd(-1, chld, libc::SFD_CLOEXEC) };
    close_all_but(&[control, report, signals]);
    for signal in [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGQUIT,
        libc::SIGPIPE,
    ] {
        // SAFETY: an all-zero sigaction with SIG_IGN is a valid disposition.
        unsafe {
            let mut ignore: libc::sigaction = std::mem::zeroed();
            ignore.sa_sigaction = libc::SIG_IGN;
            libc::sigaction(signal, &ignore, std::ptr::null_mut());
        }
    }
    let mut reaped = false;
    let mut reported = false;
    let mut status = 0;
    let mut killing = false;
    loop {
        // Reap what has ended.
        let mut nothing_left = false;
        loop {
            let mut ended = 0;
            // SAFETY: a valid out pointer.
            let got = unsafe { libc::waitpid(-1, &mut ended, libc::WNOHANG) };
            if got == command {
                reaped = true;
                status = ended;
            } else if got == 0 {
                break;
            } else if got < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                // ECHILD: the command and everything it started are gone.
                nothing_left = true;
                break;
            }
        }
        if reaped && !reported {
            // The command's wait status, then whether anything it started still runs.
            write_int(report, status);
            write_int(report, libc::c_int::from(!nothing_left));
            reported = true;
        }
        if nothing_left {
            // SAFETY: ends this process at once.
            unsafe { libc::_exit(0) };
        }
        if killing {
            kill_everything(command, reaped);
        }
        let mut fds = [
            libc::pollfd {
                // Once killing, the closed control pipe would wake every poll at once.
                fd: if killing { -1 } else { control },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: signals,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Without a signalfd, look again now and then.
        let timeout = if killing || signals < 0 {
            KILL_ROUND_MS
        } else {
            -1
        };
        // SAFETY: two valid pollfds (a negative fd is ignored by poll).
        unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if fds[0].revents != 0 && !killing {
            killing = true;
            kill_everything(command, reaped);
        }
        if fds[1].revents != 0 {
            let mut info = [0u8; 128];
            // SAFETY: reads one signalfd_siginfo into a buffer of its size.
            unsafe { libc::read(signals, info.as_mut_ptr().cast(), info.len()) };
        }
    }
}

/// Kills the command's group (while its pid is still ours, so not reused), then every process
/// the supervisor has adopted: processes whose parent is the supervisor, found in `/proc`.
fn kill_everything(command: libc::pid_t, reaped: bool) {
    // SAFETY: kill and getpid take integers; a negative pid addresses the group.
    let me = unsafe {
        if !reaped {
            libc::kill(-command, libc::SIGKILL);
            libc::kill(command, libc::SIGKILL);
        }
        libc::getpid()
    };
    // SAFETY: a valid C string; the fd is closed below.
    let dir = unsafe {
        libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return;
    }
    let mut entries = [0u8; 4096];
    loop {
        // SAFETY: getdents64 fills at most `entries.len()` bytes of the buffer.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir,
                entries.as_mut_ptr(),
                entries.len(),
            )
        };
        if n <= 0 {
            break;
        }
        let n = n as usize;
        let mut at = 0;
        // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name (NUL-terminated)
        while at + 19 < n {
            let reclen = u16::from_ne_bytes([entries[at + 16], entries[at + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            let name = &entries[at + 19..(at + reclen).min(n)];
            if let Some(pid) = parse_pid(name)
                && pid != me
                && parent_of(pid) == Some(me)
            {
                // SAFETY: kill takes integers.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            at += reclen;
        }
    }
    // SAFETY: closes the fd opened above, once.
    unsafe { libc::close(dir) };
}

/// The pid a `/proc` entry name (NUL-terminated) stands for.
fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let digits = &name[..end];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0 as libc::pid_t, |pid, &d| {
        pid.checked_mul(10)?
            .checked_add(libc::pid_t::from(d - b'0'))
    })
}

/// The parent pid of `pid`, from `/proc/<pid>/stat` (`pid (comm) state ppid …`; the command
/// name may hold spaces and parentheses, so the last `)` ends it).
fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    let mut len = 0;
    for &b in b"/proc/" {
        path[len] = b;
        len += 1;
    }
    let mut digits = [0u8; 12];
    let mut count = 0;
    let mut rest = pid;
    loop {
        digits[count] = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for i in (0..count).rev() {
        path[len] = digits[i];
        len += 1;
    }
    for &b in b"/stat" {
        path[len] = b;
        len += 1;
    }
    // SAFETY: `path` is NUL-terminated (zero-filled past `len`); the fd is closed below.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut stat = [0u8; 512];
    // SAFETY: reads at most the buffer's size into it; closes the fd opened above.
    let n = unsafe {
        let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        n
    };
    if n <= 0 {
        return None;
    }
    let stat = &stat[..n as usize];
    let close = stat.iter().rposition(|&b| b == b')')?;
    // ") S 1234 "
    let fields = stat.get(close + 2..)?;
    let after_state = fields.iter().position(|&b| b == b' ')? + 1;
    let ppid = &fields[after_state..];
    let end = ppid.iter().position(|&b| b == b' ').unwrap_or(ppid.len());
    parse_pid(&ppid[..end])
}

/// Closes every descriptor but `keep` (negative entries ignored): the supervisor holds nothing
/// of arbor's, not the output pipes, not another command's control pipe.
fn close_all_but(keep: &[RawFd]) {
    let mut sorted = [-1 as RawFd; 3];
    for (slot, &fd) in sorted.iter_mut().zip(keep) {
        *slot = fd;
    }
    sorted.sort_unstable();
    let mut from: RawFd = 0;
    for &fd in sorted.iter().filter(|&&fd| fd >= 0) {
        close_range(from, fd - 1);
        from = fd + 1;
    }
    close_range(from, RawFd::MAX);
}

fn close_range(from: RawFd, to: RawFd) {
    if from > to {
        return;
    }
    // SAFETY: close_range(2) takes integers.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, from as u32, to as u32, 0u32) };
    if rc < 0 {
        // Before Linux 5.9: close them one by one, up to the descriptor limit.
        // SAFETY: sysconf takes an integer.
        let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(256, 65_536) as RawFd;
        for fd in from..=to.min(max) {
            // SAFETY: closing a descriptor that may not be open is harmless.
            unsafe { libc::close(fd) };
        }
    }
}

fn write_int(fd: RawFd, value: libc::c_int) {
    let bytes = value.to_ne_bytes();
    // SAFETY: writes four bytes from a live buffer to our fd; a pipe write this small is
    // atomic. A failure (arbor gone) leaves nothing to tell.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
