//! The session tree rendered as text, Graphviz dot and Mermaid.

use arbor_agent_graph::{SessionTree, Store};
use arbor_protocol::AgentStatus;

use super::{Seed, open_store, tid};

/// Root R=1 with children a=2 (open) and b=3 (closed), and a/c=4 (open) under a.
fn tree_fixture() -> (tempfile::TempDir, Store) {
    let (dir, store) = open_store();
    let mut seed = Seed::new(1);
    seed.spawn_with(1, None, "/root", |m| m.nickname = Some("Ada".into()))
        .spawn_with(2, Some(1), "/root/a", |m| {
            m.nickname = Some("Plato".into());
            m.role = "worker".into();
        })
        .spawn_with(3, Some(1), "/root/b", |m| {
            m.nickname = Some("Hume \"the\" Scot".into());
        })
        .spawn_with(4, Some(2), "/root/a/c", |m| m.role = "explorer".into())
        .status(1, AgentStatus::Running)
        .status(2, AgentStatus::Completed(Some("done\nsecond line".into())))
        .status(4, AgentStatus::Errored("boom".into()))
        .close(3)
        .commit(&store);
    (dir, store)
}

#[test]
fn tree_renders_as_text() {
    let (_dir, store) = tree_fixture();
    let open = SessionTree::load(&store, tid(1), false).expect("load");
    assert_eq!(
        open.to_text(),
        "/root (Ada, default) running\n\
         \x20 /root/a (Plato, worker) completed: done…\n\
         \x20   /root/a/c (explorer) errored: boom\n"
    );
    let all = SessionTree::load(&store, tid(1), true).expect("load");
    assert_eq!(
        all.to_text(),
        "/root (Ada, default) running\n\
         \x20 /root/a (Plato, worker) completed: done…\n\
         \x20   /root/a/c (explorer) errored: boom\n\
         \x20 /root/b (Hume \"the\" Scot, default) closed [closed]\n"
    );
    assert_eq!(all.len(), 4);

    let mut adjusted = SessionTree::load(&store, tid(1), false).expect("load");
    adjusted.adjust_records(|record| {
        if record.status == AgentStatus::Running {
            record.status = AgentStatus::Interrupted("process_exit".into());
        }
    });
    assert!(
        adjusted
            .to_text()
            .starts_with("/root (Ada, default) interrupted: process_exit\n"),
        "{}",
        adjusted.to_text()
    );
}

#[test]
fn tree_renders_as_dot_and_mermaid() {
    let (_dir, store) = tree_fixture();
    let all = SessionTree::load(&store, tid(1), true).expect("load");
    let (r, a, b, c) = (tid(1), tid(2), tid(3), tid(4));
    assert_eq!(
        all.to_dot(),
        format!(
            "digraph session {{\n  node [shape=box];\n\
             \x20 \"{r}\" [label=\"/root\\n(Ada, default)\\nrunning\"];\n\
             \x20 \"{a}\" [label=\"/root/a\\n(Plato, worker)\\ncompleted: done…\"];\n\
             \x20 \"{c}\" [label=\"/root/a/c\\n(explorer)\\nerrored: boom\"];\n\
             \x20 \"{b}\" [label=\"/root/b\\n(Hume \\\"the\\\" Scot, default)\\nclosed\"];\n\
             \x20 \"{r}\" -> \"{a}\";\n\
             \x20 \"{r}\" -> \"{b}\" [style=dashed, label=\"closed\"];\n\
             \x20 \"{a}\" -> \"{c}\";\n\
             }}\n"
        )
    );
    assert_eq!(
        all.to_mermaid(),
        "flowchart TD\n\
         \x20 n0[\"/root<br/>(Ada, default)<br/>running\"]\n\
         \x20 n1[\"/root/a<br/>(Plato, worker)<br/>completed: done…\"]\n\
         \x20 n3[\"/root/a/c<br/>(explorer)<br/>errored: boom\"]\n\
         \x20 n2[\"/root/b<br/>(Hume #quot;the#quot; Scot, default)<br/>closed\"]\n\
         \x20 n0 --> n1\n\
         \x20 n0 -. closed .-> n2\n\
         \x20 n1 --> n3\n"
    );
    let open = SessionTree::load(&store, tid(1), false).expect("load");
    assert!(!open.to_mermaid().contains("/root/b"));
    assert!(!open.to_dot().contains("/root/b"));
}
