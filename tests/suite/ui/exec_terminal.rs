//! `arbor exec` on a real terminal (tmux): the live area says what each working agent does
//! now, the approval prompt stays on the screen with its keys while the tree runs on under it,
//! `d` shows a patch's diff first, and a first script with a child that waits for the user
//! ends `completed`, exit 0.

use serde_json::json;

use super::tmux::Tmux;
use crate::cli::Workspace;
use crate::resume::{agent, agents, write_script};

/// Every patch asks (a `prompt` rule), so `apply_patch` waits for the user at the terminal.
const PATCHES_ASK: &str = "[[rule]]\npattern = [\"apply_patch\"]\ndecision = \"prompt\"\n";

/// The last line of the screen that is not blank.
fn bottom(screen: &str) -> &str {
    screen
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
}

#[test]
fn the_prompt_stays_with_its_keys_while_the_tree_runs_and_the_run_ends_completed() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home().join("rules")).expect("rules dir");
    std::fs::write(ws.home().join("rules/patches.toml"), PATCHES_ASK).expect("rules");
    let release = ws.dir.path().join("release");
    let script = write_script(
        &ws,
        "terminal.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "slow", "agent_type": "worker", "message": "wait"}},
                 {"call": "spawn_agent", "args": {"task_name": "patcher", "agent_type": "worker", "message": "patch"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "root is done"}]]},
            {"match": "/root/slow", "responses": [
                [{"call": "exec_command", "args": {
                    "cmd": format!("until [ -e {} ]; do sleep 0.05; done; echo released", release.display()),
                    "timeout_ms": 600000}}],
                [{"say": "slow is done"}]]},
            {"match": "/root/patcher", "responses": [
                [{"call": "apply_patch", "args": {"patch":
                    "*** Begin Patch\n*** Add File: greeting.txt\n+hello from the patcher\n*** End Patch"}}],
                [{"say": "patcher: {{last_output}}"}]]}
        ]}),
    );
    let command = format!(
        "{} --home {} exec --script {} --cwd {} go; echo EXIT=$?",
        env!("CARGO_BIN_EXE_arbor"),
        ws.home().display(),
        script.display(),
        ws.project().display()
    );
    let tmux = Tmux::start(ws.dir.path(), 160, 40, &command);
    // The prompt names the request and its keys, the diff key included.
    let keys = "approve once [y], approve for this session [a], deny [n], show the diff [d]:";
    let screen = tmux.wait_for(keys);
    assert!(
        screen.contains("from /root/patcher") && screen.contains("writes: greeting.txt"),
        "{screen}"
    );
    let session = screen
        .lines()
        .find_map(|line| line.strip_prefix("session: "))
        .expect("the session line")
        .trim()
        .to_string();
    // The tree runs on under the prompt: the slow worker finishes, the summary is drawn again
    // every second, and the prompt is still the last thing on the screen, keys and all.
    std::fs::write(&release, "").expect("release");
    let slow_done = || {
        let list = agents(&ws, &session);
        agent(&list, "/root/slow")["status"]
            .get("completed")
            .is_some()
    };
    tmux.wait_until("the slow worker completed", |_| slow_done());
    let screen = tmux.wait_until("the prompt after the slow worker ended", |screen| {
        screen.contains(keys) && slow_done()
    });
    assert_eq!(bottom(&screen).trim_end(), keys, "{screen}");
    assert!(
        !screen.contains("tokens"),
        "no summary over the prompt:\n{screen}"
    );
    // A wrong key says the keys again; `d` shows the patch, then the keys again.
    tmux.type_text("maybe");
    tmux.keys(&["Enter"]);
    tmux.wait_for(&format!("please answer: {keys}"));
    tmux.type_text("d");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("+hello from the patcher");
    assert_eq!(bottom(&screen).trim_end(), keys, "{screen}");
    tmux.type_text("y");
    tmux.keys(&["Enter"]);
    // The lines held while the prompt was open follow it, and the run ends completed.
    let screen = tmux.wait_for("EXIT=");
    assert!(screen.contains("allow by user"), "{screen}");
    assert!(screen.contains("root is done"), "{screen}");
    assert!(screen.contains("EXIT=0"), "{screen}");
    let list = agents(&ws, &session);
    assert!(
        agent(&list, "/root")["status"].get("completed").is_some(),
        "{list:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.project().join("greeting.txt")).expect("patched"),
        "hello from the patcher\n"
    );
}

#[test]
fn the_live_area_says_what_each_working_agent_does_now() {
    let ws = Workspace::new();
    let release = ws.dir.path().join("release");
    let script = write_script(
        &ws,
        "live.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "builder", "agent_type": "worker", "message": "build"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "built"}]]},
            {"match": "/root/builder", "responses": [
                [{"say": "I start the build now"},
                 {"call": "exec_command", "args": {
                    "cmd": format!("until [ -e {} ]; do sleep 0.05; done", release.display()),
                    "timeout_ms": 600000}}],
                [{"say": "the build passed"}]]}
        ]}),
    );
    let command = format!(
        "{} --home {} exec --script {} --cwd {} go; echo EXIT=$?",
        env!("CARGO_BIN_EXE_arbor"),
        ws.home().display(),
        script.display(),
        ws.project().display()
    );
    let tmux = Tmux::start(ws.dir.path(), 160, 40, &command);
    let screen = tmux.wait_until("the root waiting and the builder's command", |screen| {
        screen.contains("/root/builder  exec_command: until [ -e")
            && screen.contains("/root  waiting for other agents (")
    });
    assert!(
        bottom(&screen).starts_with("2 agents · 2 running · 0 queued"),
        "{screen}"
    );
    // The time it has run goes on while nothing else happens.
    tmux.wait_until("a second of the command", |screen| {
        screen.lines().any(|line| {
            line.contains("/root/builder  exec_command") && !line.trim_end().ends_with("(0s)")
        })
    });
    std::fs::write(&release, "").expect("release");
    let screen = tmux.wait_for("EXIT=0");
    assert!(screen.contains("built"), "{screen}");
    // The live area is gone: only its last counts stay, once.
    assert_eq!(
        screen.matches("waiting for other agents").count(),
        0,
        "{screen}"
    );
}

#[test]
fn after_ctrl_c_the_summary_and_the_store_say_nothing_runs() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "slow.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "slow"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "done"}]]},
            {"match": "/root/w", "responses": [
                [{"call": "exec_command", "args": {"cmd": "sleep 600", "timeout_ms": 600000}}],
                [{"say": "w done"}]]}
        ]}),
    );
    let command = format!(
        "{} --home {} exec --script {} --cwd {} go; echo EXIT=$?",
        env!("CARGO_BIN_EXE_arbor"),
        ws.home().display(),
        script.display(),
        ws.project().display()
    );
    let tmux = Tmux::start(ws.dir.path(), 160, 30, &command);
    let screen = tmux.wait_for("/root/w  exec_command: sleep 600");
    let session = screen
        .lines()
        .find_map(|line| line.strip_prefix("session: "))
        .expect("the session line")
        .trim()
        .to_string();
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("EXIT=");
    assert!(screen.contains("EXIT=130"), "{screen}");
    let counts = screen
        .lines()
        .find(|line| line.starts_with("2 agents · "))
        .expect("the last counts");
    assert!(counts.starts_with("2 agents · 0 running"), "{screen}");
    let list = agents(&ws, &session);
    for path in ["/root", "/root/w"] {
        assert_eq!(
            agent(&list, path)["status"],
            json!({"interrupted": "user_interrupt"}),
            "{path}: {list:?}"
        );
    }
}
