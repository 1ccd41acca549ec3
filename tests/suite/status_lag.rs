//! Reads from other processes when the store's projections lag the rollout (they are
//! committed a little after the rollout's lines): for a status the end of the rollout decides,
//! and a mail the recipient's rollout shows consumed is not unread.

use arbor_protocol::AgentStatus;
use serde_json::{Value, json};

use crate::cli::{Workspace, text};
use crate::resume::{Driver, agent, agents, root_waits_for_w, write_script};

/// Puts the stored status of the agents at `paths` back to `status`, as if their latest
/// status projections had not landed yet.
fn store_behind(ws: &Workspace, session: &str, paths: &[&str], status: &AgentStatus) {
    let list = agents(ws, session);
    let store = arbor_agent_graph::Store::open(&ws.home()).expect("store");
    for path in paths {
        let id = agent(&list, path)["id"].as_str().expect("id");
        let id = arbor_protocol::ThreadId::parse(id).expect("id");
        store.set_thread_status(id, status).wait().expect("status");
    }
    store.close();
}

/// Under a dead driver, read commands take a status the store still shows as active from the
/// rollout: an agent whose last turn ended shows how it ended.
#[test]
fn under_a_dead_driver_a_finished_turn_shows_how_it_ended() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "lag.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "go"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"say": "all done"}]]},
            {"match": "/root/w", "responses": [[{"say": "w done"}]]}
        ]}),
    );
    let driver = Driver::start(&ws, &script, &[]);
    let session = driver.session.clone();
    assert_eq!(driver.wait(), 0);
    store_behind(&ws, &session, &["/root", "/root/w"], &AgentStatus::Running);
    let list = agents(&ws, &session);
    assert_eq!(
        agent(&list, "/root/w")["status"],
        json!({"completed": "w done"})
    );
    assert_eq!(
        agent(&list, "/root")["status"],
        json!({"completed": "all done"})
    );
    let tree = ws.run(&["tree", &session]);
    assert!(
        text(&tree.stdout).contains("completed: w done"),
        "{}",
        text(&tree.stdout)
    );
}

/// Under a live driver, a store still saying `queued` for an agent whose rollout shows its
/// turn started reports it running, to read commands and to `arbor interrupt` alike.
#[test]
fn under_a_live_driver_a_started_turn_is_running() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "live.json",
        &root_waits_for_w(json!([
            [{"call": "exec_command", "args": {"cmd": "exec sleep 600", "timeout_ms": 600000}}]])),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    driver.until(|e| e["type"] == "tool.call" && e["path"] == "/root/w");
    let session = driver.session.clone();
    store_behind(&ws, &session, &["/root/w"], &AgentStatus::Queued);
    assert_eq!(
        agent(&agents(&ws, &session), "/root/w")["status"],
        "running"
    );
    let out = ws.run(&["interrupt", &session, "/root/w"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).expect("json"),
        json!({"previous_status": "running"})
    );
    driver.until(|e| e["type"] == "turn.aborted" && e["path"] == "/root/w");
    assert_eq!(driver.wait(), 0);
}

/// A mail whose `mail_consumed` line is in its recipient's rollout is not unread, even while
/// the store's consumed mark has not landed (a driver killed in between): `agents` does not
/// count it and `mail` does not list it; mail the rollout has not consumed still shows.
#[test]
fn a_mail_the_rollout_shows_consumed_is_not_unread() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "consumed.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "go"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"call": "send_message", "args": {"target": "/root/w", "message": "later"}}],
                [{"say": "all done"}]]},
            {"match": "/root/w", "responses": [[{"say": "w done"}]]}
        ]}),
    );
    let driver = Driver::start(&ws, &script, &[]);
    let session = driver.session.clone();
    assert_eq!(driver.wait(), 0);
    let unread_of = |path: &str| agent(&agents(&ws, &session), path)["unread"].clone();
    let listed = |path: &str| -> Vec<String> {
        let out = ws.run(&["mail", &session, path, "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let mail: Value = serde_json::from_slice(&out.stdout).expect("json");
        mail.as_array()
            .expect("array")
            .iter()
            .map(|m| m["content"].as_str().expect("content").to_string())
            .collect()
    };
    // The queue-only message was never consumed: it is unread in both views.
    assert_eq!(unread_of("/root/w"), 1);
    assert_eq!(listed("/root/w"), ["later"]);

    // Every consumed mark back to unconsumed, as if none had landed.
    let conn = rusqlite::Connection::open(ws.home().join(arbor_agent_graph::STATE_FILE_NAME))
        .expect("sqlite");
    let reset = conn
        .execute(
            "UPDATE mail SET consumed_at = NULL WHERE consumed_at IS NOT NULL",
            [],
        )
        .expect("reset marks");
    assert!(reset >= 2, "the spawn and the result mail were consumed");
    drop(conn);

    assert_eq!(unread_of("/root/w"), 1, "the spawn message was consumed");
    assert_eq!(listed("/root/w"), ["later"]);
    assert_eq!(unread_of("/root"), 0, "the result was consumed");
    assert!(listed("/root").is_empty());
}
