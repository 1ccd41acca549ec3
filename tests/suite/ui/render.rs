//! Snapshots of the recorded fan-out: the tree and transcript panes, the approval queue, an
//! 80×24 terminal, and one too small for the panes.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{check, recorded, render};

fn press(app: &mut arbor_tui::App, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            c => KeyCode::Char(c),
        };
        app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
    }
}

#[test]
fn the_tree_shows_every_agent_with_its_status_and_the_root_transcript_beside_it() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    let screen = render(&mut app, 120, 34);
    check("fanout-root", &screen);
    // The figures the snapshot shows come from the log, not from the snapshot.
    assert!(screen.contains("awaiting approval !1"), "{screen}");
    assert!(screen.contains("queued #1"), "{screen}");
    assert!(screen.contains("1 approval"), "{screen}");
}

#[test]
fn a_worker_waiting_for_approval_shows_its_request_in_its_transcript() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    press(&mut app, "/worker_b\n");
    let screen = render(&mut app, 120, 34);
    check("fanout-worker-b", &screen);
    assert!(screen.contains("command: git push origin main"), "{screen}");
}

#[test]
fn the_approval_queue_shows_the_request_and_how_to_answer_it() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    press(&mut app, "A");
    let screen = render(&mut app, 100, 30);
    check("fanout-approvals", &screen);
    assert!(screen.contains("justification: the task says to push the branch"));
}

#[test]
fn an_80_by_24_terminal_fits_the_panes_and_a_20_by_5_one_says_it_is_too_small() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    press(&mut app, "jj");
    check("fanout-80x24", &render(&mut app, 80, 24));
    let small = render(&mut app, 20, 5);
    check("too-small", &small);
    assert!(small.contains("needs at"), "{small}");
}

#[test]
fn a_long_output_is_folded_until_it_is_opened() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    press(&mut app, "/worker_a\n");
    let folded = render(&mut app, 100, 40);
    assert!(folded.contains("more lines (Enter shows them)"), "{folded}");
    assert!(!folded.contains("  line 10"), "{folded}");
    // To the transcript, onto the command's result, open it.
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    let entries = app.transcript.as_ref().expect("transcript").entries.clone();
    let result = entries
        .iter()
        .position(|e| e.body.iter().any(|l| l.contains("line 10")))
        .expect("the command's result");
    let transcript = app.transcript.as_mut().expect("transcript");
    transcript.cursor = result;
    transcript.follow = false;
    press(&mut app, "\n");
    let open = render(&mut app, 100, 40);
    assert!(open.contains("  line 10"), "{open}");
}
