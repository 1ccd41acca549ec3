//! A session on the scripted model in temporary dirs, for scenario tests.

use std::path::Path;
use std::sync::Arc;

use arbor_model::{ModelClient, ScriptedModel};
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentPath, Event, EventLine};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::mpsc;

/// One session on the scripted model, with its home and workspace in temporary dirs.
pub struct Session {
    pub orch: Orchestrator,
    pub model: Arc<ScriptedModel>,
    pub home: TempDir,
    pub cwd: TempDir,
    events: mpsc::UnboundedReceiver<EventLine>,
    pub seen: Vec<EventLine>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("session_id", &self.orch.session_id())
            .field("events_seen", &self.seen.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session on `script`, with `configure` applied to the default configuration.
    pub async fn new(script: Value, configure: impl FnOnce(&mut RunConfig)) -> Self {
        Self::with_workspace(script, |_| {}, configure).await
    }

    /// Like [`Session::new`], with `setup` run on the workspace before the session opens.
    pub async fn with_workspace(
        script: Value,
        setup: impl FnOnce(&Path),
        configure: impl FnOnce(&mut RunConfig),
    ) -> Self {
        Self::with_model(script, |model| model, setup, configure).await
    }

    /// Like [`Session::with_workspace`], with the scripted model wrapped by `wrap` (a test's
    /// own `ModelClient` that fails some requests and hands the rest to the script).
    pub async fn with_model(
        script: Value,
        wrap: impl FnOnce(Arc<ScriptedModel>) -> Arc<dyn ModelClient>,
        setup: impl FnOnce(&Path),
        configure: impl FnOnce(&mut RunConfig),
    ) -> Self {
        let home = TempDir::new().expect("home dir");
        let cwd = TempDir::new().expect("cwd");
        setup(cwd.path());
        let model = Arc::new(ScriptedModel::from_json(&script.to_string()).expect("valid script"));
        let mut config = RunConfig::new(home.path().to_path_buf(), cwd.path().to_path_buf());
        configure(&mut config);
        let orch = Orchestrator::new(config, wrap(model.clone()))
            .await
            .expect("session starts");
        let events = orch.subscribe();
        Self {
            orch,
            model,
            home,
            cwd,
            events,
            seen: Vec::new(),
        }
    }

    /// Starts the root on `prompt` and waits until the tree is quiescent.
    pub async fn run(&mut self, prompt: &str) {
        self.orch.start(prompt).await.expect("root starts");
        self.orch.wait_quiescent().await;
        // The store and the rollouts are written from the log: tests read them up to date.
        self.orch
            .flush()
            .await
            .expect("the session's files are written");
        self.drain();
    }

    /// Moves every event emitted so far into `seen`.
    pub fn drain(&mut self) -> &[EventLine] {
        while let Ok(line) = self.events.try_recv() {
            self.seen.push(line);
        }
        &self.seen
    }

    /// Waits for the first event (after those already seen) that satisfies `pred`.
    pub async fn wait_event(&mut self, pred: impl Fn(&Event) -> bool) -> Event {
        if let Some(found) = self.seen.iter().find(|l| pred(&l.event)) {
            return found.event.clone();
        }
        loop {
            let line = self.events.recv().await.expect("event stream open");
            self.seen.push(line.clone());
            if pred(&line.event) {
                return line.event;
            }
        }
    }

    /// Output of the tool calls an agent made, in order, as (name, output).
    pub fn tool_results(&self, path: &str) -> Vec<(String, String)> {
        self.seen
            .iter()
            .filter_map(|l| match &l.event {
                Event::ToolResult {
                    path: p,
                    name,
                    output,
                    ..
                } if p.as_str() == path => Some((name.clone(), output.clone())),
                _ => None,
            })
            .collect()
    }

    /// The single output of the named tool by `path`.
    pub fn tool_output(&self, path: &str, name: &str) -> String {
        let outputs: Vec<String> = self
            .tool_results(path)
            .into_iter()
            .filter(|(n, _)| n == name)
            .map(|(_, o)| o)
            .collect();
        assert_eq!(
            outputs.len(),
            1,
            "{path} made {} {name} calls: {outputs:?}",
            outputs.len()
        );
        outputs.into_iter().next().expect("one output")
    }

    /// Types of every event seen, in order.
    pub fn event_types(&self) -> Vec<&'static str> {
        self.seen.iter().map(|l| l.event.type_name()).collect()
    }

    /// The payloads of the mails of one type (`NEW_TASK`, `MESSAGE`, `FINAL_ANSWER`) in the
    /// `n`th request (0-based) that `path` sent.
    pub fn mail_in_request(&self, path: &str, n: usize, label: &str) -> Vec<String> {
        let requests = self.model.requests_for(&Self::path(path));
        let request = requests
            .get(n)
            .unwrap_or_else(|| panic!("{path} made only {} requests", requests.len()));
        crate::mail_payloads(&request.input, label)
    }

    pub fn path(text: &str) -> AgentPath {
        AgentPath::parse(text).expect("valid path")
    }

    pub fn workspace(&self) -> &Path {
        self.cwd.path()
    }
}
