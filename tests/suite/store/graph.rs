//! The spawn graph (children, descendants, paths, refused edges) and the thread index.

use arbor_agent_graph::{AgentGraphStore, EdgeStatus, StoreError};
use arbor_protocol::AgentStatus;

use super::{Seed, descendant_fixture, ids, open_store, path, tid};

#[test]
fn children_are_ordered_by_id_and_filtered_by_status() {
    let (_dir, store) = open_store();
    let mut seed = Seed::new(1);
    seed.spawn(1, None, "/root")
        .spawn(3, Some(1), "/root/c3")
        .spawn(2, Some(1), "/root/c2")
        .close(3)
        .commit(&store);
    let check = |filter, want: &[u64]| {
        assert_eq!(
            store.children(tid(1), filter).expect("children"),
            ids(want),
            "{filter:?}"
        );
    };
    check(None, &[2, 3]);
    check(Some(EdgeStatus::Open), &[2]);
    check(Some(EdgeStatus::Closed), &[3]);
    // A close of an agent the session does not have changes nothing.
    seed.close(99).close(2).commit(&store);
    check(Some(EdgeStatus::Open), &[]);
    assert_eq!(
        store.edge(tid(2)).expect("edge"),
        Some((tid(1), EdgeStatus::Closed))
    );
    assert_eq!(store.edge(tid(99)).expect("edge"), None);
}

#[test]
fn descendants_are_breadth_first_and_filtered_on_every_edge() {
    let (_dir, store) = descendant_fixture();
    let graph: &dyn AgentGraphStore = &store;
    let check = |filter, want: &[u64]| {
        assert_eq!(
            graph.descendants(tid(20), filter).expect("bfs"),
            ids(want),
            "{filter:?}"
        );
    };
    check(None, &[21, 22, 25, 23, 24, 26]);
    check(Some(EdgeStatus::Open), &[21, 22, 24]);
    check(Some(EdgeStatus::Closed), &[25, 26]);
    assert_eq!(store.descendants(tid(24), None).expect("leaf"), ids(&[]));
}

#[test]
fn paths_resolve_to_children_and_descendants_through_matching_edges() {
    let (_dir, store) = descendant_fixture();
    let open = Some(EdgeStatus::Open);
    let closed = Some(EdgeStatus::Closed);
    let child = |at: &str, filter| {
        store
            .find_child_by_path(tid(20), &path(at), filter)
            .expect("child")
    };
    let below = |at: &str, filter| {
        store
            .find_descendant_by_path(tid(20), &path(at), filter)
            .expect("descendant")
    };
    assert_eq!(child("/root/t22", open), Some(tid(22)));
    assert_eq!(child("/root/t25", open), None);
    assert_eq!(
        child("/root/t21/t24", None),
        None,
        "a grandchild is not a child"
    );
    assert_eq!(below("/root/t21/t24", open), Some(tid(24)));
    assert_eq!(
        below("/root/t22/t23", open),
        None,
        "the edge into 23 is closed"
    );
    assert_eq!(below("/root/t22/t23", None), Some(tid(23)));
    assert_eq!(below("/root/t25/t26", open), None);
    assert_eq!(below("/root/t25/t26", closed), Some(tid(26)));
    assert_eq!(
        below("/root", None),
        None,
        "the root is not its own descendant"
    );

    // A closed agent's path reused by a new spawn resolves to the open agent.
    let mut seed = super::descendant_seed();
    seed.spawn(27, Some(20), "/root/t25").commit(&store);
    assert_eq!(child("/root/t25", None), Some(tid(27)));
    assert_eq!(child("/root/t25", closed), Some(tid(25)));
    assert_eq!(below("/root/t25", open), Some(tid(27)));
}

#[test]
fn lines_of_threads_the_session_does_not_have_change_nothing() {
    let (_dir, store) = descendant_fixture();
    let mut seed = super::descendant_seed();
    seed.status(98, AgentStatus::Running)
        .close(97)
        .commit(&store);
    assert_eq!(store.descendants(tid(20), None).expect("bfs").len(), 6);
    assert_eq!(store.thread(tid(98)).expect("read"), None);
}

#[test]
fn thread_index_keeps_records_statuses_and_sessions() {
    let (_dir, store) = open_store();
    let mut one = Seed::new(1);
    one.spawn(1, None, "/root")
        .spawn_with(2, Some(1), "/root/w", |meta| {
            meta.nickname = Some("Plato".into());
            meta.effort = Some("high".into());
        });
    one.commit(&store);
    Seed::new(3).spawn(3, None, "/root").commit(&store);
    let got = store.thread(tid(2)).expect("read").expect("present");
    assert_eq!(got.meta.nickname.as_deref(), Some("Plato"));
    assert_eq!(got.meta.effort.as_deref(), Some("high"));
    assert_eq!(got.status, AgentStatus::PendingInit);
    assert!(
        got.rollout_path.starts_with("sessions/"),
        "stored relative to the home: {}",
        got.rollout_path
    );
    let done = AgentStatus::Completed(Some("all done".into()));
    one.status(2, done.clone()).commit(&store);
    let again = store.thread(tid(2)).expect("read").expect("present");
    assert_eq!(again.status, done);
    assert!(again.updated_at > got.updated_at);

    let in_session: Vec<_> = store.threads_in_session(tid(1)).expect("list");
    assert_eq!(
        in_session.iter().map(|r| r.id()).collect::<Vec<_>>(),
        ids(&[1, 2])
    );
    let sessions = store.sessions().expect("sessions");
    assert_eq!(
        sessions.iter().map(|r| r.id()).collect::<Vec<_>>(),
        ids(&[3, 1])
    );

    assert_eq!(
        store
            .find_session_by_prefix(&tid(3).to_string())
            .expect("full id")
            .id(),
        tid(3)
    );
    let err = store
        .find_session_by_prefix("00000000")
        .expect_err("ambiguous");
    assert!(err.to_string().contains("ambiguous"), "{err}");
    let err = store.find_session_by_prefix("ffffffff").expect_err("none");
    assert!(err.to_string().contains("no session matches"), "{err}");
    let err = store.find_session_by_prefix("0000").expect_err("short");
    assert!(matches!(err, StoreError::PrefixTooShort(_)), "{err}");
}
