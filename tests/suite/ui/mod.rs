//! `arbor ui`: rendering over a recorded session (snapshots kept as text files in
//! `tests/fixtures/ui/`), keys and odd terminals on ratatui's test backend, and the real
//! binary in tmux against a live and a stopped session; and `arbor exec` on a terminal in
//! tmux (its live area and its approval prompt).

mod diff_preview;
mod exec_terminal;
mod keys;
mod live;
mod render;
mod session_answer;
pub mod tmux;

use std::path::{Path, PathBuf};

use arbor_tui::{App, Driver, Session, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The folder of the UI's fixtures.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ui")
}

/// The recorded session: `/root` fanned out to four workers under `--max-running 2`; one
/// finished, one waits for an approval, one runs, one is queued. Read from its log alone,
/// as a live driver's session shows.
pub fn recorded(home: &Path) -> App {
    let session = Session::from_log(
        home,
        &fixtures().join("fanout-approval.jsonl"),
        Driver::Process(4242),
    )
    .expect("the recorded session reads");
    App::new(home.to_path_buf(), Some(session), None, Theme::plain())
}

/// The screen as text, one line per row, trailing spaces cut.
pub fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal
        .draw(|frame| arbor_tui::view::draw(app, frame))
        .expect("draw");
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..height {
        let mut line = String::new();
        for x in 0..width {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Compares a screen with its snapshot `tests/fixtures/ui/<name>.txt`; with
/// `ARBOR_UPDATE_SNAPSHOTS=1` writes the snapshot instead.
pub fn check(name: &str, screen: &str) {
    let path = fixtures().join(format!("{name}.txt"));
    if std::env::var_os("ARBOR_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, screen).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err} (ARBOR_UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        )
    });
    assert_eq!(
        screen,
        expected,
        "the screen differs from {} (ARBOR_UPDATE_SNAPSHOTS=1 rewrites it)",
        path.display()
    );
}
