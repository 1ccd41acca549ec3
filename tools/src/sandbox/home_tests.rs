//! Tests of the paths kept read-only wherever they lie (the arbor home): in a temp dir, in the
//! workspace, with mounts below them, by mounts and by per-entry grants.

use std::fs;
use std::sync::Arc;

use super::tests::{assert_denied, assert_ok, enforced_or_reported, run, workspace};
use super::*;

/// A home with a store-like file and a sessions dir, in `/tmp` like the workspace.
fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("home");
    fs::create_dir_all(home.path().join("sessions")).expect("sessions");
    fs::write(home.path().join("state.sqlite"), "store").expect("store");
    home
}

#[tokio::test]
async fn the_home_in_a_temp_dir_or_the_workspace_stays_read_only() {
    let ws = workspace();
    let root = ws.path();
    let home = home();
    let inside = root.join("arbor-home");
    fs::create_dir_all(inside.join("sessions")).expect("home in the workspace");
    for support in [
        Support::get(),
        Support {
            mounts: None,
            ..Support::get()
        },
    ] {
        let launcher = Arc::new(
            SandboxLauncher::with_support(
                SandboxMode::WorkspaceWrite,
                root.to_path_buf(),
                false,
                support,
            )
            .protecting(vec![home.path().to_path_buf(), inside.clone()]),
        );
        if !enforced_or_reported(&launcher) {
            return;
        }
        let h = home.path().display();
        assert_ok(&launcher, "echo b > src/a.txt", root).await;
        assert_denied(&launcher, &format!("echo x >> {h}/state.sqlite"), root).await;
        assert_denied(&launcher, &format!("touch {h}/sessions/new"), root).await;
        assert_denied(&launcher, &format!("rm -rf {h}/sessions"), root).await;
        assert_denied(&launcher, "touch arbor-home/sessions/new", root).await;
        assert_eq!(
            fs::read_to_string(home.path().join("state.sqlite")).expect("store"),
            "store"
        );
        assert!(!home.path().join("sessions/new").exists());
        assert!(
            launcher
                .status()
                .notes
                .iter()
                .any(|n| n.contains("the arbor home"))
        );
    }
}

#[tokio::test]
async fn commands_are_marked_as_sandboxed() {
    let ws = workspace();
    let launcher: Arc<dyn Launcher> = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        ws.path(),
        false,
    ));
    let out = crate::exec::run_exec(
        crate::exec::ExecRequest::new(format!("printenv {SANDBOX_ENV}"), ws.path())
            .with_launcher(launcher.clone()),
    )
    .await;
    assert_eq!(out.stdout.trim(), launcher.sandbox_label(), "{out:?}");
}

/// A mount below the home (here a tmpfs, in a mount namespace of this test's own thread) is
/// made read-only too. Needs the rights to mount; without them there is nothing to test.
#[tokio::test]
async fn a_mount_below_the_home_stays_read_only() {
    let ws = workspace();
    let home = home();
    let below = home.path().join("sessions");
    // SAFETY: unshare and mount only change this thread's mount namespace (the commands of this
    // single-threaded test runtime are spawned from it); the strings are valid C strings.
    let mounted = unsafe {
        libc::unshare(libc::CLONE_NEWNS) == 0
            && libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) == 0
            && {
                let target =
                    std::ffi::CString::new(below.as_os_str().as_encoded_bytes()).expect("path");
                libc::mount(
                    c"tmpfs".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    std::ptr::null(),
                ) == 0
            }
    };
    if !mounted {
        return;
    }
    let launcher = Arc::new(
        SandboxLauncher::new(SandboxMode::WorkspaceWrite, ws.path(), false)
            .protecting(vec![home.path().to_path_buf()]),
    );
    if !enforced_or_reported(&launcher)
        || launcher.protection != Some(Protection::Mounts(MountStrategy::MountNs))
    {
        return;
    }
    let out = run(
        &launcher,
        &format!("touch {}/x", below.display()),
        ws.path(),
    )
    .await;
    assert!(
        !out.succeeded(),
        "the mount below the home was writable: {out:?}"
    );
    assert!(!below.join("x").exists());
}
