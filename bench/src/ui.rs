//! `arbor ui`: the frame time of a 1 000-agent tree beside a 10 000-line transcript (in
//! process, on ratatui's test backend), then the real binary attached to that session in a
//! pseudo-terminal: its CPU use while nothing happens, and the time from a rollout line being
//! durable (its append synced) to its text reaching the terminal.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbor_agent_graph::Store;
use arbor_model::ScriptedModel;
use arbor_orchestrator::open::{log_path_of, reconcile};
use arbor_orchestrator::{Lease, Orchestrator, RunConfig};
use arbor_protocol::{AgentPath, ResponseItem, RolloutItem, ThreadId};
use arbor_rollout::log::append_external;
use arbor_tui::{App, Session, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use crate::{bench_dir, median, report};

const AGENTS: usize = 1000;
const TRANSCRIPT: usize = 10_000;
const FRAMES: usize = 300;
const IDLE: Duration = Duration::from_secs(5);
const LATENCY_RUNS: usize = 20;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

pub fn run() -> Result<(), String> {
    let dir = bench_dir()?;
    let home = dir.path().join("home");
    let (session, target) = make_session(&home, dir.path())?;
    frames(&home, &session, target)?;
    attached(&home, &session)?;
    Ok(())
}

/// A finished fan-out of 999 workers (1 000 agents) whose first worker then has 10 000
/// messages, brought into its rollout and the store as a driver would.
fn make_session(home: &Path, dir: &Path) -> Result<(ThreadId, ThreadId), String> {
    let cwd = dir.join("work");
    std::fs::create_dir_all(&cwd).map_err(err)?;
    let mut config = RunConfig::new(home.to_path_buf(), cwd);
    config.max_running = AGENTS;
    config.max_resident = AGENTS;
    let model =
        ScriptedModel::from_json(&crate::fanout::script(AGENTS - 1).to_string()).map_err(err)?;
    model.set_recording(false);
    let session = arbor_orchestrator::session_runtime()
        .map_err(err)?
        .block_on(async {
            let orch = Orchestrator::new(config, Arc::new(model))
                .await
                .map_err(err)?;
            orch.start("fan out").await.map_err(err)?;
            orch.wait_quiescent().await;
            let id = orch.session_id();
            orch.shutdown("done").await;
            Ok::<_, String>(id)
        })?;
    let store = Store::open(home).map_err(err)?;
    let root = store.thread(session).map_err(err)?.ok_or("no root")?;
    let log = log_path_of(home, &root);
    let worker = AgentPath::parse("/root/worker_0").map_err(err)?;
    let target = store
        .threads_in_session(session)
        .map_err(err)?
        .into_iter()
        .find(|thread| thread.path() == &worker)
        .ok_or("no worker_0")?
        .id();
    let lines: Vec<RolloutItem> = (0..TRANSCRIPT)
        .map(|i| {
            RolloutItem::ResponseItem(ResponseItem::Message {
                role: if i % 2 == 0 { "assistant" } else { "user" }.to_string(),
                content: format!("message {i}: the quick brown fox jumps over the lazy dog"),
            })
        })
        .collect();
    append_external(&log, target, &lines).map_err(err)?;
    let _lease = Lease::acquire(home, session).map_err(err)?;
    reconcile(home, &store, session, &log).map_err(err)?;
    Ok((session, target))
}

/// Median and worst frame, all 10 000 entries loaded, the cursor moving through them.
fn frames(home: &Path, session: &ThreadId, target: ThreadId) -> Result<(), String> {
    let opened = Instant::now();
    let session = Session::open(home, &session.to_string())?;
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;
    let mut app = App::new(home.to_path_buf(), Some(session), None, Theme::from_env());
    if !app.tree.select_id(target) {
        return Err("worker_0 is not in the tree".into());
    }
    let started = Instant::now();
    app.open_transcript();
    let transcript_open_ms = started.elapsed().as_secs_f64() * 1e3;
    let loaded_at_open = app.transcript.as_ref().map_or(0, |t| t.entries.len());
    let started = Instant::now();
    if let Some(transcript) = app.transcript.as_mut() {
        transcript.to_start();
    }
    let load_all_ms = started.elapsed().as_secs_f64() * 1e3;
    let entries = app.transcript.as_ref().map_or(0, |t| t.entries.len());
    let rows = app.tree.rows.len();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).map_err(err)?;
    let mut samples = Vec::with_capacity(FRAMES);
    for frame in 0..FRAMES {
        if let Some(transcript) = app.transcript.as_mut() {
            // Walk from the top to the bottom of the transcript, then follow the end.
            let step = entries / FRAMES;
            transcript.cursor = (frame * step).min(entries.saturating_sub(1));
            transcript.follow = frame == FRAMES - 1;
        }
        app.tree.selected = frame * 3 % rows.max(1);
        let start = Instant::now();
        terminal
            .draw(|f| arbor_tui::view::draw(&mut app, f))
            .map_err(err)?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let worst = samples.iter().copied().fold(0.0, f64::max);
    report(json!({
        "bench": "ui_frame",
        "agents": rows,
        "transcript_entries": entries,
        "terminal": "200x60",
        "frames": FRAMES,
        "frame_median_ms": median(samples),
        "frame_max_ms": worst,
        "session_open_ms": open_ms,
        "transcript_open_ms": transcript_open_ms,
        "transcript_entries_at_open": loaded_at_open,
        "transcript_load_all_ms": load_all_ms,
    }));
    Ok(())
}

fn arbor() -> Result<PathBuf, String> {
    let path = std::env::current_exe()
        .map_err(err)?
        .with_file_name("arbor");
    if !path.exists() {
        return Err(format!(
            "{} is missing: build it with `cargo build --release -p arbor-cli`",
            path.display()
        ));
    }
    Ok(path)
}

/// A pseudo-terminal of `cols`×`rows`: (master, slave).
fn pty(cols: u16, rows: u16) -> Result<(OwnedFd, OwnedFd), String> {
    let mut master = -1;
    let mut slave = -1;
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two new descriptors into the ints we pass; the size is read only.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    if rc != 0 {
        return Err(format!("openpty: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) })
}

/// The UI's output as it arrives, read on a thread of its own.
struct Screen {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl Screen {
    fn read_from(master: OwnedFd) -> Self {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&bytes);
        std::thread::spawn(move || {
            let mut file = std::fs::File::from(master);
            let mut buf = [0u8; 65536];
            while let Ok(n) = file.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut all) = sink.lock() {
                    all.extend_from_slice(&buf[..n]);
                }
            }
        });
        Self { bytes }
    }

    fn len(&self) -> usize {
        self.bytes.lock().map_or(0, |b| b.len())
    }

    /// Waits (bounded) until the output after `from` holds `needle`; when it did.
    fn wait_for(&self, from: usize, needle: &[u8], limit: Duration) -> Option<Instant> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            let found = self.bytes.lock().ok().is_some_and(|b| {
                b.get(from..)
                    .is_some_and(|tail| tail.windows(needle.len()).any(|w| w == needle))
            });
            if found {
                return Some(Instant::now());
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        None
    }
}

/// CPU seconds a process has used (user and system), from `/proc`.
pub(crate) fn process_cpu(pid: u32) -> Result<f64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(err)?;
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
    Ok((ticks(11) + ticks(12)) / hz.max(1.0))
}

/// The real `arbor ui` on the session in a 160×48 pseudo-terminal.
fn attached(home: &Path, session: &ThreadId) -> Result<(), String> {
    let (master, slave) = pty(160, 48)?;
    let out = slave.try_clone().map_err(err)?;
    let errs = slave.try_clone().map_err(err)?;
    let mut child: Child = Command::new(arbor()?)
        .arg("--home")
        .arg(home)
        .arg("ui")
        .arg(session.to_string())
        .env("TERM", "xterm-256color")
        .stdin(Stdio::from(slave))
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(errs))
        .spawn()
        .map_err(err)?;
    let screen = Screen::read_from(master);
    let result = measure(home, session, &child, &screen);
    // SAFETY: kill sends SIGTERM to the child we spawned; the UI then quits and restores.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let _ = child.wait();
    result
}

fn measure(home: &Path, session: &ThreadId, child: &Child, screen: &Screen) -> Result<(), String> {
    if screen
        .wait_for(0, b"not driven", Duration::from_secs(30))
        .is_none()
    {
        return Err("the UI never showed the session".into());
    }
    // Settle, then count the CPU of a stretch where nothing happens.
    std::thread::sleep(Duration::from_millis(500));
    let cpu_before = process_cpu(child.id())?;
    let wall = Instant::now();
    std::thread::sleep(IDLE);
    let idle_cpu = process_cpu(child.id())? - cpu_before;
    let idle_pct = idle_cpu / wall.elapsed().as_secs_f64() * 100.0;
    // Latency: an assistant message of the root (the selected agent) appended and synced;
    // the time until its text reaches the terminal.
    let store = Store::open_read_only(home).map_err(err)?;
    let root = store.thread(*session).map_err(err)?.ok_or("no root")?;
    let log = log_path_of(home, &root);
    let mut samples = Vec::with_capacity(LATENCY_RUNS);
    for run in 0..LATENCY_RUNS {
        // Every character differs from the last run's at its place, so the terminal gets
        // the whole marker and not only the cells that changed.
        let marker: String = (0..10)
            .map(|k| char::from(b'a' + ((run * 3 + k) % 26) as u8))
            .collect();
        let from = screen.len();
        let line = RolloutItem::ResponseItem(ResponseItem::Message {
            role: "assistant".into(),
            content: format!("Z{marker}Z"),
        });
        append_external(&log, *session, &[line]).map_err(err)?;
        let durable = Instant::now();
        let shown = screen
            .wait_for(from, marker.as_bytes(), Duration::from_secs(5))
            .ok_or_else(|| format!("marker {marker} never showed"))?;
        samples.push(shown.duration_since(durable).as_secs_f64() * 1e3);
    }
    let worst = samples.iter().copied().fold(0.0, f64::max);
    report(json!({
        "bench": "ui_attached",
        "agents": AGENTS,
        "terminal": "160x48",
        "idle_s": IDLE.as_secs_f64(),
        "idle_cpu_percent": idle_pct,
        "latency_runs": LATENCY_RUNS,
        "durable_to_screen_median_ms": median(samples),
        "durable_to_screen_max_ms": worst,
    }));
    Ok(())
}
