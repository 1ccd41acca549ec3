//! `arbor ui`: the interactive terminal UI. It reads a session the way `arbor tree`, `log`
//! and `mail` do (a `SessionView`, then the log's new lines as they come) and acts on it the
//! way `arbor send`, `followup`, `approve`, `deny`, `interrupt` and `close` do (lines of the
//! session log); with nothing driving the session it takes the lease when the user acts, and
//! without a session it starts one, as `arbor exec` does.
//!
//! **API Boundary:** [`run`] (with a [`Launcher`] from the CLI), and for tests and benchmarks
//! [`App`], [`Session`], [`view::draw_buffer`].

pub mod act;
pub mod activity;
pub mod app;
mod backwards;
pub mod session;
mod term;
pub mod theme;
pub mod transcript;
pub mod tree;
pub mod view;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub use act::{Answer, Launcher, Report, Request, Worker};
pub use app::{App, Focus, Overlay};
pub use session::{Driver, Session};
pub use term::{TICK, terminal_width};
pub use theme::Theme;

/// Why `arbor ui` could not run, with its exit code (2: usage or input).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UiError {
    pub code: u8,
    pub message: String,
}

impl UiError {
    fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }
}

/// How a UI run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The session shown last, if any.
    pub session: Option<String>,
    /// The run this UI drove was stopped with turns interrupted.
    pub interrupted: bool,
}

/// Runs the UI on the calling thread until the user quits. `session`: the session to attach
/// to (none: ask for a task and start one). Work that blocks or drives the session runs on
/// `runtime`.
pub fn run(
    runtime: &tokio::runtime::Runtime,
    home: PathBuf,
    session: Option<&str>,
    launcher: Arc<dyn Launcher>,
) -> Result<Ended, UiError> {
    let opened = match session {
        Some(session) => Some(Session::open(&home, session).map_err(UiError::usage)?),
        None => None,
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(UiError::usage(
            "arbor ui needs a terminal: run it in one (read commands such as `arbor tree` work without)",
        ));
    }
    let worker = Worker::new(runtime.handle().clone(), launcher, home.clone());
    let mut app = App::new(home, opened, Some(worker), Theme::from_env());
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    runtime.spawn(async move {
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            term.recv().await;
            flag.store(true, Ordering::SeqCst);
        }
    });
    term::run(&mut app, &stop).map_err(|err| UiError {
        code: 1,
        message: format!("the terminal failed: {err}"),
    })?;
    Ok(Ended {
        session: app.session.as_ref().map(|s| s.id().to_string()),
        interrupted: app.interrupted,
    })
}
