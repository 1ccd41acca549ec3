//! Durable mail (behaviour §4): a mail is committed and synced before its sender hears it was
//! sent, and stays until the recipient marks it consumed.

use arbor_protocol::{AgentPath, Mail, MailId, MailKind, ThreadId, Timestamp};
use rusqlite::OptionalExtension;
use rusqlite::{Connection, Row, params};

use crate::error::{Fail, OpResult};
use crate::walk::parse_id;
use crate::{Store, StoreError, Ticket};

/// An unconsumed mail and the thread it is addressed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMail {
    pub recipient_id: ThreadId,
    pub mail: Mail,
}

const MAIL_COLUMNS: &str = "recipient_id, id, author, recipient, kind, trigger_turn, content, \
                            created_at";

impl Store {
    /// Stores one mail for the thread `recipient_id` of `session_id`. The ticket resolves once
    /// the row is committed and synced. Enqueueing a mail id that is already stored (consumed or
    /// not) changes nothing, so a retried send is never delivered twice.
    ///
    /// When the writer has nothing else to do, the commit runs right here, on the calling
    /// thread, and the ticket comes back resolved: a sender waiting on its mail is spared two
    /// thread hand-offs.
    pub fn enqueue_mail(
        &self,
        session_id: ThreadId,
        recipient_id: ThreadId,
        mail: &Mail,
    ) -> Ticket<()> {
        self.submit_independent(
            "enqueue mail",
            true,
            inserting(session_id, recipient_id, mail),
        )
    }

    /// Like [`Self::enqueue_mail`], but always through the writer thread: for a sender that
    /// knows others are sending at the same moment, so that their mails share one commit
    /// instead of taking a sync each, one after another.
    pub fn enqueue_mail_shared(
        &self,
        session_id: ThreadId,
        recipient_id: ThreadId,
        mail: &Mail,
    ) -> Ticket<()> {
        self.submit_independent(
            "enqueue mail",
            false,
            inserting(session_id, recipient_id, mail),
        )
    }

    /// Like [`Self::enqueue_mail`], but the commit may wait up to a millisecond for other
    /// writes to share it: for mail whose sender does not wait on it (a turn's result, sent
    /// after its agent moved on). The ticket still resolves only once the mail is durable.
    pub fn enqueue_mail_deferred(
        &self,
        session_id: ThreadId,
        recipient_id: ThreadId,
        mail: &Mail,
    ) -> Ticket<()> {
        self.submit_within(
            "enqueue mail",
            crate::writer::DEFER_WINDOW,
            inserting(session_id, recipient_id, mail),
        )
    }

    /// Stores many mails in one transaction: all of them or none.
    pub fn enqueue_mail_batch(&self, batch: Vec<(ThreadId, ThreadId, Mail)>) -> Ticket<()> {
        self.submit("enqueue mail batch", move |conn| {
            for (session_id, recipient_id, mail) in &batch {
                insert_mail(conn, *session_id, *recipient_id, mail)?;
            }
            Ok(())
        })
    }

    /// Marks a mail consumed. Idempotent: resolves to true only for the call that marked it;
    /// an unknown id is not an error.
    /// The mark is a projection of the recipient's `mail_consumed` rollout line (revival
    /// deduplicates against the rollout), so it may wait to share the next commit.
    pub fn mark_mail_consumed(&self, mail_id: MailId) -> Ticket<bool> {
        self.submit_lazy("mark mail consumed", move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE mail SET consumed_at = ?2 WHERE id = ?1 AND consumed_at IS NULL",
                )?
                .execute(params![mail_id.to_string(), Timestamp::now().as_millis()])?;
            Ok(changed > 0)
        })
    }

    /// Those of `ids` that are not in the store, in the order given; one read transaction.
    pub fn unknown_mail(&self, ids: &[MailId]) -> Result<Vec<MailId>, StoreError> {
        self.read("look up mail", |conn| {
            let mut stmt = conn.prepare_cached("SELECT 1 FROM mail WHERE id = ?1")?;
            let mut unknown = Vec::new();
            for id in ids {
                let found: Option<i64> = stmt
                    .query_row(params![id.to_string()], |row| row.get(0))
                    .optional()?;
                if found.is_none() {
                    unknown.push(*id);
                }
            }
            Ok(unknown)
        })
    }

    /// The thread's unconsumed mail, in enqueue order.
    pub fn unconsumed_mail(&self, recipient_id: ThreadId) -> Result<Vec<Mail>, StoreError> {
        self.read("list unconsumed mail", |conn| {
            let queued = query(
                conn,
                &format!(
                    "SELECT {MAIL_COLUMNS} FROM mail
                     WHERE recipient_id = ?1 AND consumed_at IS NULL ORDER BY seq"
                ),
                &recipient_id.to_string(),
            )?;
            Ok(queued.into_iter().map(|queued| queued.mail).collect())
        })
    }

    /// Every unconsumed mail of a session, in enqueue order.
    pub fn unconsumed_in_session(
        &self,
        session_id: ThreadId,
    ) -> Result<Vec<QueuedMail>, StoreError> {
        self.read("list unconsumed session mail", |conn| {
            query(
                conn,
                &format!(
                    "SELECT {MAIL_COLUMNS} FROM mail
                     WHERE recipient_id IN (SELECT id FROM threads WHERE session_id = ?1)
                       AND consumed_at IS NULL ORDER BY seq"
                ),
                &session_id.to_string(),
            )
        })
    }
}

/// The write that stores `mail` for `recipient`.
fn inserting(
    session: ThreadId,
    recipient: ThreadId,
    mail: &Mail,
) -> impl FnOnce(&Connection) -> OpResult<()> + Send + 'static {
    let mail = mail.clone();
    move |conn| insert_mail(conn, session, recipient, &mail)
}

fn insert_mail(
    conn: &Connection,
    session: ThreadId,
    recipient: ThreadId,
    mail: &Mail,
) -> OpResult<()> {
    conn.prepare_cached(
        "INSERT INTO mail (id, session_id, recipient_id, author, recipient, kind, trigger_turn,
             content, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (id) DO NOTHING",
    )?
    .execute(params![
        mail.id.to_string(),
        session.to_string(),
        recipient.to_string(),
        mail.author.as_str(),
        mail.recipient.as_str(),
        mail.kind.as_str(),
        mail.trigger_turn,
        mail.content,
        mail.created_at.as_millis(),
    ])?;
    Ok(())
}

fn query(conn: &Connection, sql: &str, key: &str) -> OpResult<Vec<QueuedMail>> {
    crate::store::collect(conn, sql, [key], from_row)
}

fn from_row(row: &Row<'_>) -> OpResult<QueuedMail> {
    let text = |i: usize| -> OpResult<String> { Ok(row.get::<_, String>(i)?) };
    let id = text(1)?;
    let author = text(2)?;
    let recipient = text(3)?;
    let kind = text(4)?;
    let mail = Mail {
        id: MailId::parse(&id).map_err(|_| Fail::corrupt("mail id", id.clone()))?,
        author: AgentPath::from_persisted(&author)
            .map_err(|_| Fail::corrupt("agent path", author.clone()))?,
        recipient: AgentPath::from_persisted(&recipient)
            .map_err(|_| Fail::corrupt("agent path", recipient.clone()))?,
        kind: MailKind::parse(&kind).ok_or_else(|| Fail::corrupt("mail kind", kind.clone()))?,
        trigger_turn: row.get(5)?,
        content: text(6)?,
        created_at: Timestamp::from_millis(row.get(7)?),
    };
    Ok(QueuedMail {
        recipient_id: parse_id(&text(0)?)?,
        mail,
    })
}
