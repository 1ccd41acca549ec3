//! Keys on the recorded session: what each action asks for, and garbage at odd sizes.

use arbor_tui::{Answer, Request};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{recorded, render};

fn key(app: &mut arbor_tui::App, code: KeyCode, modifiers: KeyModifiers) {
    app.on_key(KeyEvent::new(code, modifiers));
}

fn typed(app: &mut arbor_tui::App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

#[test]
fn the_composer_sends_a_follow_up_with_enter_and_queue_only_mail_with_ctrl_o() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    typed(&mut app, "/worker_b\n".trim_end());
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    typed(&mut app, "i");
    typed(&mut app, "also update the docs");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    typed(&mut app, "just so you know");
    key(&mut app, KeyCode::Char('o'), KeyModifiers::CONTROL);
    // An empty composer sends nothing and says why.
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(
        app.requests,
        [
            Request::Followup {
                target: "/root/worker_b".into(),
                text: "also update the docs".into()
            },
            Request::Queue {
                target: "/root/worker_b".into(),
                text: "just so you know".into()
            },
        ]
    );
    let screen = render(&mut app, 100, 30);
    assert!(
        screen.contains("Empty message can't be sent to an agent"),
        "{screen}"
    );
}

#[test]
fn approvals_are_answered_from_the_queue_and_close_asks_first() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    let id = app.approvals()[0].id.clone();
    typed(&mut app, "As");
    key(&mut app, KeyCode::Esc, KeyModifiers::NONE);
    typed(&mut app, "Ay");
    key(&mut app, KeyCode::Esc, KeyModifiers::NONE);
    typed(&mut app, "An");
    key(&mut app, KeyCode::Esc, KeyModifiers::NONE);
    // Close: asked first; anything but y keeps the agent.
    typed(&mut app, "/worker_c");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    typed(&mut app, "Xn");
    typed(&mut app, "Xy");
    typed(&mut app, "x");
    let answer = |answer| Request::Answer {
        id: id.clone(),
        answer,
    };
    assert_eq!(
        app.requests,
        [
            answer(Answer::ForSession),
            answer(Answer::Once),
            answer(Answer::Deny),
            Request::Close {
                target: "/root/worker_c".into()
            },
            Request::Interrupt {
                target: "/root/worker_c".into()
            },
        ]
    );
}

#[test]
fn collapsing_a_branch_hides_its_agents() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    // The tree pane is the left part of each line, up to its separator.
    let tree = |screen: String| -> String {
        screen
            .lines()
            .map(|line| line.split('│').next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(tree(render(&mut app, 100, 20)).contains("worker_d"));
    key(&mut app, KeyCode::Left, KeyModifiers::NONE);
    let collapsed = tree(render(&mut app, 100, 20));
    assert!(!collapsed.contains("worker_"), "{collapsed}");
    assert!(collapsed.contains("/root (+4)"), "{collapsed}");
    key(&mut app, KeyCode::Right, KeyModifiers::NONE);
    assert!(tree(render(&mut app, 100, 20)).contains("worker_d"));
}

/// A small deterministic generator (no dependency for it).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn garbage_keys_at_any_size_never_panic() {
    let home = tempfile::tempdir().expect("home");
    let mut app = recorded(home.path());
    let mut rng = Lcg(16);
    let sizes = [(20, 5), (80, 24), (1, 1), (200, 60), (41, 10), (39, 9)];
    let codes = [
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Backspace,
        KeyCode::Delete,
        KeyCode::F(5),
        KeyCode::Null,
    ];
    for round in 0..4000u32 {
        let pick = rng.next();
        let code = if pick.is_multiple_of(3) {
            codes[(pick / 3) as usize % codes.len()]
        } else {
            // Any character, quitting ones included: q and Ctrl-C only mark the app as quitting.
            char::from_u32((rng.next() % 0x2FF) as u32).map_or(KeyCode::Null, KeyCode::Char)
        };
        let modifiers = match rng.next() % 8 {
            0 => KeyModifiers::CONTROL,
            1 => KeyModifiers::ALT,
            2 => KeyModifiers::SHIFT,
            _ => KeyModifiers::NONE,
        };
        key(&mut app, code, modifiers);
        if round.is_multiple_of(50) {
            let (w, h) = sizes[(rng.next() as usize) % sizes.len()];
            render(&mut app, w, h);
        }
    }
    render(&mut app, 20, 5);
    render(&mut app, 80, 24);
}
