//! What a sandbox enforces, as the user and the model are told: the label and its notes for a
//! mode on this machine, and how `.git` and `.arbor` are kept read-only.

use arbor_protocol::SandboxMode;

use super::child::MountStrategy;
use super::ruleset::VETTED_ABI;
use super::{Landlock, Protection, SandboxStatus, Support};

/// The status of `mode` given what the machine supports, and how `.git` is protected.
pub(super) fn describe(
    mode: SandboxMode,
    allow_network: bool,
    support: Support,
) -> (SandboxStatus, Option<Protection>) {
    let unenforced = |note: String| SandboxStatus {
        mode,
        enforced: false,
        label: "none".to_string(),
        notes: vec![note],
    };
    let abi = match (mode, support.landlock) {
        (SandboxMode::DangerFullAccess, _) => {
            let note = "danger-full-access: commands run without a sandbox".to_string();
            return (unenforced(note), None);
        }
        (_, Landlock::NotEnabled) => {
            let note = "landlock is built into this kernel but not enabled: commands run \
                        without a sandbox"
                .to_string();
            return (unenforced(note), None);
        }
        (_, Landlock::NotImplemented) => {
            let note = "this kernel has no landlock: commands run without a sandbox".to_string();
            return (unenforced(note), None);
        }
        (_, Landlock::Abi(abi)) => abi,
    };

    let mut parts = Vec::new();
    let mut notes = vec![if abi > VETTED_ABI {
        format!("landlock abi {abi} (rights of abi {VETTED_ABI} used)")
    } else {
        format!("landlock abi {abi}")
    }];
    let protection = match mode {
        SandboxMode::WorkspaceWrite => Some(match support.mounts {
            Some(strategy) => {
                parts.push(".git and .arbor read-only");
                let how = match strategy {
                    MountStrategy::MountNs => "a private mount namespace",
                    MountStrategy::UserAndMountNs => "a private user and mount namespace",
                };
                notes.push(format!(
                    "workspace and temp dirs writable; .git and .arbor are bind-mounted \
                     read-only in {how} (a missing one can still be created)"
                ));
                Protection::Mounts(strategy)
            }
            None => {
                parts.push(".git and .arbor read-only by per-entry grants");
                notes.push(
                    "no mount namespace can be made here: .git and .arbor are kept read-only \
                     by granting writes on every other workspace entry, so new entries \
                     directly in the workspace root (and renames there) are denied"
                        .to_string(),
                );
                Protection::PerEntry
            }
        }),
        SandboxMode::ReadOnly => {
            notes.push("nothing is writable but /dev/null-like devices".to_string());
            None
        }
        SandboxMode::DangerFullAccess => None,
    };
    network(
        allow_network,
        abi,
        support.socket_filter,
        &mut parts,
        &mut notes,
    );
    if abi < 2 {
        notes.push("landlock abi 1: files cannot be moved or linked across directories".into());
    }
    if abi < 3 {
        notes.push(format!(
            "landlock abi {abi}: truncating files is not restricted"
        ));
    }
    if abi < 6 {
        notes.push(format!(
            "landlock abi {abi}: signals and abstract unix sockets are not scoped (needs abi 6)"
        ));
    }
    if support.root {
        notes.push(
            "running as root: capabilities that reach past landlock (sys_admin, sys_module, \
             mknod, net_admin, …) are dropped"
                .to_string(),
        );
    }
    let status = SandboxStatus {
        mode,
        enforced: true,
        label: format!("landlock {} ({})", mode.as_str(), parts.join(", ")),
        notes,
    };
    (status, protection)
}

/// The network's part of the label and its notes: Landlock's TCP rules (ABI 4) and the socket
/// filter (`seccomp.rs`) each close what they can; the label names what holds.
fn network(
    allow_network: bool,
    abi: i32,
    socket_filter: bool,
    parts: &mut Vec<&'static str>,
    notes: &mut Vec<String>,
) {
    if allow_network {
        parts.push("network allowed");
        return;
    }
    if abi >= 4 {
        notes.push("landlock denies tcp bind and connect on every port".to_string());
    } else {
        notes.push(format!(
            "landlock abi {abi} cannot restrict the network (needs abi 4)"
        ));
    }
    if socket_filter {
        parts.push("tcp blocked, socket filter: unix and udp only");
        notes.push(
            "socket filter (seccomp): only unix sockets and inet/inet6 udp sockets can be made; \
             tcp, mptcp, sctp, icmp, raw, packet, netlink, vsock and every other family or \
             protocol are refused with EPERM (so no listen() can bind a port), as are \
             socketpair() of any family but unix and io_uring; a system call of another ABI \
             (i386, x32) kills the process"
                .to_string(),
        );
        notes.push("udp and pathname unix sockets are not restricted".to_string());
    } else if abi >= 4 {
        parts.push("tcp blocked, no socket filter");
        notes.push(
            "no socket filter here (seccomp is missing or refused): mptcp, sctp, icmp and other \
             sockets, and listen() on an unbound tcp socket, reach the network; udp and unix \
             sockets are not restricted"
                .to_string(),
        );
    } else {
        parts.push("network not restricted");
        notes.push("no socket filter here either: the network is not blocked".to_string());
    }
}
