//! The spawn graph (children, descendants, paths, refused edges) and the thread index.

use arbor_agent_graph::{AgentGraphStore, EdgeStatus, StoreError};
use arbor_protocol::AgentStatus;

use super::{descendant_fixture, ids, open_store, path, record, seed_edges, seed_threads, tid};

#[test]
fn children_are_ordered_by_id_and_filtered_by_status() {
    let (_dir, store) = open_store();
    seed_threads(
        &store,
        1,
        &[
            (1, None, "/root"),
            (2, Some(1), "/root/c2"),
            (3, Some(1), "/root/c3"),
        ],
    );
    seed_edges(
        &store,
        &[(1, 3, EdgeStatus::Closed), (1, 2, EdgeStatus::Open)],
    );
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

    // A missing edge: a no-op, not an error.
    assert!(
        !store
            .set_edge_status(tid(99), EdgeStatus::Closed)
            .wait()
            .expect("no-op")
    );
    // Upsert overwrites (last writer wins), and so does set_edge_status.
    seed_edges(&store, &[(1, 3, EdgeStatus::Open)]);
    check(Some(EdgeStatus::Open), &[2, 3]);
    assert!(
        store
            .set_edge_status(tid(2), EdgeStatus::Closed)
            .wait()
            .expect("close")
    );
    check(Some(EdgeStatus::Open), &[3]);
    assert_eq!(
        store.edge(tid(2)).expect("edge"),
        Some((tid(1), EdgeStatus::Closed))
    );
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
    seed_threads(&store, 20, &[(27, Some(20), "/root/t25")]);
    seed_edges(&store, &[(20, 27, EdgeStatus::Open)]);
    assert_eq!(child("/root/t25", None), Some(tid(27)));
    assert_eq!(child("/root/t25", closed), Some(tid(25)));
    assert_eq!(below("/root/t25", open), Some(tid(27)));
}

#[test]
fn edges_refuse_cycles_and_unknown_threads() {
    let (_dir, store) = descendant_fixture();
    let err = store
        .upsert_edge(tid(24), tid(20), EdgeStatus::Open)
        .wait()
        .expect_err("cycle");
    assert!(matches!(err, StoreError::Cycle { .. }), "{err}");
    let err = store
        .upsert_edge(tid(20), tid(98), EdgeStatus::Open)
        .wait()
        .expect_err("unknown child");
    assert!(
        matches!(err, StoreError::UnknownThread(id) if id == tid(98)),
        "{err}"
    );
    seed_threads(&store, 30, &[(30, None, "/root")]);
    let err = store
        .upsert_edge(tid(20), tid(30), EdgeStatus::Open)
        .wait()
        .expect_err("another session");
    assert!(err.to_string().contains("different sessions"), "{err}");
    // The failed writes left the graph as it was.
    assert_eq!(store.descendants(tid(20), None).expect("bfs").len(), 6);
}

#[test]
fn thread_index_keeps_records_statuses_and_sessions() {
    let (_dir, store) = open_store();
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/w")]);
    seed_threads(&store, 3, &[(3, None, "/root")]);
    let mut want = record(2, 1, Some(1), "/root/w");
    want.nickname = Some("Plato".into());
    want.effort = Some("high".into());
    store.upsert_thread(want.clone()).wait().expect("update");
    assert_eq!(store.thread(tid(2)).expect("read"), Some(want.clone()));

    let done = AgentStatus::Completed(Some("all done".into()));
    store
        .set_thread_status(tid(2), &done)
        .wait()
        .expect("status");
    let got = store.thread(tid(2)).expect("read").expect("present");
    assert_eq!(got.status, done);
    assert!(got.updated_at > want.updated_at);
    let err = store
        .set_thread_status(tid(77), &AgentStatus::Running)
        .wait()
        .expect_err("unknown");
    assert!(matches!(err, StoreError::UnknownThread(_)), "{err}");

    let in_session: Vec<_> = store.threads_in_session(tid(1)).expect("list");
    assert_eq!(
        in_session.iter().map(|r| r.id).collect::<Vec<_>>(),
        ids(&[1, 2])
    );
    let sessions = store.sessions().expect("sessions");
    assert_eq!(
        sessions.iter().map(|r| r.id).collect::<Vec<_>>(),
        ids(&[3, 1])
    );

    assert_eq!(
        store
            .find_session_by_prefix(&tid(3).to_string())
            .expect("full id")
            .id,
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
