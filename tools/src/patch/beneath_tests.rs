//! Tests of confined patches against links: a link swapped while patches run, links inside the
//! workspace, hard links to files outside; with `openat2` and with the `openat` walk.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arbor_protocol::SandboxMode;

use super::apply_patch_confined;
use crate::beneath::FORCE_WALK;

const WS: SandboxMode = SandboxMode::WorkspaceWrite;

fn add(path: &str) -> String {
    format!("*** Begin Patch\n*** Add File: {path}\n+raced\n*** End Patch")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Both ways of resolving a path: `openat2`, and the component walk.
fn each_resolver(test: impl Fn()) {
    for walk in [false, true] {
        FORCE_WALK.with(|force| force.set(walk));
        test();
    }
    FORCE_WALK.with(|force| force.set(false));
}

#[test]
fn a_link_swapped_during_200_patches_never_leads_a_write_outside() {
    each_resolver(|| {
        let ws = tempfile::tempdir().expect("workspace");
        let outside = tempfile::tempdir().expect("outside");
        fs::create_dir(ws.path().join("real")).expect("real");
        let stop = Arc::new(AtomicBool::new(false));
        let (started, first_swap) = std::sync::mpsc::channel();
        let racer = {
            let (root, outside, stop) = (
                ws.path().to_path_buf(),
                outside.path().to_path_buf(),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let target = if swaps.is_multiple_of(2) {
                        Path::new("real").to_path_buf()
                    } else {
                        outside.clone()
                    };
                    let temp = root.join(format!(".swap{swaps}"));
                    symlink(&target, &temp).expect("symlink");
                    fs::rename(&temp, root.join("d")).expect("swap");
                    if swaps == 0 {
                        started.send(()).expect("report the first swap");
                    }
                    swaps += 1;
                }
                swaps
            })
        };
        first_swap.recv().expect("the racer started");
        let refused = (0..200)
            .filter(|i| {
                apply_patch_confined(ws.path(), &add(&format!("d/race{i}.txt")), WS).is_err()
            })
            .count();
        stop.store(true, Ordering::Relaxed);
        let swaps = racer.join().expect("racer");
        assert!(swaps > 1, "the link was swapped");
        assert_eq!(
            entries(outside.path()),
            Vec::<String>::new(),
            "written outside"
        );
        assert_eq!(entries(&ws.path().join("real")), Vec::<String>::new());
        assert_eq!(refused, 200, "every patch through the link is refused");
    });
}

#[test]
fn a_link_inside_the_workspace_is_not_followed() {
    each_resolver(|| {
        let ws = tempfile::tempdir().expect("workspace");
        fs::create_dir(ws.path().join("real")).expect("real");
        fs::write(ws.path().join("real/a.txt"), "one\n").expect("a");
        symlink("real", ws.path().join("d")).expect("dir link");
        symlink("real/a.txt", ws.path().join("a-link.txt")).expect("file link");
        let err = apply_patch_confined(ws.path(), &add("d/new.txt"), WS)
            .map(|_| ())
            .expect_err("through a link");
        assert_eq!(
            err.to_string(),
            "apply_patch: d/new.txt goes through a symbolic link, which apply_patch does not \
             follow in the sandbox; patch the file at its real path"
        );
        let update = "*** Begin Patch\n*** Update File: a-link.txt\n@@\n-one\n+two\n*** End Patch";
        let err = apply_patch_confined(ws.path(), update, WS)
            .map(|_| ())
            .expect_err("a link as the file");
        assert!(
            err.to_string()
                .contains("a-link.txt goes through a symbolic link"),
            "{err}"
        );
        assert_eq!(
            fs::read_to_string(ws.path().join("real/a.txt")).expect("a"),
            "one\n"
        );
        // The real path works, and creates what is missing.
        apply_patch_confined(ws.path(), &add("real/sub/new.txt"), WS).expect("real path");
        assert_eq!(
            fs::read_to_string(ws.path().join("real/sub/new.txt")).expect("new"),
            "raced\n"
        );
    });
}

#[test]
fn a_hard_link_to_a_file_outside_is_not_written_through() {
    each_resolver(|| {
        let ws = tempfile::tempdir().expect("workspace");
        let outside = ws
            .path()
            .join("..")
            .join(format!("arbor-outside-{}", arbor_protocol::ThreadId::new()));
        fs::write(&outside, "secret\n").expect("outside file");
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o750)).expect("chmod");
        fs::hard_link(&outside, ws.path().join("linked.txt")).expect("hard link");
        let update =
            "*** Begin Patch\n*** Update File: linked.txt\n@@\n-secret\n+changed\n*** End Patch";
        apply_patch_confined(ws.path(), update, WS).expect("patched");
        let outside_text = fs::read_to_string(&outside).expect("outside");
        fs::remove_file(&outside).expect("clean up");
        assert_eq!(outside_text, "secret\n", "the file outside was written");
        let inside = ws.path().join("linked.txt");
        assert_eq!(fs::read_to_string(&inside).expect("inside"), "changed\n");
        let mode = fs::metadata(&inside).expect("meta").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o750, "the permission bits are kept");
        assert_eq!(
            entries(ws.path()),
            ["linked.txt"],
            "no temporary file is left"
        );
    });
}
