//! The terminal approval prompt cannot lie: an escalated command whose text carries `\r` and
//! ANSI erase and cursor sequences (so that, printed raw, it would read `command: git status`)
//! is shown with those characters as escapes on a real terminal (tmux), the real command on
//! screen; a multi-line justification stays indented under its label; `arbor approvals` shows
//! the same.

use serde_json::json;

use crate::cli::{Workspace, text};
use crate::resume::write_script;
use crate::ui::tmux::Tmux;

#[test]
fn the_approval_prompt_shows_the_real_command_on_a_terminal() {
    let ws = Workspace::new();
    let outside = crate::sandbox::outside_dir();
    let marker = outside.path().join("approved-unseen");
    // Raw, the tail would return to the line's start, erase it, go up a line and write a
    // harmless command there; `#` makes it a comment for bash.
    let disguise = "#\r\x1b[2K\x1b[1A\x1b[2K  command: git status";
    let command = format!("touch {} {disguise}", marker.display());
    let script = write_script(
        &ws,
        "prompt.json",
        &json!({"agents": [{"match": "/root", "responses": [
            [{"call": "exec_command", "args": {
                "cmd": command,
                "sandbox_permissions": "require_escalated",
                "justification": "read the status\n  cwd: /home/me/project\r\x1b[2Kharmless"}}],
            [{"say": "done"}]]}]}),
    );
    let run = format!(
        "{} --home {} exec --script {} --cwd {} 'check the status'; echo EXITED $?",
        env!("CARGO_BIN_EXE_arbor"),
        ws.home().display(),
        script.display(),
        ws.project().display()
    );
    let tmux = Tmux::start(ws.dir.path(), 240, 40, &run);
    let shown = format!(
        "  command: touch {} #\\r\\x1b[2K\\x1b[1A\\x1b[2K  command: git status",
        marker.display()
    );
    let screen = tmux.wait_for(&shown);
    // Every line after the first of the justification is indented under it, its controls
    // escaped: no line of the model's can pose as one of the prompt's.
    assert!(
        screen.contains(
            "  justification: read the status\n      cwd: /home/me/project\\r\\x1b[2Kharmless"
        ),
        "{screen}"
    );
    assert!(!screen.contains("\n  command: git status"), "{screen}");
    tmux.type_text("n");
    tmux.keys(&["Enter"]);
    tmux.wait_for("EXITED");
    assert!(!marker.exists(), "the denied command ran");

    // The audit shows the request the same way.
    let sessions: serde_json::Value =
        serde_json::from_slice(&ws.run(&["sessions", "--json"]).stdout).expect("json");
    let session = sessions[0]["id"].as_str().expect("a session").to_string();
    let out = ws.run(&["approvals", &session]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(listed.contains(&shown), "{listed}");
    assert!(
        !listed.contains('\r') && !listed.contains('\x1b'),
        "{listed:?}"
    );
    assert!(
        listed.contains("\n      cwd: /home/me/project\\r\\x1b[2Kharmless"),
        "{listed}"
    );
}
