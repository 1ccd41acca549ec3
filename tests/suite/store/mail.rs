//! The mail queue as the projection of mail lines: send order until consumed, mail from the
//! user, a mail sent twice, and the session's unread mail.

use arbor_protocol::{AgentPath, Mail, MailConsumed, MailKind, RolloutItem, UserMail};

use super::{Seed, open_store, path, tid};

fn mail(to: &str, content: &str) -> Mail {
    Mail::new(
        AgentPath::root(),
        path(to),
        MailKind::Message,
        content.into(),
    )
}

#[test]
fn mail_keeps_send_order_until_consumed() {
    let (_dir, store) = open_store();
    let mut seed = Seed::new(1);
    seed.spawn(1, None, "/root")
        .spawn(2, Some(1), "/root/a")
        .spawn(3, Some(1), "/root/b");
    let sent: Vec<Mail> = (0..5).map(|i| mail("/root/a", &format!("m{i}"))).collect();
    for m in &sent {
        seed.line(1, RolloutItem::MailSent(Box::new(m.clone())));
    }
    seed.line(
        3,
        RolloutItem::UserMail(Box::new(UserMail {
            recipient_id: tid(3),
            mail: mail("/root/b", "other"),
        })),
    );
    seed.commit(&store);
    assert_eq!(store.unconsumed_mail(tid(2)).expect("list"), sent);

    let consumed = |m: &Mail| RolloutItem::MailConsumed(Box::new(MailConsumed { mail: m.clone() }));
    // Consumed once, twice, and a mail nobody sent: only the first changes anything.
    seed.line(2, consumed(&sent[1]))
        .line(2, consumed(&sent[1]))
        .line(2, consumed(&mail("/root/a", "never sent")));
    // A mail line written again (a replay) does not queue it twice.
    seed.line(1, RolloutItem::MailSent(Box::new(sent[0].clone())));
    seed.commit(&store);
    let left: Vec<_> = [0, 2, 3, 4].map(|i| sent[i].clone()).into();
    assert_eq!(store.unconsumed_mail(tid(2)).expect("list"), left);

    let in_session = store.unconsumed_in_session(tid(1)).expect("session");
    assert_eq!(in_session.len(), 5);
    assert_eq!(in_session[4].recipient_id, tid(3));
    assert_eq!(in_session[4].mail.content, "other");
    assert_eq!(store.unconsumed_mail(tid(9)).expect("nobody"), []);
    // What the store holds is what the state the lines gave holds.
    let loaded = store.load_session(tid(1)).expect("load");
    assert_eq!(
        loaded.unread(tid(2)).cloned().collect::<Vec<_>>(),
        seed.state().unread(tid(2)).cloned().collect::<Vec<_>>()
    );
}

#[test]
fn mail_consumed_before_its_commit_is_never_written() {
    let (_dir, store) = open_store();
    let mut seed = Seed::new(1);
    let m = mail("/root/a", "quick");
    seed.spawn(1, None, "/root")
        .spawn(2, Some(1), "/root/a")
        .line(1, RolloutItem::MailSent(Box::new(m.clone())))
        .line(
            2,
            RolloutItem::MailConsumed(Box::new(MailConsumed { mail: m })),
        )
        .commit(&store);
    assert!(
        store
            .unconsumed_in_session(tid(1))
            .expect("list")
            .is_empty()
    );
}
