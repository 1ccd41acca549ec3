//! The approval queue of a live session shows a patch's diff before anything else, coloured
//! by line, and `d` opens the whole of it; the running agents say what they do now.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

use super::render;
use crate::cli::Workspace;
use crate::resume::{Driver, write_script};

const PATCHES_ASK: &str = "[[rule]]\npattern = [\"apply_patch\"]\ndecision = \"prompt\"\n";

fn press(app: &mut arbor_tui::App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

#[test]
fn a_pending_patch_shows_its_diff_first_and_d_shows_all_of_it() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home().join("rules")).expect("rules dir");
    std::fs::write(ws.home().join("rules/patches.toml"), PATCHES_ASK).expect("rules");
    let added: String = (1..=60).map(|n| format!("+line {n}\n")).collect();
    let patch = format!("*** Begin Patch\n*** Add File: long.txt\n{added}*** End Patch");
    let script = write_script(
        &ws,
        "patch.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "patcher", "agent_type": "worker", "message": "patch"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "done"}]]},
            {"match": "/root/patcher", "responses": [
                [{"call": "apply_patch", "args": {"patch": patch}}],
                [{"say": "patched"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &["--approval-wait", "600"]);
    // The patcher's request and the root's wait come in either order: the screen shows both.
    let (mut id, mut waiting) = (None, false);
    while id.is_none() || !waiting {
        let event = driver.until(|e| {
            e["type"] == "approval.requested"
                || (e["type"] == "tool.call" && e["name"] == "wait_agent")
        });
        match event["id"].as_str() {
            Some(request) if event["type"] == "approval.requested" => {
                id = Some(request.to_string());
            }
            _ => waiting = true,
        }
    }
    let id = id.expect("a request");
    let session = arbor_tui::Session::open(&ws.home(), &driver.session).expect("the session");
    let mut app = arbor_tui::App::new(ws.home(), Some(session), None, arbor_tui::Theme::plain());
    // The tree says what the agents do: the root waits, the patcher's call waits for approval.
    let screen = render(&mut app, 200, 40);
    assert!(screen.contains("now"), "{screen}");
    assert!(screen.contains(" wait_agent: all"), "{screen}");
    assert!(screen.contains(" apply_patch: long.txt"), "{screen}");
    // The queue: the command, then the diff, then the rest.
    app.on_key(KeyEvent::new(KeyCode::Char('A'), KeyModifiers::SHIFT));
    let queue = render(&mut app, 120, 40);
    let at = |text: &str| {
        queue
            .find(text)
            .unwrap_or_else(|| panic!("{text:?} not in\n{queue}"))
    };
    assert!(at("command: apply_patch long.txt") < at("diff:"), "{queue}");
    assert!(at("diff:") < at("+line 1 "), "{queue}");
    assert!(queue.contains("d the whole diff"), "{queue}");
    // `d`: the whole diff, a page at a time.
    press(&mut app, KeyCode::Char('d'));
    let whole = render(&mut app, 120, 40);
    assert!(whole.contains(&format!(" diff of {id} ")), "{whole}");
    assert!(
        whole.contains("+line 1\n") || whole.contains("+line 1 "),
        "{whole}"
    );
    assert!(!whole.contains("+line 60"), "{whole}");
    press(&mut app, KeyCode::Char('G'));
    let end = render(&mut app, 120, 40);
    assert!(end.contains("+line 60"), "{end}");
    assert!(end.contains("of 63"), "{end}");
    press(&mut app, KeyCode::Esc);
    let back = render(&mut app, 120, 40);
    assert!(back.contains(" approvals "), "{back}");
    let out = ws.run(&["approve", &driver.session, &id]);
    assert!(out.status.success());
    assert_eq!(driver.wait(), 0);
}
