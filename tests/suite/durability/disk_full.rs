//! A disk that fills up during a fan-out: the session stops and exits 1 naming the file and
//! `no space left on device`; once space is back, `resume` finishes the work, `doctor` agrees,
//! and every history an agent would be revived with is one a real API accepts (every call has
//! an output). The home is a small tmpfs, mounted in a mount namespace of the test's own.

use std::path::Path;

use arbor_rollout::{Replay, cut_call_outputs, read_rollout, unanswered_calls};
use serde_json::json;

use crate::cli::{Workspace, text};
use crate::resume::write_script;

/// The steps, run inside `unshare --user --map-root-user --mount` so that the test can mount
/// a tmpfs whether or not it runs as root.
const STEPS: &str = r#"set -u
mount -t tmpfs -o size="$SIZE" tmpfs "$HOMEDIR" || exit 90
"$ARBOR" --home "$HOMEDIR" exec --json --script "$SCRIPT" --cwd "$WS" \
    --max-running 200 --max-resident 200 go > "$OUT/run1.out" 2> "$OUT/run1.err"
echo $? > "$OUT/run1.rc"
session=$(sed -n 's/.*"session.started","session_id":"\([^"]*\)".*/\1/p' "$OUT/run1.out")
"$ARBOR" --home "$HOMEDIR" agents "$session" --json > "$OUT/full.out" 2> "$OUT/full.err"
echo $? > "$OUT/full.rc"
mount -o remount,size=256m "$HOMEDIR" || exit 91
"$ARBOR" --home "$HOMEDIR" resume "$session" "wait for all" --json --script "$DAY2" \
    > "$OUT/run2.out" 2> "$OUT/run2.err"
echo $? > "$OUT/run2.rc"
"$ARBOR" --home "$HOMEDIR" doctor > "$OUT/doctor.out" 2>&1
echo $? > "$OUT/doctor.rc"
cp -a "$HOMEDIR" "$OUT/home"
"#;

fn read(out: &Path, name: &str) -> String {
    std::fs::read_to_string(out.join(name)).unwrap_or_default()
}

#[test]
fn a_full_disk_stops_the_session_and_resume_finishes_it_with_valid_histories() {
    let ws = Workspace::new();
    let spawns: Vec<_> = (0..200)
        .map(|i| json!({"call": "spawn_agent", "args": {"task_name": format!("w_{i}"), "message": "go"}}))
        .collect();
    let script = write_script(
        &ws,
        "fan_out.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                spawns,
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
                [{"say": "collected"}]]},
            {"match": "/root/w_*", "repeat": true, "responses": [
                [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
                [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
                [{"say": "{{path}}: done"}]]}
        ]}),
    );
    let day_two = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
            {"match": "/root", "repeat": true, "responses": [
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
                [{"say": "all collected"}]]},
            {"match": "/root/*", "repeat": true, "responses": [[{"say": "{{path}} resumed"}]]}
        ]}),
    );
    let home = ws.dir.path().join("tmpfs-home");
    let out = ws.dir.path().join("out");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&out).expect("out");
    let ran = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", STEPS])
        .env("SIZE", "1400k")
        .env("HOMEDIR", &home)
        .env("ARBOR", env!("CARGO_BIN_EXE_arbor"))
        .env("SCRIPT", &script)
        .env("DAY2", &day_two)
        .env("WS", ws.project())
        .env("OUT", &out)
        .output()
        .expect("unshare runs (util-linux)");
    assert!(
        ran.status.success(),
        "the steps ran in a namespace of their own: {}{}",
        text(&ran.stdout),
        text(&ran.stderr)
    );
    // The first run stopped on the full disk, naming the file and the reason.
    let err = read(&out, "run1.err");
    assert_eq!(read(&out, "run1.rc").trim(), "1", "{err}");
    assert!(
        err.to_lowercase().contains("no space left on device"),
        "{err}"
    );
    assert!(err.contains(&home.display().to_string()), "{err}");
    assert!(
        !read(&out, "run1.out").contains("session.completed\",\"session_id\"")
            || !read(&out, "run1.out").contains("collected 200"),
        "the run did not finish on a full disk"
    );
    // Reading needs no free space.
    assert_eq!(
        read(&out, "full.rc").trim(),
        "0",
        "{}",
        read(&out, "full.err")
    );
    let listed: serde_json::Value =
        serde_json::from_str(&read(&out, "full.out")).expect("agents --json on a full disk");
    assert!(listed.as_array().is_some_and(|a| a.len() > 1), "{listed}");
    // With space again the resume finishes, and the store agrees with the log.
    assert_eq!(
        read(&out, "run2.rc").trim(),
        "0",
        "{}",
        read(&out, "run2.err")
    );
    assert!(read(&out, "run2.out").contains("all collected"));
    assert_eq!(
        read(&out, "doctor.rc").trim(),
        "0",
        "{}",
        read(&out, "doctor.out")
    );
    // Every history an agent would be revived with answers every call.
    let mut rollouts = 0;
    for path in crate::store_lag::walk(&out.join("home").join("sessions")) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if !name.is_some_and(|n| n.starts_with("rollout-")) {
            continue;
        }
        let read = read_rollout(&path).expect("every rollout reads back");
        let replay = Replay::from_read(&read);
        let mut history = replay.history.clone();
        history.extend(cut_call_outputs(&replay.dangling_calls));
        assert!(
            unanswered_calls(&history).is_empty(),
            "{}: calls without output",
            path.display()
        );
        rollouts += 1;
    }
    // The disk filled up while the root was spawning: some workers exist, not all.
    assert!((2..201).contains(&rollouts), "{rollouts} rollouts");
}
