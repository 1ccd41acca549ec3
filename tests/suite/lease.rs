//! The session lease: one driver at a time, a dead driver's lease is taken over.

use arbor_orchestrator::{Lease, OrchestratorError};
use arbor_protocol::ThreadId;

#[test]
fn a_second_driver_is_refused_with_the_holders_pid() {
    let home = tempfile::TempDir::new().expect("home");
    let session = ThreadId::new();
    let first = Lease::acquire(home.path(), session).expect("first driver");
    assert_eq!(first.took_over_from, None);
    assert_eq!(
        Lease::holder(home.path(), session),
        Some(std::process::id())
    );
    match Lease::acquire(home.path(), session) {
        Err(OrchestratorError::Held { pid, .. }) => assert_eq!(pid, std::process::id().to_string()),
        other => panic!("expected the lease to be held, got {other:?}"),
    }
    drop(first);
    assert_eq!(Lease::holder(home.path(), session), None);
    assert!(
        Lease::acquire(home.path(), session).is_ok(),
        "free again after release"
    );
}

#[test]
fn a_dead_drivers_lease_is_taken_over_with_a_notice() {
    let home = tempfile::TempDir::new().expect("home");
    let session = ThreadId::new();
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead_pid = child.id();
    child.wait().expect("wait");
    let path = arbor_orchestrator::lease::lease_path(home.path(), session);
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(&path, format!("{dead_pid}\n")).expect("stale lease");
    assert_eq!(
        Lease::holder(home.path(), session),
        None,
        "nobody holds a dead pid's lease"
    );
    let lease = Lease::acquire(home.path(), session).expect("take over");
    assert_eq!(lease.took_over_from, Some(dead_pid));
    let recorded = std::fs::read_to_string(&path).expect("read");
    assert_eq!(recorded.trim(), std::process::id().to_string());
}
