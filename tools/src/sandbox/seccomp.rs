//! The socket filter of a closed network: a seccomp program, built once per process in the
//! parent with `seccompiler` and installed by the child after `no_new_privs`, that refuses
//! (`EPERM`) every socket but unix sockets and inet/inet6 UDP sockets.
//!
//! Landlock denies TCP `bind` and `connect`, but nothing else: an MPTCP socket connects, an
//! unbound TCP socket's `listen` binds a port on every address, and SCTP, ICMP, netlink or vsock
//! sockets reach past it. `listen` does not show the socket's family to seccomp, and in a closed
//! network a TCP socket has no use left (no bind, no connect), so the filter refuses TCP sockets
//! at `socket` itself; unix sockets (and their `listen`) are untouched. What else it refuses:
//! `socketpair` of any family but unix, `io_uring` (its operations create and connect sockets
//! without a system call the filter would see), and system calls of another ABI (i386's, which
//! has `socketcall`, and x32's numbers), which kill the process. See `docs/sandbox.md`.

use std::collections::BTreeMap;
use std::io;
use std::sync::OnceLock;

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch, sock_filter,
};

/// The error a refused call returns: "Operation not permitted", as seccomp profiles do.
pub(crate) const REFUSED_ERRNO: i32 = libc::EPERM;

/// The kernel's type bits of `socket`'s second argument (the rest are `SOCK_CLOEXEC` and
/// `SOCK_NONBLOCK`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// x32 system calls are native (x86_64) ones with this bit set in their number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The program for this machine, built once; `None` where seccompiler has no such architecture.
pub(crate) fn program() -> Option<&'static [sock_filter]> {
    static PROGRAM: OnceLock<Option<BpfProgram>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| {
            let arch = TargetArch::try_from(std::env::consts::ARCH).ok()?;
            build(arch).ok()
        })
        .as_deref()
}

/// A condition on a 32-bit (`int`) argument, compared as the kernel reads it.
fn arg(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, BackendError> {
    SeccompRule::new(conditions)
}

/// The refusals of `socket(domain, type, protocol)`, each rule one refused case.
fn socket_rules() -> Result<Vec<SeccompRule>, BackendError> {
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    let unix = libc::AF_UNIX as u64;
    let dgram = libc::SOCK_DGRAM as u64;
    let mut rules = vec![
        // Every family but unix, inet and inet6.
        rule(vec![
            arg(0, Ne, unix)?,
            arg(0, Ne, libc::AF_INET as u64)?,
            arg(0, Ne, libc::AF_INET6 as u64)?,
        ])?,
    ];
    for family in [libc::AF_INET, libc::AF_INET6] {
        let family = family as u64;
        // Every type but SOCK_DGRAM (2, binary 0010): bit 0, 2 or 3 set, or bit 1 clear. So
        // TCP and MPTCP (stream), SCTP (seqpacket), raw and packet sockets.
        for (mask, value) in [(0x1, 0x1), (0x4, 0x4), (0x8, 0x8), (0x2, 0x0)] {
            rules.push(rule(vec![
                arg(0, Eq, family)?,
                arg(1, MaskedEq(mask), value)?,
            ])?);
        }
        // A datagram socket of another protocol than UDP (ICMP "ping" sockets, UDP-Lite).
        rules.push(rule(vec![
            arg(0, Eq, family)?,
            arg(1, MaskedEq(SOCK_TYPE_MASK), dgram)?,
            arg(2, Ne, 0)?,
            arg(2, Ne, libc::IPPROTO_UDP as u64)?,
        ])?);
    }
    Ok(rules)
}

fn build(arch: TargetArch) -> Result<BpfProgram, seccompiler::Error> {
    let socketpair = vec![rule(vec![arg(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])?];
    let rules: BTreeMap<i64, Vec<SeccompRule>> = [
        (libc::SYS_socket, socket_rules()?),
        (libc::SYS_socketpair, socketpair),
        // An empty chain: always refused.
        (libc::SYS_io_uring_setup, Vec::new()),
        (libc::SYS_io_uring_enter, Vec::new()),
        (libc::SYS_io_uring_register, Vec::new()),
    ]
    .into_iter()
    .collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(REFUSED_ERRNO as u32),
        arch,
    )?;
    // seccompiler checks the architecture (another one kills the process: i386's system calls,
    // socketcall among them); x32's calls share x86_64's and are told apart by their number.
    let program: BpfProgram = filter.try_into()?;
    Ok(with_abi_check(program))
}

#[cfg(target_arch = "x86_64")]
fn with_abi_check(program: BpfProgram) -> BpfProgram {
    const LD_W_ABS: u16 = 0x20;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    let nr_offset = 0; // seccomp_data.nr
    let mut out = vec![
        sock_filter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: nr_offset,
        },
        sock_filter {
            code: JGE_K,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_KILL_PROCESS,
        },
    ];
    out.extend(program);
    out
}

#[cfg(not(target_arch = "x86_64"))]
fn with_abi_check(program: BpfProgram) -> BpfProgram {
    program
}

/// In the child, after `no_new_privs`: installs `program` on this process, for good.
pub(crate) fn install(program: &[sock_filter]) -> io::Result<()> {
    let len = u16::try_from(program.len()).map_err(|_| io::Error::other("filter too long"))?;
    let prog = libc::sock_fprog {
        len,
        // seccompiler's `sock_filter` is `repr(C)` with the kernel's layout.
        filter: program.as_ptr().cast_mut().cast::<libc::sock_filter>(),
    };
    // SAFETY: the kernel copies the program from a live, correctly sized buffer; flags 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Whether the filter can be installed here and refuses what it should: tried in a forked
/// child that then exits (a container's own seccomp profile may forbid installing one).
pub(crate) fn probe() -> bool {
    let Some(program) = program() else {
        return false;
    };
    // SAFETY: the child only makes system calls on data built before the fork, then leaves
    // with _exit (no destructors, no atexit handlers, no locks).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = if probe_child(program) { 0 } else { 1 };
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

/// In the probe's child: install, then a TCP socket must be refused and a unix one made.
fn probe_child(program: &[sock_filter]) -> bool {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return false;
    }
    if install(program).is_err() {
        return false;
    }
    // SAFETY: socket with integer arguments; a made socket is closed at once.
    let tcp = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    let refused = tcp < 0 && io::Error::last_os_error().raw_os_error() == Some(REFUSED_ERRNO);
    // SAFETY: as above.
    let unix = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    for fd in [tcp, unix] {
        if fd >= 0 {
            // SAFETY: closes a socket made above, once.
            unsafe { libc::close(fd) };
        }
    }
    refused && unix >= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `call` in a forked child under the filter; its wait status.
    fn under_filter(call: fn() -> libc::c_long) -> libc::c_int {
        let program = program().expect("a program for this architecture");
        // SAFETY: the child makes system calls only, then leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: prctl with integer arguments.
            unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
            let code = match install(program) {
                Ok(()) => i32::from(call() < 0),
                Err(_) => 2,
            };
            // SAFETY: ends the forked child at once.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        status
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_system_call_of_another_abi_kills_the_process() {
        if !probe() {
            eprintln!("skipped: no seccomp filter can be installed here");
            return;
        }
        // socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP) by its x32 number.
        let status = under_filter(|| {
            // SAFETY: a system call with integer arguments.
            unsafe {
                libc::syscall(
                    libc::SYS_socket | libc::c_long::from(X32_SYSCALL_BIT),
                    libc::AF_INET,
                    libc::SOCK_STREAM,
                    262,
                )
            }
        });
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS,
            "x32: status {status:#x}"
        );
        // socketcall(SYS_SOCKET) and socket through i386's int 0x80 (numbers 102 and 359).
        let status = under_filter(|| {
            let args = [libc::AF_INET as u32, libc::SOCK_STREAM as u32, 262];
            let mut ret: u32 = 102;
            // SAFETY: a system call through the i386 entry, rbx saved around it; the kernel
            // reads at most the (cut to 32 bits) pointer to `args`.
            unsafe {
                std::arch::asm!(
                    "xchg {call}, rbx",
                    "int 0x80",
                    "xchg {call}, rbx",
                    call = inout(reg) 1u64 => _,
                    inlateout("eax") ret,
                    in("ecx") args.as_ptr() as usize as u32,
                );
            }
            libc::c_long::from(ret as i32)
        });
        if libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSEGV {
            eprintln!("skipped the i386 case: this kernel has no i386 entry");
            return;
        }
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS,
            "i386: status {status:#x}"
        );
    }

    #[test]
    fn the_filter_refuses_tcp_and_keeps_unix_sockets() {
        if !probe() {
            eprintln!("skipped: no seccomp filter can be installed here");
            return;
        }
        // SAFETY: socket with integer arguments.
        let mptcp = || unsafe { libc::socket(libc::AF_INET6, libc::SOCK_STREAM, 262).into() };
        let status = under_filter(mptcp);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 1);
        // SAFETY: as above.
        let unix = || unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0).into() };
        let status = under_filter(unix);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}
