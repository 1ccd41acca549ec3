//! The mail queue (behaviour §4): a projection of the session log's `mail_sent` and
//! `user_mail` lines, each row kept with the time its `mail_consumed` line marked it consumed.

use arbor_protocol::{AgentPath, Mail, MailId, MailKind, ThreadId, Timestamp};
use rusqlite::{Connection, Row, params};

use crate::error::{Fail, OpResult};
use crate::walk::parse_id;
use crate::{Store, StoreError};

/// An unconsumed mail and the thread it is addressed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMail {
    pub recipient_id: ThreadId,
    pub mail: Mail,
}

const MAIL_COLUMNS: &str = "recipient_id, id, author, recipient, kind, trigger_turn, content, \
                            created_at, from_user";

impl Store {
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
                     WHERE session_id = ?1 AND consumed_at IS NULL ORDER BY seq"
                ),
                &session_id.to_string(),
            )
        })
    }
}

pub(crate) fn insert_mail(
    conn: &Connection,
    session: ThreadId,
    recipient: ThreadId,
    mail: &Mail,
) -> OpResult<()> {
    conn.prepare_cached(
        "INSERT INTO mail (id, session_id, recipient_id, author, recipient, kind, trigger_turn,
             content, created_at, from_user)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
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
        mail.from_user,
    ])?;
    Ok(())
}

fn query(conn: &Connection, sql: &str, key: &str) -> OpResult<Vec<QueuedMail>> {
    crate::query::collect(conn, sql, [key], from_row)
}

fn from_row(row: &Row<'_>) -> OpResult<QueuedMail> {
    queued_from_row(row, 0)
}

/// A queued mail from the columns of `MAIL_COLUMNS`, starting at column `at`.
pub(crate) fn queued_from_row(row: &Row<'_>, at: usize) -> OpResult<QueuedMail> {
    let text = |i: usize| -> OpResult<String> { Ok(row.get::<_, String>(at + i)?) };
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
        trigger_turn: row.get(at + 5)?,
        content: text(6)?,
        created_at: Timestamp::from_millis(row.get(at + 7)?),
        from_user: row.get(at + 8)?,
    };
    Ok(QueuedMail {
        recipient_id: parse_id(&text(0)?)?,
        mail,
    })
}
