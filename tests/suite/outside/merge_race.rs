//! `merge_agent` against a command that swaps a directory of the target for a link to a
//! directory outside the workspace, over and over (`renameat2(RENAME_EXCHANGE)`), while 200
//! merges run: every write goes through handles that follow no link, so nothing lands outside,
//! and every path reported merged is in the workspace.

use serde_json::{Value, json};

use arbor_tests::Session;

use crate::sandbox::outside_dir;
use crate::worktrees::{git_repo, spawn_worktree};

const MERGES: usize = 200;

/// A racer the parent leaves running: it swaps `d` and `link` (to `outside`) until `stop`
/// exists, then puts `d` back.
fn racer(outside: &std::path::Path) -> String {
    format!(
        "import ctypes, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         os.symlink({outside:?}, 'link')\n\
         open('racing', 'w').close()\n\
         swaps = 0\n\
         while not os.path.exists('stop'):\n\
         \x20   swaps += libc.renameat2(-100, b'd', -100, b'link', 2) == 0\n\
         if os.path.islink('d'):\n\
         \x20   libc.renameat2(-100, b'd', -100, b'link', 2)\n\
         os.remove('link')\n\
         open('stopped', 'w').write(str(swaps))\n",
        outside = outside.display().to_string()
    )
}

fn script(outside: &std::path::Path) -> Value {
    let start = format!(
        "cat > racer.py <<'EOF'\n{}EOF\nnohup python3 racer.py >/dev/null 2>&1 &\n\
         while [ ! -f racing ]; do sleep 0.01; done",
        racer(outside)
    );
    // The child forks before the race starts (its snapshot of the parent's checkout is then
    // the real `d`); every merge runs during it.
    let mut root = vec![json!([spawn_worktree("w", "write")])];
    let mut child = Vec::new();
    for i in 0..MERGES {
        if i > 0 {
            root.push(json!([{"call": "followup_task", "args": {"target": "/root/w", "message": format!("round {i}")}}]));
        }
        root.push(json!([{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}]));
        if i == 0 {
            root.push(
                json!([{"call": "exec_command", "args": {"cmd": start, "timeout_ms": 60000}}]),
            );
        }
        root.push(json!([{"call": "merge_agent", "args": {"target": "/root/w"}}]));
        child.push(json!([{"call": "exec_command", "args": {"cmd": format!("mkdir -p d && echo {i} > d/f{i}.txt")}}]));
        child.push(json!([{"say": format!("wrote {i}")}]));
    }
    root.push(json!([{"call": "exec_command", "args": {
        "cmd": "touch stop; while [ ! -f stopped ]; do sleep 0.01; done", "timeout_ms": 60000}}]));
    root.push(json!([{"say": "done"}]));
    json!({"agents": [
        {"match": "/root", "responses": root},
        {"match": "/root/w", "responses": child},
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_link_during_200_merges_never_leads_a_write_outside() {
    let outside = outside_dir();
    let mut s = Session::with_workspace(
        script(outside.path()),
        |dir| {
            git_repo(
                dir,
                &[
                    ("d/keep.txt", "keep\n"),
                    (
                        ".gitignore",
                        "racer.py\nracing\nstop\nstopped\nnohup.out\nlink\n",
                    ),
                ],
            )
        },
        // One turn of the root makes every merge.
        |config| config.max_turn_responses = 4 * MERGES,
    )
    .await;
    s.run("merge while racing").await;
    let written: Vec<_> = std::fs::read_dir(outside.path())
        .expect("outside")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(written.is_empty(), "written outside: {written:?}");
    let merges: Vec<Value> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "merge_agent")
        .map(|(_, output)| {
            serde_json::from_str(&output).unwrap_or_else(|_| json!({"refused": output}))
        })
        .collect();
    assert_eq!(merges.len(), MERGES);
    let swaps: u64 = std::fs::read_to_string(s.workspace().join("stopped"))
        .expect("the racer's count")
        .parse()
        .expect("a count");
    assert!(swaps > 1000, "the racer swapped only {swaps} times");
    let d = s.workspace().join("d");
    assert!(d.is_dir() && !d.is_symlink(), "the racer left d swapped");
    let mut merged = 0;
    for merge in &merges {
        for path in merge["merged"].as_array().into_iter().flatten() {
            let path = path.as_str().expect("path");
            assert!(
                s.workspace().join(path).is_file(),
                "{path} was reported merged but is not in the workspace"
            );
            merged += 1;
        }
    }
    eprintln!(
        "{merged} files merged in {MERGES} merges while the racer swapped {swaps} times; the \
         others were refused while the link was in place"
    );
    assert!(merged > 0, "no merge went through: {:?}", merges.last());
}
