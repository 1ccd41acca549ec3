//! The terminal: raw mode and the alternate screen for the life of the UI (restored on every
//! way out, a panic included), and the loop: wait for a key or the next tick, read what the
//! log gained, draw when something changed. Idle, a tick costs a `stat` of the log.

use std::io::Stdout;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

use crate::app::App;

/// How often the log is looked at for new lines.
pub const TICK: Duration = Duration::from_millis(25);

/// The width of the terminal arbor runs in, if it runs in one (for what `arbor exec` keeps
/// redrawn on it, which must not wrap).
pub fn terminal_width() -> Option<u16> {
    ratatui::crossterm::terminal::size()
        .ok()
        .map(|(width, _)| width)
        .filter(|width| *width > 0)
}

/// Puts the terminal back as it was.
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(std::io::stdout(), LeaveAlternateScreen);
}

/// Runs `app` in the terminal until it quits (or `stop` says so: SIGTERM).
pub fn run(app: &mut App, stop: &std::sync::atomic::AtomicBool) -> std::io::Result<()> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    enable_raw_mode()?;
    if let Err(err) = execute!(std::io::stdout(), EnterAlternateScreen) {
        restore();
        return Err(err);
    }
    let result = Terminal::new(CrosstermBackend::new(std::io::stdout()))
        .and_then(|mut terminal| run_loop(app, &mut terminal, stop));
    restore();
    let _ = std::panic::take_hook();
    result
}

fn run_loop(
    app: &mut App,
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    stop: &std::sync::atomic::AtomicBool,
) -> std::io::Result<()> {
    let mut next_tick = Instant::now();
    let mut stop_asked = false;
    loop {
        let now = Instant::now();
        if now >= next_tick {
            app.tick(now);
            next_tick = now + TICK;
        }
        if stop.load(std::sync::atomic::Ordering::SeqCst) && !stop_asked {
            stop_asked = true;
            app.stop_for_signal();
        }
        if app.quit {
            return Ok(());
        }
        if app.dirty {
            terminal.draw(|frame| crate::view::draw(app, frame))?;
        }
        let wait = next_tick.saturating_duration_since(Instant::now());
        if event::poll(wait)? {
            match event::read()? {
                Event::Key(key) => app.on_key(key),
                Event::Resize(_, _) => app.dirty = true,
                Event::Paste(text) => app.paste(&text),
                _ => {}
            }
            // Take every key already typed before drawing again.
            while event::poll(Duration::ZERO)? {
                match event::read()? {
                    Event::Key(key) => app.on_key(key),
                    Event::Resize(_, _) => app.dirty = true,
                    Event::Paste(text) => app.paste(&text),
                    _ => {}
                }
                if app.quit {
                    return Ok(());
                }
            }
        }
    }
}
