//! Commands from outside a Restate tree: the root woken once by its children's results, then
//! `arbor send` (queue only) and `arbor followup` (wakes the target, the root stays asleep),
//! `arbor mail`, `arbor resume` of the completed tree, and `arbor tree --format dot|mermaid`.

use std::ffi::OsString;

use serde_json::{Value, json};

use super::cluster::Cluster;
use super::driver::{Driver, ok, refused, stderr, stdout};

fn turns(events: &[Value], path: &str) -> usize {
    events
        .iter()
        .filter(|e| e["type"] == "turn.started" && e["path"] == path)
        .count()
}

fn mail(cluster: &Cluster, session: &str, target: &[&str]) -> Vec<Value> {
    let mut args = vec!["mail", session];
    args.extend_from_slice(target);
    args.push("--json");
    serde_json::from_str(&ok(&cluster.arbor(&args))).expect("mail --json")
}

#[test]
fn send_followup_mail_resume_and_drawings_from_outside() {
    let cluster = Cluster::start(2);
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "first a"}},
             {"call": "spawn_agent", "args": {"task_name": "b", "message": "first b"}}],
            [{"say": "spawned"}],
            [{"say": "woken once: {{input}}"}],
            [{"say": "second run: {{input}}"}]
        ]},
        {"match": "/root/a", "responses": [
            {"delay_ms": 300, "items": [{"say": "a did {{input}}"}]},
            [{"say": "a again: {{input}}"}]
        ]},
        {"match": "/root/b", "responses": [
            {"delay_ms": 600, "items": [{"say": "b did {{input}}"}]}
        ]}
    ]});
    // Wake-once: the root's turn ends at once; both results wake it once, together.
    let run = Driver::exec(&cluster, &script, "start", &[]).finish();
    run.ok();
    let session = run
        .events
        .iter()
        .find(|e| e["type"] == "session.started")
        .and_then(|e| e["session_id"].as_str())
        .expect("session")
        .to_string();
    assert_eq!(turns(&run.events, "/root"), 2);
    assert_eq!(
        run.final_message().as_deref(),
        Some("woken once: b did first b")
    );
    let root = arbor_protocol::AgentPath::root();
    let history = cluster.history(&session, &root);
    let results = history
        .items
        .iter()
        .filter(|item| {
            matches!(item, arbor_protocol::ResponseItem::Message { content, .. }
                if content.contains("Message Type: FINAL_ANSWER"))
        })
        .count();
    assert_eq!(results, 2, "both results in the root's second turn");

    // Queue only: stored, listed, no turn.
    let sent = cluster.arbor(&["send", &session, "/root/a", "a note"]);
    let id = ok(&sent).trim().to_string();
    let unread = mail(&cluster, &session, &["/root/a"]);
    assert_eq!(unread.len(), 1, "{unread:?}");
    assert_eq!(unread[0]["id"], id.as_str());
    assert_eq!(
        (
            &unread[0]["kind"],
            &unread[0]["author"],
            &unread[0]["trigger_turn"]
        ),
        (&json!("message"), &json!("/root"), &json!(false))
    );
    assert_eq!(unread[0]["content"], "a note");
    let listing = ok(&cluster.arbor(&["mail", &session, "/root/a"]));
    assert!(
        listing.starts_with(&format!("{id}  message  /root → /root/a\na note\n")),
        "{listing}"
    );
    let rows = cluster.agents(&session);
    let a = rows
        .iter()
        .find(|r| r.path.as_str() == "/root/a")
        .expect("a");
    assert_eq!(a.unread, 1);
    assert!(!a.resident, "queue-only mail wakes nobody");
    refused(
        &cluster.arbor(&["send", &session, "nope", "x"]),
        "live agent path `/root/nope` not found",
    );
    refused(
        &cluster.arbor(&["followup", &session, "/root", "x"]),
        "Follow-up tasks can't target the root agent",
    );
    refused(
        &cluster.arbor(&["mail", &session, "/root/zzz"]),
        &format!("agent path `/root/zzz` not found in session {session}"),
    );

    // A follow-up wakes a; it takes the note and the task in one turn; the root stays asleep
    // and a's result waits for it.
    let followup = cluster.arbor(&["followup", &session, "/root/a", "more work"]);
    assert_eq!(
        ok(&followup),
        "a again: more work\n",
        "{}",
        stderr(&followup)
    );
    let history = cluster.history(
        &session,
        &arbor_protocol::AgentPath::parse("/root/a").expect("a"),
    );
    let note_at = history.items.iter().position(|item| {
        matches!(item, arbor_protocol::ResponseItem::Message { content, .. } if content.ends_with("a note"))
    });
    assert!(note_at.is_some(), "the note reached a");
    let root_mail = mail(&cluster, &session, &[]);
    assert_eq!(root_mail.len(), 1, "{root_mail:?}");
    assert_eq!(
        (&root_mail[0]["kind"], &root_mail[0]["author"]),
        (&json!("result"), &json!("/root/a"))
    );
    let rows = cluster.agents(&session);
    assert_eq!(rows[0].unread, 1);

    // Resume: a new run of the root takes the prompt and its waiting mail.
    let args: Vec<OsString> = ["resume", &session, "carry on", "--json"]
        .iter()
        .map(OsString::from)
        .collect();
    let resumed = Driver::spawn(&cluster, &args).finish();
    resumed.ok();
    assert_eq!(
        resumed.final_message().as_deref(),
        Some("second run: carry on")
    );
    assert!(
        resumed
            .events
            .iter()
            .all(|e| e["type"] != "session.started"),
        "only the new run's events"
    );
    assert_eq!(turns(&resumed.events, "/root"), 1);
    assert!(mail(&cluster, &session, &["/root"]).is_empty());
    let again = cluster.arbor(&["resume", &session, "--script", "x.json", "more"]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));

    // Drawings, by the local engine's renderers.
    let dot = ok(&cluster.arbor(&["tree", &session, "--format", "dot"]));
    assert!(dot.starts_with("digraph session {"), "{dot}");
    assert!(dot.contains("/root/a\\n("), "{dot}");
    assert!(dot.contains(&format!("\"{session}\" -> ")), "{dot}");
    let mermaid = ok(&cluster.arbor(&["tree", &session, "--format", "mermaid"]));
    assert!(mermaid.starts_with("flowchart TD\n"), "{mermaid}");
    assert!(mermaid.contains("[\"/root/b<br/>("), "{mermaid}");
    assert!(mermaid.contains("n0 --> n1"), "{mermaid}");
    let shown = cluster.arbor(&["resume", &session]);
    let text = ok(&shown);
    assert!(
        text.starts_with("/root (default) completed: second run: carry on\n"),
        "{text}"
    );
    assert!(text.contains("\n  /root/a ("), "{text}");
    assert!(
        stderr(&shown).contains(&format!("session: {session} (3 agents)")),
        "{}",
        stderr(&shown)
    );

    // A closed agent takes no mail.
    ok(&cluster.arbor(&["close", &session, "/root/a"]));
    refused(
        &cluster.arbor(&["send", &session, "/root/a", "x"]),
        "agent /root/a is closed",
    );
    let mermaid = stdout(&cluster.arbor(&["tree", &session, "--format", "mermaid", "--all"]));
    assert!(mermaid.contains("-. closed .->"), "{mermaid}");
}
