//! The engine seam's local engine (`arbor_orchestrator::engine::Local`) on a session the CLI
//! ran: it reads the tree `arbor agents` shows, delivers mail `arbor mail` lists, and appends
//! closes and interrupts with the refusals the commands print. The Restate engine's side of
//! the seam is what `arbor send|close|interrupt --engine restate` run (`restate/`).

use arbor_orchestrator::OrchestratorError;
use arbor_orchestrator::engine::{Engine, Local};
use arbor_protocol::{AgentStatus, MailKind};
use serde_json::Value;

use crate::cli::{Workspace, session_of, text};

fn block_on<T>(work: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(work)
}

#[test]
fn the_local_engine_behind_the_seam_reads_delivers_and_closes_as_the_commands_do() {
    let ws = Workspace::new();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/refactor/script.json");
    let run = ws.exec(&script, &[]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let session = session_of(&text(&run.stderr));
    let engine = Local { home: ws.home() };

    let agents = block_on(engine.agents(&session)).expect("agents");
    let listed: Vec<Value> =
        serde_json::from_slice(&ws.run(&["agents", &session, "--json"]).stdout).expect("json");
    assert_eq!(agents.len(), listed.len());
    assert!(agents[0].path.is_root(), "root first: {agents:?}");
    for agent in &agents {
        let row = listed
            .iter()
            .find(|row| row["path"] == agent.path.as_str())
            .unwrap_or_else(|| panic!("{} not listed: {listed:?}", agent.path));
        assert_eq!(
            row["unread"].as_u64(),
            Some(agent.unread as u64),
            "{}",
            agent.path
        );
    }
    let child = agents
        .iter()
        .find(|agent| !agent.path.is_root())
        .expect("a child")
        .path
        .clone();

    let id = block_on(engine.deliver(&session, child.as_str(), MailKind::Message, "note"))
        .expect("deliver");
    let mail: Vec<Value> =
        serde_json::from_slice(&ws.run(&["mail", &session, child.as_str(), "--json"]).stdout)
            .expect("mail json");
    assert!(
        mail.iter()
            .any(|m| m["id"] == id.to_string().as_str() && m["content"] == "note"),
        "{mail:?}"
    );
    let after = block_on(engine.agents(&session)).expect("agents");
    let unread = after.iter().find(|a| a.path == child).map(|a| a.unread);
    assert_eq!(unread, Some(1), "the queued mail is unread: {after:?}");

    let previous = block_on(engine.close(&session, child.as_str())).expect("close");
    assert!(
        matches!(previous, AgentStatus::Completed(_)),
        "{previous:?}"
    );
    let again = block_on(engine.close(&session, child.as_str()));
    assert!(
        matches!(&again, Err(OrchestratorError::Refused(why)) if why.contains("is closed")),
        "{again:?}"
    );
    let unknown = block_on(engine.interrupt(&session, "/root/nobody"));
    assert!(
        matches!(&unknown, Err(OrchestratorError::Refused(why)) if why.contains("not found")),
        "{unknown:?}"
    );
    let root_close = block_on(engine.close(&session, "/root"));
    assert!(
        matches!(root_close, Err(OrchestratorError::Refused(_))),
        "{root_close:?}"
    );
}
