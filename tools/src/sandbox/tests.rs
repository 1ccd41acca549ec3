//! Tests of the sandbox with real child processes: what each mode lets a command write, the
//! `.git`/`.arbor` protection (mounts and per-entry grants), the network, the honest status.
//!
//! Where Landlock is missing the tests assert the `none` report instead of the restrictions.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::exec::{ExecOutcome, ExecRequest, run_exec};

/// A workspace with `.git`, `.arbor`, `src/a.txt` and `top.txt`.
pub(super) fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().expect("tempdir");
    let root = ws.path();
    for dir in [".git/hooks", ".arbor/rules", "src"] {
        fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    fs::write(root.join(".git/config"), "[core]\n").expect("write");
    fs::write(root.join("src/a.txt"), "a\n").expect("write");
    fs::write(root.join("top.txt"), "hi\n").expect("write");
    ws
}

/// A directory outside the workspace and outside every temp dir (`/tmp` is writable by design).
fn outside_dir() -> tempfile::TempDir {
    let candidates = [
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    let roots = temp_roots();
    let base = candidates
        .into_iter()
        .flatten()
        .find(|dir| dir.is_dir() && !roots.iter().any(|r| dir.starts_with(r)))
        .expect("a directory outside the temp dirs");
    tempfile::tempdir_in(base).expect("tempdir outside")
}

pub(super) async fn run(launcher: &Arc<SandboxLauncher>, cmd: &str, dir: &Path) -> ExecOutcome {
    let launcher: Arc<dyn Launcher> = launcher.clone();
    run_exec(ExecRequest::new(cmd, dir).with_launcher(launcher)).await
}

pub(super) async fn assert_ok(launcher: &Arc<SandboxLauncher>, cmd: &str, dir: &Path) {
    let out = run(launcher, cmd, dir).await;
    assert!(out.succeeded(), "{cmd} should succeed: {out:?}");
    assert_eq!(out.sandbox, launcher.sandbox_label());
}

pub(super) async fn assert_denied(launcher: &Arc<SandboxLauncher>, cmd: &str, dir: &Path) {
    let out = run(launcher, cmd, dir).await;
    assert!(!out.succeeded(), "{cmd} should be denied: {out:?}");
    assert_eq!(out.error, None, "a denial is a normal result: {out:?}");
    let stderr = out.stderr.to_lowercase();
    assert!(
        stderr.contains("permission denied")
            || stderr.contains("read-only file system")
            || stderr.contains("operation not permitted")
            || stderr.contains("device or resource busy"),
        "{cmd}: unexpected stderr {:?}",
        out.stderr
    );
}

/// When Landlock is missing: the honest report, and nothing claimed. True if enforced.
pub(super) fn enforced_or_reported(launcher: &SandboxLauncher) -> bool {
    if launcher.status().enforced {
        return true;
    }
    assert_eq!(launcher.sandbox_label(), "none");
    assert!(!launcher.status().notes.is_empty());
    false
}

fn read(path: impl AsRef<Path>) -> String {
    fs::read_to_string(path).expect("read")
}

#[tokio::test]
async fn workspace_write_allows_the_workspace_and_protects_git_and_arbor() {
    let ws = workspace();
    let root = ws.path();
    let outside = outside_dir();
    let launcher = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        root,
        false,
    ));
    if !enforced_or_reported(&launcher) {
        return;
    }
    let label = launcher.sandbox_label();
    assert!(
        label.starts_with("landlock workspace-write (.git and .arbor read-only"),
        "{label}"
    );

    assert_ok(
        &launcher,
        "echo b > src/a.txt && echo c > src/new.txt && sed -i s/hi/ho/ top.txt \
         && touch newtop && mkdir -p d/e && rm newtop && echo t > \"$(mktemp)\"",
        root,
    )
    .await;
    assert_eq!(read(root.join("src/a.txt")), "b\n");
    assert_eq!(read(root.join("src/new.txt")), "c\n");
    assert_eq!(read(root.join("top.txt")), "ho\n");

    let target = outside.path().join("f");
    assert_denied(&launcher, &format!("touch {}", target.display()), root).await;
    assert!(!target.exists());
    assert_denied(&launcher, "echo x >> .git/config", root).await;
    assert_denied(&launcher, "touch .git/hooks/x", root).await;
    assert_denied(&launcher, "echo x > .arbor/rules/allow.toml", root).await;
    assert_denied(&launcher, "rm -rf .git", root).await;
    assert_denied(&launcher, "mv .git moved", root).await;
    assert_denied(&launcher, "echo x > config", &root.join(".git")).await;
    assert_denied(&launcher, "mount -o remount,rw .git", root).await;
    assert_eq!(read(root.join(".git/config")), "[core]\n");
    assert!(!root.join(".git/hooks/x").exists());
    assert!(!root.join(".arbor/rules/allow.toml").exists());
}

#[tokio::test]
async fn an_enclosing_repository_and_a_git_file_are_protected_too() {
    let repo = workspace();
    let sub = repo.path().join("src");
    let launcher = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        &sub,
        false,
    ));
    if !enforced_or_reported(&launcher) {
        return;
    }
    assert_ok(&launcher, "echo b > a.txt", &sub).await;
    assert_denied(&launcher, "echo x >> ../.git/config", &sub).await;
    assert_denied(&launcher, "touch ../.git/hooks/x", &sub).await;
    assert_eq!(read(repo.path().join(".git/config")), "[core]\n");

    // A worktree's `.git` is a file naming the real git dir.
    let worktree = tempfile::tempdir().expect("tempdir");
    fs::write(worktree.path().join(".git"), "gitdir: /elsewhere\n").expect("write");
    let launcher = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        worktree.path(),
        false,
    ));
    assert_ok(&launcher, "touch ok", worktree.path()).await;
    assert_denied(
        &launcher,
        "echo 'gitdir: /tmp/evil' > .git",
        worktree.path(),
    )
    .await;
    assert_eq!(read(worktree.path().join(".git")), "gitdir: /elsewhere\n");
}

#[tokio::test]
async fn per_entry_grants_protect_git_without_a_mount_namespace() {
    let ws = workspace();
    let root = ws.path();
    let support = Support {
        mounts: None,
        ..Support::get()
    };
    let launcher = Arc::new(SandboxLauncher::with_support(
        SandboxMode::WorkspaceWrite,
        root.to_path_buf(),
        false,
        support,
    ));
    if !enforced_or_reported(&launcher) {
        return;
    }
    assert!(launcher.sandbox_label().contains("by per-entry grants"));
    assert_ok(
        &launcher,
        "echo b > src/a.txt && echo c > src/new.txt && echo x >> top.txt",
        root,
    )
    .await;
    assert_eq!(read(root.join("top.txt")), "hi\nx\n");
    assert_denied(&launcher, "echo x >> .git/config", root).await;
    assert_denied(&launcher, "touch .git/hooks/x", root).await;
    assert_denied(&launcher, "touch .arbor/x", root).await;
    // The weaker guarantee the label reports: nothing new at the top of the workspace.
    assert_denied(&launcher, "touch newtop", root).await;
    assert_eq!(read(root.join(".git/config")), "[core]\n");
}

#[tokio::test]
async fn a_user_namespace_protects_git_too() {
    let ws = workspace();
    let root = ws.path();
    let strategy = MountStrategy::UserAndMountNs;
    let support = Support {
        mounts: Some(strategy),
        ..Support::get()
    };
    let launcher = Arc::new(SandboxLauncher::with_support(
        SandboxMode::WorkspaceWrite,
        root.to_path_buf(),
        false,
        support,
    ));
    if !enforced_or_reported(&launcher) || !MountPlan::probe(strategy, root) {
        // User namespaces are not allowed here; `new` would not pick this strategy.
        return;
    }
    assert_ok(
        &launcher,
        "echo b > src/a.txt && touch newtop && id -u",
        root,
    )
    .await;
    assert_denied(&launcher, "touch .git/hooks/x", root).await;
    assert_denied(&launcher, "echo x >> .arbor/x", root).await;
    let uid = run(&launcher, "id -u", root).await;
    // SAFETY: getuid cannot fail.
    assert_eq!(uid.stdout.trim(), unsafe { libc::getuid() }.to_string());
}

#[tokio::test]
async fn read_only_writes_nowhere_but_devices() {
    let ws = workspace();
    let root = ws.path();
    let launcher = Arc::new(SandboxLauncher::new(SandboxMode::ReadOnly, root, false));
    if !enforced_or_reported(&launcher) {
        return;
    }
    assert!(launcher.sandbox_label().starts_with("landlock read-only ("));
    assert_ok(
        &launcher,
        "cat src/a.txt > /dev/null && ls -a .git && echo ok",
        root,
    )
    .await;
    assert_denied(&launcher, "echo x > src/a.txt", root).await;
    assert_denied(&launcher, "touch new", root).await;
    assert_denied(&launcher, "echo t > \"$(mktemp -u)\"", root).await;
    assert_eq!(read(root.join("src/a.txt")), "a\n");
}

#[tokio::test]
async fn danger_full_access_is_no_sandbox() {
    let ws = workspace();
    let root = ws.path();
    let launcher = Arc::new(SandboxLauncher::new(
        SandboxMode::DangerFullAccess,
        root,
        false,
    ));
    assert_eq!(launcher.sandbox_label(), "none");
    assert!(!launcher.status().enforced);
    assert_ok(
        &launcher,
        "echo x >> .git/config && touch .git/hooks/x",
        root,
    )
    .await;
    assert_eq!(read(root.join(".git/config")), "[core]\nx\n");
}

#[tokio::test]
async fn network_is_blocked_unless_allowed() {
    let ws = workspace();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");

    let open = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        ws.path(),
        true,
    ));
    if enforced_or_reported(&open) {
        assert!(open.sandbox_label().ends_with("network allowed)"));
    }
    assert_ok(&open, &connect, ws.path()).await;

    let blocked = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        ws.path(),
        false,
    ));
    if !enforced_or_reported(&blocked) {
        return;
    }
    match Support::get().landlock {
        Landlock::Abi(abi) if abi >= 4 => {
            assert!(blocked.sandbox_label().contains("tcp blocked"));
            assert_denied(&blocked, &connect, ws.path()).await;
        }
        _ if Support::get().socket_filter => {
            assert!(
                blocked
                    .sandbox_label()
                    .contains("tcp blocked, socket filter")
            );
            assert_denied(&blocked, &connect, ws.path()).await;
        }
        _ => assert!(blocked.sandbox_label().ends_with("network not restricted)")),
    }
}

#[tokio::test]
async fn root_loses_the_capabilities_that_reach_past_landlock() {
    let ws = workspace();
    let launcher = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        ws.path(),
        false,
    ));
    if !enforced_or_reported(&launcher) || !Support::get().root {
        return;
    }
    let out = run(
        &launcher,
        "grep -E '^Cap(Eff|Bnd):' /proc/self/status",
        ws.path(),
    )
    .await;
    assert!(out.succeeded(), "{out:?}");
    for line in out.stdout.lines() {
        let hex = line.split_whitespace().nth(1).expect("a mask");
        let mask = u64::from_str_radix(hex, 16).expect("hex");
        for cap in [16, 21, 27] {
            assert_eq!(mask & (1 << cap), 0, "capability {cap} kept: {line}");
        }
    }
}

#[test]
fn status_reports_what_is_enforced() {
    let support = |landlock, mounts| Support {
        landlock,
        mounts,
        root: false,
        socket_filter: true,
    };
    let unfiltered = |landlock| Support {
        socket_filter: false,
        ..support(landlock, None)
    };
    let check = |mode, net, support: Support, label: &str| {
        let (status, _) = describe(mode, net, support);
        assert_eq!(status.label, label);
        assert_eq!(status.enforced, label != "none");
    };
    let full = support(Landlock::Abi(7), Some(MountStrategy::MountNs));
    check(
        SandboxMode::WorkspaceWrite,
        false,
        full,
        "landlock workspace-write (.git and .arbor read-only, tcp blocked, socket filter: unix and \
         udp only)",
    );
    check(
        SandboxMode::ReadOnly,
        false,
        unfiltered(Landlock::Abi(6)),
        "landlock read-only (tcp blocked, no socket filter)",
    );
    // The socket filter refuses tcp sockets where landlock cannot deny tcp connect.
    check(
        SandboxMode::ReadOnly,
        false,
        support(Landlock::Abi(3), None),
        "landlock read-only (tcp blocked, socket filter: unix and udp only)",
    );
    check(
        SandboxMode::WorkspaceWrite,
        true,
        support(Landlock::Abi(3), None),
        "landlock workspace-write (.git and .arbor read-only by per-entry grants, network allowed)",
    );
    check(
        SandboxMode::ReadOnly,
        false,
        unfiltered(Landlock::Abi(3)),
        "landlock read-only (network not restricted)",
    );
    check(SandboxMode::DangerFullAccess, false, full, "none");
    check(
        SandboxMode::WorkspaceWrite,
        false,
        support(Landlock::NotImplemented, None),
        "none",
    );
    check(
        SandboxMode::ReadOnly,
        false,
        support(Landlock::NotEnabled, None),
        "none",
    );

    let (old, _) = describe(
        SandboxMode::ReadOnly,
        false,
        support(Landlock::Abi(2), None),
    );
    assert!(
        old.notes
            .iter()
            .any(|n| n.contains("truncating files is not restricted"))
    );
    assert!(
        old.notes
            .iter()
            .any(|n| n.contains("cannot restrict the network"))
    );
    let (none, _) = describe(
        SandboxMode::ReadOnly,
        false,
        support(Landlock::NotImplemented, None),
    );
    assert_eq!(
        none.notes,
        ["this kernel has no landlock: commands run without a sandbox"]
    );
    assert_eq!(
        sandbox_status(SandboxMode::DangerFullAccess).label,
        "none".to_string()
    );
}

#[test]
fn per_entry_grants_skip_protected_paths_and_symlinks() {
    let ws = workspace();
    let root = fs::canonicalize(ws.path()).expect("canonical");
    std::os::unix::fs::symlink("/etc", root.join("etc-link")).expect("symlink");
    let protected = vec![root.join(".git"), root.join(".arbor")];
    let parent = root.parent().expect("parent").to_path_buf();
    let mut grants =
        ruleset::per_entry_grants(std::slice::from_ref(&root), &protected).expect("grants");
    grants.sort();
    assert_eq!(grants, vec![root.join("src"), root.join("top.txt")]);

    // A root above the workspace is walked down to it.
    let grants = ruleset::per_entry_grants(&[parent], &protected).expect("grants");
    assert!(!grants.iter().any(|g| root.starts_with(g)));
    assert!(grants.contains(&root.join("src")));
}
