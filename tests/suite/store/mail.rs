//! Durable mail: enqueue order, consumption, concurrent senders, surviving a SIGKILL.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use arbor_agent_graph::Store;
use arbor_protocol::{AgentPath, Mail, MailId, MailKind};

use super::{open_store, path, seed_threads, tid};

/// Set in the environment of the child process of the SIGKILL test: the store's home.
const CRASH_ENV: &str = "ARBOR_CRASH_CHILD_HOME";
/// Acknowledged mails the parent waits for before it kills the child.
const CRASH_ACKS: usize = 50;

fn mail(to: &str, content: &str) -> Mail {
    Mail::new(
        AgentPath::root(),
        path(to),
        MailKind::Message,
        content.into(),
    )
}

/// `unknown_mail` names, in the order asked, the ids the store has never held; consumed mail
/// is known.
#[test]
fn unknown_mail_names_only_ids_never_stored() {
    let (_dir, store) = open_store();
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/a")]);
    let stored: Vec<Mail> = (0..2).map(|i| mail("/root/a", &format!("m{i}"))).collect();
    for m in &stored {
        store
            .enqueue_mail(tid(1), tid(2), m)
            .wait()
            .expect("enqueue");
    }
    store
        .mark_mail_consumed(stored[0].id)
        .wait()
        .expect("consume");
    let (x, y) = (MailId::new(), MailId::new());
    let asked = [stored[0].id, x, stored[1].id, y];
    assert_eq!(store.unknown_mail(&asked).expect("look up"), [x, y]);
    assert!(store.unknown_mail(&[]).expect("nothing asked").is_empty());
}

#[test]
fn mail_keeps_enqueue_order_until_consumed() {
    let (_dir, store) = open_store();
    seed_threads(
        &store,
        1,
        &[
            (1, None, "/root"),
            (2, Some(1), "/root/a"),
            (3, Some(1), "/root/b"),
        ],
    );
    let sent: Vec<Mail> = (0..5).map(|i| mail("/root/a", &format!("m{i}"))).collect();
    for m in &sent {
        store
            .enqueue_mail(tid(1), tid(2), m)
            .wait()
            .expect("enqueue");
    }
    store
        .enqueue_mail_batch(vec![(tid(1), tid(3), mail("/root/b", "other"))])
        .wait()
        .expect("batch");
    assert_eq!(store.unconsumed_mail(tid(2)).expect("list"), sent);

    assert!(
        store
            .mark_mail_consumed(sent[1].id)
            .wait()
            .expect("consume")
    );
    assert!(
        !store
            .mark_mail_consumed(sent[1].id)
            .wait()
            .expect("twice is fine")
    );
    assert!(
        !store
            .mark_mail_consumed(MailId::new())
            .wait()
            .expect("unknown is fine")
    );
    let left: Vec<_> = [0, 2, 3, 4].map(|i| sent[i].clone()).into();
    assert_eq!(store.unconsumed_mail(tid(2)).expect("list"), left);

    // Enqueueing a stored id again does not deliver it twice.
    store
        .enqueue_mail(tid(1), tid(2), &sent[1])
        .wait()
        .expect("again");
    store
        .enqueue_mail(tid(1), tid(2), &sent[0])
        .wait()
        .expect("again");
    assert_eq!(store.unconsumed_mail(tid(2)).expect("list"), left);

    let in_session = store.unconsumed_in_session(tid(1)).expect("session");
    assert_eq!(in_session.len(), 5);
    assert_eq!(in_session[4].recipient_id, tid(3));
    assert_eq!(in_session[4].mail.content, "other");
    let to_a = in_session
        .iter()
        .filter(|q| q.recipient_id == tid(2))
        .count();
    assert_eq!(to_a, 4);
    assert_eq!(store.unconsumed_mail(tid(9)).expect("nobody"), []);
}

#[test]
fn concurrent_enqueuers_are_all_acknowledged_and_kept_in_order() {
    let (_dir, store) = open_store();
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/a")]);
    let per_thread = 40;
    let sent: Vec<Vec<Mail>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let store = store.clone();
                scope.spawn(move || {
                    (0..per_thread)
                        .map(|i| {
                            let m = mail("/root/a", &format!("w{w} m{i}"));
                            store
                                .enqueue_mail(tid(1), tid(2), &m)
                                .wait()
                                .expect("enqueue");
                            m
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    let stored = store.unconsumed_mail(tid(2)).expect("list");
    assert_eq!(stored.len(), 4 * per_thread);
    for mine in sent {
        let order: Vec<_> = stored
            .iter()
            .filter(|m| mine.contains(m))
            .cloned()
            .collect();
        assert_eq!(order, mine, "each sender's mail stays in send order");
    }
}

/// Not a test on its own: the child process of `acknowledged_mail_survives_sigkill`. Without
/// [`CRASH_ENV`] it returns at once.
#[test]
fn crash_child_writer() {
    let Some(home) = std::env::var_os(CRASH_ENV) else {
        return;
    };
    let store = Store::open(Path::new(&home)).expect("child opens the store");
    let mut out = std::io::stdout().lock();
    for i in 0.. {
        let m = mail("/root/a", &format!("crash {i}"));
        store
            .enqueue_mail(tid(1), tid(2), &m)
            .wait()
            .expect("enqueue");
        writeln!(out, "acked {}", m.id).expect("write ack");
        out.flush().expect("flush ack");
    }
}

/// Kills the child process if a test fails before it does.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn acknowledged_mail_survives_sigkill() {
    use std::os::unix::process::ExitStatusExt;

    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/a")]);
    store.close();
    drop(store);

    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "store::mail::crash_child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_ENV, dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn child"),
    );
    let stdout = child.0.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked = Vec::new();
    while acked.len() < CRASH_ACKS {
        let Some(line) = lines.next() else {
            panic!("child stopped after {} acks", acked.len());
        };
        let line = line.expect("read child output");
        // libtest's `test store::mail::crash_child_writer ... ` may share the first line.
        if let Some((_, id)) = line.split_once("acked ") {
            acked.push(MailId::parse(id).expect("mail id"));
        }
    }
    let pid = libc::pid_t::try_from(child.0.id()).expect("pid");
    // SAFETY: `kill` has no memory-safety preconditions; `pid` is our own unreaped child.
    let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(rc, 0, "kill failed");
    let status = child.0.wait().expect("reap child");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    drop(lines);

    let store = Store::open(dir.path()).expect("reopen after the kill");
    let stored: Vec<MailId> = store
        .unconsumed_mail(tid(2))
        .expect("list")
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert!(
        stored.starts_with(&acked),
        "acked {} mails, found {} stored, acked ones missing or out of order",
        acked.len(),
        stored.len()
    );
}
