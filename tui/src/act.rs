//! What the UI does to a session, off the UI thread. Every action is what a command does:
//! mail is `arbor send`/`followup` (`send_external`), interrupt and close are `arbor
//! interrupt`/`close`, answers are `arbor approve`/`deny`; each is a line of the session log,
//! synced before it is reported durable. When nothing drives the session, a follow-up (or a
//! message to `/root`) takes the session's lease and drives it in this process until it is
//! quiescent, as `arbor followup` (or `arbor resume SESSION PROMPT`) does: an *episode*.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use arbor_orchestrator::{
    Orchestrator, answer_external_with, close_external, interrupt_external, send_external,
};
use arbor_protocol::{MailId, MailKind, ThreadId};
use arbor_rollout::log::{SessionLog, Urgency};
use tokio::sync::mpsc;

use crate::session::Driver;

/// A boxed future, for [`Launcher`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How the UI starts or takes over a session in this process; the CLI supplies it with the
/// options `arbor ui` was given (the same as `exec`'s).
pub trait Launcher: Send + Sync + 'static {
    /// Prepares a new session (nothing runs until the root is given its prompt).
    fn start(&self) -> BoxFuture<'_, Result<Orchestrator, String>>;
    /// Takes a stopped session over: its lease, its tree. `root_driven`: the root is woken by
    /// its children's results (a message to the root), or not (a follow-up to a child).
    fn resume(
        &self,
        session: ThreadId,
        root_driven: bool,
    ) -> BoxFuture<'_, Result<(Orchestrator, Vec<String>), String>>;
    /// The token budget runs this launcher starts get.
    fn budget(&self) -> Option<u64>;
}

/// A human's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Once,
    ForSession,
    Deny,
    /// Approve a denied request's identical retry once.
    Override,
}

/// Something the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Wake-up mail (a new turn for `/root`).
    Followup {
        target: String,
        text: String,
    },
    /// Queue-only mail.
    Queue {
        target: String,
        text: String,
    },
    Interrupt {
        target: String,
    },
    Close {
        target: String,
    },
    Answer {
        id: String,
        answer: Answer,
    },
    /// A new session whose root gets `prompt`.
    NewSession {
        prompt: String,
    },
    /// Stop the run this process drives (interrupt, save, release the lease).
    Stop,
    /// Take a stopped session over to run what it owes (a follow-up its last driver never
    /// delivered).
    TakeOver,
}

/// What became of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The mail is a durable line of the log.
    Mail(MailId),
    /// The root's next turn was asked for.
    Prompted,
    /// Done; a line for the user.
    Said(String),
}

/// What the worker tells the UI.
#[derive(Debug)]
pub enum Report {
    Done {
        ticket: u64,
        result: Result<Outcome, String>,
    },
    /// This process now drives `session`; lines of its log are shown once durable, up to the
    /// length in `readable`.
    Driving {
        session: ThreadId,
        readable: Arc<AtomicU64>,
    },
    /// This process no longer drives `session` (none: a new session failed to start).
    Stopped {
        session: Option<ThreadId>,
        interrupted: bool,
    },
    Notice(String),
}

enum EpisodeCmd {
    Prompt { ticket: u64, text: String },
    Stop,
}

/// Runs requests on the runtime and reports back.
pub struct Worker {
    runtime: tokio::runtime::Handle,
    launcher: Arc<dyn Launcher>,
    home: PathBuf,
    reports_tx: std_mpsc::Sender<Report>,
    reports: std_mpsc::Receiver<Report>,
    episode: Option<mpsc::UnboundedSender<EpisodeCmd>>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("home", &self.home).finish()
    }
}

/// How often the lines this process writes are checked for durability.
const DURABLE_POLL: Duration = Duration::from_millis(20);

impl Worker {
    pub fn new(
        runtime: tokio::runtime::Handle,
        launcher: Arc<dyn Launcher>,
        home: PathBuf,
    ) -> Self {
        let (reports_tx, reports) = std_mpsc::channel();
        Self {
            runtime,
            launcher,
            home,
            reports_tx,
            reports,
            episode: None,
        }
    }

    /// Reports that arrived since the last call.
    pub fn reports(&mut self) -> Vec<Report> {
        let reports: Vec<Report> = self.reports.try_iter().collect();
        for report in &reports {
            if matches!(report, Report::Stopped { .. }) {
                self.episode = None;
            }
        }
        reports
    }

    /// Whether an episode runs in this process.
    pub fn driving(&self) -> bool {
        self.episode.is_some()
    }

    pub fn budget(&self) -> Option<u64> {
        self.launcher.budget()
    }

    /// Starts `request` on the session `session` (none for a new session), whose driver is
    /// `driver` as last seen.
    pub fn submit(
        &mut self,
        ticket: u64,
        session: Option<ThreadId>,
        driver: Driver,
        request: Request,
    ) {
        let done = |result| Report::Done { ticket, result };
        let Some(session) = session else {
            match request {
                Request::NewSession { prompt } => self.episode(ticket, Start::New(prompt)),
                _ => {
                    let _ = self.reports_tx.send(done(Err(
                        "no session yet: give /root its task first".into(),
                    )));
                }
            }
            return;
        };
        match request {
            Request::Followup { target, text } if is_root(&target) => match driver {
                _ if self.episode.is_some() => {
                    self.command(ticket, EpisodeCmd::Prompt { ticket, text });
                }
                Driver::None | Driver::Here => self.episode(
                    ticket,
                    Start::Resume {
                        session,
                        prompt: Some(text),
                    },
                ),
                Driver::Process(pid) => {
                    let _ = self.reports_tx.send(done(Err(format!(
                        "the root's next turn is started by the process driving the session \
                         (pid {pid}); Ctrl-O queues your text as mail to /root instead"
                    ))));
                }
            },
            Request::Followup { target, text } => {
                let take_over = driver == Driver::None && self.episode.is_none();
                let mail = self.blocking(ticket, session, move |home, id| {
                    send_external(home, id, &target, MailKind::Followup, &text)
                        .map(|sent| Outcome::Mail(sent.mail.id))
                        .map_err(|err| err.to_string())
                });
                if take_over {
                    // The follow-up is in the log; the episode revives its target with it.
                    self.after(
                        mail,
                        Start::Resume {
                            session,
                            prompt: None,
                        },
                    );
                }
            }
            Request::Queue { target, text } => {
                self.blocking(ticket, session, move |home, id| {
                    send_external(home, id, &target, MailKind::Message, &text)
                        .map(|sent| Outcome::Mail(sent.mail.id))
                        .map_err(|err| err.to_string())
                });
            }
            Request::Interrupt { target } => {
                self.blocking(ticket, session, move |home, id| {
                    interrupt_external(home, id, &target)
                        .map(|previous| Outcome::Said(format!("interrupted (was {previous})")))
                        .map_err(|err| err.to_string())
                });
            }
            Request::Close { target } => {
                self.blocking(ticket, session, move |home, id| {
                    close_external(home, id, &target)
                        .map(|previous| Outcome::Said(format!("closed (was {previous})")))
                        .map_err(|err| err.to_string())
                });
            }
            Request::Answer {
                id: request,
                answer,
            } => {
                self.blocking(ticket, session, move |home, id| {
                    let (approve, for_session) = match answer {
                        Answer::Once | Answer::Override => (true, false),
                        Answer::ForSession => (true, true),
                        Answer::Deny => (false, false),
                    };
                    answer_external_with(home, id, &request, approve, for_session)
                        .map(|done| Outcome::Said(describe_answer(&done, answer)))
                        .map_err(|err| err.to_string())
                });
            }
            Request::NewSession { .. } => {
                let _ = self
                    .reports_tx
                    .send(done(Err("a session is open already".into())));
            }
            Request::Stop => self.command(ticket, EpisodeCmd::Stop),
            Request::TakeOver => {
                if self.episode.is_none() && driver == Driver::None {
                    self.episode(
                        ticket,
                        Start::Resume {
                            session,
                            prompt: None,
                        },
                    );
                }
            }
        }
    }

    fn command(&mut self, ticket: u64, cmd: EpisodeCmd) {
        let sent = self.episode.as_ref().is_some_and(|tx| tx.send(cmd).is_ok());
        if !sent {
            let _ = self.reports_tx.send(Report::Done {
                ticket,
                result: Err("this process does not drive the session".into()),
            });
        }
    }

    /// Runs `work` on the blocking pool; its result is reported under `ticket`. Returns a
    /// receiver of whether it succeeded.
    fn blocking(
        &self,
        ticket: u64,
        session: ThreadId,
        work: impl FnOnce(&std::path::Path, &str) -> Result<Outcome, String> + Send + 'static,
    ) -> tokio::sync::oneshot::Receiver<bool> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let home = self.home.clone();
        let reports = self.reports_tx.clone();
        self.runtime.spawn_blocking(move || {
            let result = work(&home, &session.to_string());
            let _ = tx.send(result.is_ok());
            let _ = reports.send(Report::Done { ticket, result });
        });
        rx
    }

    /// Starts an episode once `first` succeeded.
    fn after(&mut self, first: tokio::sync::oneshot::Receiver<bool>, start: Start) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.episode = Some(tx);
        let launcher = Arc::clone(&self.launcher);
        let reports = self.reports_tx.clone();
        self.runtime.spawn(async move {
            if first.await == Ok(true) {
                run_episode(launcher, start, rx, reports, None).await;
            } else if let Start::Resume { session, .. } = start {
                let _ = reports.send(Report::Stopped {
                    session: Some(session),
                    interrupted: false,
                });
            }
        });
    }

    fn episode(&mut self, ticket: u64, start: Start) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.episode = Some(tx);
        let launcher = Arc::clone(&self.launcher);
        let reports = self.reports_tx.clone();
        self.runtime
            .spawn(run_episode(launcher, start, rx, reports, Some(ticket)));
    }
}

fn is_root(target: &str) -> bool {
    target.trim() == "/root"
}

fn describe_answer(done: &arbor_orchestrator::ExternalAnswer, answer: Answer) -> String {
    let what = match answer {
        Answer::Once => "approved once",
        Answer::ForSession => "approved for the session",
        Answer::Deny => "denied",
        Answer::Override => "override granted",
    };
    let mut text = format!("{what}: request {}", done.record.id);
    if done.override_granted && !done.decided {
        text.push_str(" (its identical retry runs once)");
    }
    if let Some(pid) = done.handed_to
        && pid != std::process::id()
    {
        text.push_str(&format!(", handed to pid {pid}"));
    }
    text
}

enum Start {
    New(String),
    Resume {
        session: ThreadId,
        prompt: Option<String>,
    },
}

/// Drives a session in this process until it is quiescent (or told to stop), then shuts it
/// down, which releases its lease.
async fn run_episode(
    launcher: Arc<dyn Launcher>,
    start: Start,
    mut cmds: mpsc::UnboundedReceiver<EpisodeCmd>,
    reports: std_mpsc::Sender<Report>,
    ticket: Option<u64>,
) {
    let report_done = |result: Result<Outcome, String>| {
        if let Some(ticket) = ticket {
            let _ = reports.send(Report::Done { ticket, result });
        }
    };
    let (orch, prompt) = match start {
        Start::New(prompt) => match launcher.start().await {
            Ok(orch) => (orch, Some(prompt)),
            Err(err) => {
                report_done(Err(err));
                let _ = reports.send(Report::Stopped {
                    session: None,
                    interrupted: false,
                });
                return;
            }
        },
        Start::Resume { session, prompt } => {
            match launcher.resume(session, prompt.is_some()).await {
                Ok((orch, notices)) => {
                    for notice in notices {
                        let _ = reports.send(Report::Notice(notice));
                    }
                    orch.finish_owed();
                    (orch, prompt)
                }
                Err(err) => {
                    report_done(Err(err.clone()));
                    if ticket.is_none() {
                        let _ = reports.send(Report::Notice(err));
                    }
                    let _ = reports.send(Report::Stopped {
                        session: Some(session),
                        interrupted: false,
                    });
                    return;
                }
            }
        }
    };
    let session = orch.session_id();
    if let Some(prompt) = prompt {
        let result = orch.start(&prompt).await.map(|()| Outcome::Prompted);
        let failed = result.is_err();
        report_done(result.map_err(|err| err.to_string()));
        if failed {
            orch.shutdown("shutdown").await;
            let _ = reports.send(Report::Stopped {
                session: Some(session),
                interrupted: false,
            });
            return;
        }
    }
    let readable = Arc::new(AtomicU64::new(0));
    let _ = reports.send(Report::Driving {
        session,
        readable: Arc::clone(&readable),
    });
    let watcher = tokio::spawn(track_durable(orch.log().clone(), readable));
    let mut interrupted = false;
    loop {
        tokio::select! {
            () = orch.wait_quiescent() => break,
            cmd = cmds.recv() => match cmd {
                Some(EpisodeCmd::Prompt { ticket, text }) => {
                    let result = orch.start(&text).await.map(|()| Outcome::Prompted);
                    let _ = reports.send(Report::Done {
                        ticket,
                        result: result.map_err(|err| err.to_string()),
                    });
                }
                Some(EpisodeCmd::Stop) | None => {
                    interrupted = true;
                    orch.interrupt_all("user_interrupt");
                    orch.wait_quiescent().await;
                    break;
                }
            },
        }
    }
    orch.complete().await;
    orch.shutdown("shutdown").await;
    watcher.abort();
    drop(orch);
    let _ = reports.send(Report::Stopped {
        session: Some(session),
        interrupted,
    });
}

/// Publishes how far the log file is durable: the length it had before a sync that covered
/// every append made until then.
async fn track_durable(log: SessionLog, readable: Arc<AtomicU64>) {
    loop {
        let len = std::fs::metadata(log.path()).map_or(0, |meta| meta.len());
        let appended = log.appended();
        if log.durable(appended, Urgency::Soon).await.is_err() {
            return;
        }
        readable.fetch_max(len, Ordering::SeqCst);
        tokio::time::sleep(DURABLE_POLL).await;
    }
}
