//! The real `arbor ui` in a real terminal: a tmux server of the test's own (its own socket),
//! keys with `send-keys`, the screen with `capture-pane`, waited for with a bounded poll.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a screen may take to show what a test waits for.
const SCREEN_WAIT: Duration = Duration::from_secs(30);
/// Between two looks at the screen.
const POLL: Duration = Duration::from_millis(40);

/// One tmux server running one window.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` (run by the shell) in a `width`×`height` terminal.
    pub fn start(dir: &Path, width: u16, height: u16, command: &str) -> Self {
        let socket = dir.join("tmux.sock").to_string_lossy().into_owned();
        let tmux = Self { socket };
        let out = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "ui",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            command,
        ]);
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The window keeps the size asked for whatever clients attach.
        tmux.run(&["set-option", "-t", "ui", "window-size", "manual"]);
        tmux.run(&["set-option", "-t", "ui", "remain-on-exit", "on"]);
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .expect("tmux runs (CI installs it)")
    }

    /// Sends keys as tmux names them (`Enter`, `Escape`, `C-o`, or text with `-l`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "ui"];
        args.extend_from_slice(keys);
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "send-keys: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        let out = self.run(&["send-keys", "-t", "ui", "-l", text]);
        assert!(out.status.success());
    }

    /// The screen now.
    pub fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "ui"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `text`; returns the screen.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(text, |screen| screen.contains(text))
    }

    /// Waits until `pred` holds for the screen.
    pub fn wait_until(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + SCREEN_WAIT;
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what:?}; it shows:\n{screen}"
            );
            std::thread::sleep(POLL);
        }
    }

    pub fn resize(&self, width: u16, height: u16) {
        let out = self.run(&[
            "resize-window",
            "-t",
            "ui",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ]);
        assert!(
            out.status.success(),
            "resize: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Whether the UI's process has ended (the pane stays, dead).
    pub fn exited(&self) -> bool {
        let out = self.run(&["display-message", "-p", "-t", "ui", "#{pane_dead}"]);
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}
