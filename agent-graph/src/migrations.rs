//! The numbered schema migrations of the store, every script in the order it was shipped.

/// The schema version this build writes: the number of migrations.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Migration `i` (0-based) takes the schema from version `i` to `i + 1`. Append only: a shipped
/// script is never edited.
pub(crate) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE threads (
    id            TEXT PRIMARY KEY NOT NULL,
    session_id    TEXT NOT NULL REFERENCES threads(id),
    parent_id     TEXT REFERENCES threads(id),
    path          TEXT NOT NULL CHECK (path = '/root' OR path LIKE '/root/%'),
    depth         INTEGER NOT NULL CHECK (depth >= 0),
    nickname      TEXT,
    role          TEXT NOT NULL,
    model         TEXT NOT NULL,
    effort        TEXT,
    sandbox       TEXT NOT NULL,
    cwd           TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending_init', 'queued', 'running',
                      'waiting', 'awaiting_approval', 'completed', 'interrupted', 'errored',
                      'closed', 'not_found')),
    status_reason TEXT,
    rollout_path  TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    CHECK ((parent_id IS NULL) = (depth = 0)),
    CHECK (parent_id IS NOT NULL OR session_id = id),
    CHECK (parent_id IS NULL OR parent_id <> id)
);
CREATE INDEX threads_by_session_path ON threads (session_id, path);
CREATE INDEX threads_roots ON threads (created_at) WHERE parent_id IS NULL;

CREATE TABLE edges (
    child      TEXT PRIMARY KEY NOT NULL REFERENCES threads(id),
    parent     TEXT NOT NULL REFERENCES threads(id),
    session_id TEXT NOT NULL REFERENCES threads(id),
    status     TEXT NOT NULL CHECK (status IN ('open', 'closed')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CHECK (child <> parent)
) WITHOUT ROWID;
CREATE INDEX edges_by_parent ON edges (parent, child, status);
CREATE INDEX edges_by_session ON edges (session_id, parent, child, status);

-- Edges per session, kept by trigger (edges are never deleted, and an upsert that updates
-- does not fire AFTER INSERT): lets a descendant walk choose between seeks and one scan.
CREATE TABLE session_stats (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES threads(id),
    edges      INTEGER NOT NULL CHECK (edges >= 0)
) WITHOUT ROWID;
CREATE TRIGGER edges_count_session AFTER INSERT ON edges BEGIN
    INSERT INTO session_stats (session_id, edges) VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET edges = edges + 1;
END;

CREATE TABLE mail (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    session_id   TEXT NOT NULL REFERENCES threads(id),
    recipient_id TEXT NOT NULL REFERENCES threads(id),
    author       TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('spawn', 'message', 'followup', 'result')),
    trigger_turn INTEGER NOT NULL CHECK (trigger_turn IN (0, 1)),
    content      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    consumed_at  INTEGER
);
CREATE INDEX mail_unconsumed_by_recipient ON mail (recipient_id, seq) WHERE consumed_at IS NULL;
CREATE INDEX mail_unconsumed_by_session ON mail (session_id, seq) WHERE consumed_at IS NULL;

CREATE TABLE approvals (
    id            TEXT PRIMARY KEY NOT NULL,
    session_id    TEXT NOT NULL REFERENCES threads(id),
    requester_id  TEXT NOT NULL REFERENCES threads(id),
    requester     TEXT NOT NULL,
    action        TEXT NOT NULL CHECK (json_valid(action)),
    justification TEXT,
    outcome       TEXT NOT NULL CHECK (outcome IN ('pending', 'allow', 'deny',
                      'review_unavailable', 'no_approver')),
    decided_by    TEXT CHECK (decided_by IS NULL OR decided_by IN ('user', 'guardian', 'policy')),
    risk_level    TEXT,
    rationale     TEXT,
    tokens        INTEGER CHECK (tokens IS NULL OR tokens >= 0),
    requested_at  INTEGER NOT NULL,
    decided_at    INTEGER,
    CHECK ((outcome = 'pending') = (decided_at IS NULL))
);
CREATE INDEX approvals_by_session ON approvals (session_id);
CREATE INDEX approvals_pending ON approvals (session_id) WHERE outcome = 'pending';
"#,
    r#"
-- A human's approval of a request that no waiter ran: it lets the identical retry (same
-- requester, canonical command, cwd and escalation) through once.
CREATE TABLE approval_overrides (
    request_id TEXT PRIMARY KEY NOT NULL REFERENCES approvals(id),
    session_id TEXT NOT NULL REFERENCES threads(id),
    requester  TEXT NOT NULL,
    command    TEXT NOT NULL,
    cwd        TEXT NOT NULL,
    escalated  INTEGER NOT NULL CHECK (escalated IN (0, 1)),
    granted_at INTEGER NOT NULL,
    used_by    TEXT,
    used_at    INTEGER,
    CHECK ((used_by IS NULL) = (used_at IS NULL))
);
CREATE INDEX approval_overrides_unused ON approval_overrides (session_id, requester)
    WHERE used_by IS NULL;
"#,
    r#"
-- Mail without AUTOINCREMENT and without the per-session index: a mail's commit writes four
-- pages instead of six. `seq` stays the rowid; mail rows are never deleted, so a new rowid is
-- always past every earlier one. A session's unconsumed mail is found through its threads and
-- the per-recipient index.
CREATE TABLE mail_v3 (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    session_id   TEXT NOT NULL REFERENCES threads(id),
    recipient_id TEXT NOT NULL REFERENCES threads(id),
    author       TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('spawn', 'message', 'followup', 'result')),
    trigger_turn INTEGER NOT NULL CHECK (trigger_turn IN (0, 1)),
    content      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    consumed_at  INTEGER
);
INSERT INTO mail_v3 (seq, id, session_id, recipient_id, author, recipient, kind, trigger_turn,
                     content, created_at, consumed_at)
    SELECT seq, id, session_id, recipient_id, author, recipient, kind, trigger_turn, content,
           created_at, consumed_at
    FROM mail ORDER BY seq;
DROP TABLE mail;
ALTER TABLE mail_v3 RENAME TO mail;
CREATE INDEX mail_unconsumed_by_recipient ON mail (recipient_id, seq) WHERE consumed_at IS NULL;
"#,
    r#"
-- The store as a projection of the session log: how far into each session's log it has come,
-- and per agent the facts its status is reported from (whether a turn is open, how the last
-- one ended), its token totals and the number of its last log line. A human's answer a driver
-- has yet to act on waits with its request. Rows are written in batches, so a session's
-- unconsumed mail is indexed again.
CREATE TABLE log_state (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES threads(id),
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    offset     INTEGER NOT NULL CHECK (offset >= 0)
) WITHOUT ROWID;
ALTER TABLE threads ADD COLUMN turn_open INTEGER NOT NULL DEFAULT 0 CHECK (turn_open IN (0, 1));
ALTER TABLE threads ADD COLUMN last_end TEXT;
ALTER TABLE threads ADD COLUMN last_end_reason TEXT;
ALTER TABLE threads ADD COLUMN tokens_in INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN tokens_cached INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN tokens_out INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN answer INTEGER CHECK (answer IS NULL OR answer IN (0, 1));
CREATE INDEX mail_unconsumed_by_session ON mail (session_id, seq) WHERE consumed_at IS NULL;
"#,
    // The worktrees table.
    r#"
-- One row per agent that works in a git worktree of its own (isolation = "worktree").
CREATE TABLE worktrees (
    thread_id  TEXT PRIMARY KEY NOT NULL REFERENCES threads(id),
    session_id TEXT NOT NULL REFERENCES threads(id),
    path       TEXT NOT NULL,
    branch     TEXT NOT NULL,
    base       TEXT NOT NULL,
    source     TEXT NOT NULL,
    prefix     TEXT NOT NULL,
    merged     TEXT,
    merged_into TEXT,
    removed    INTEGER NOT NULL DEFAULT 0 CHECK (removed IN (0, 1)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX worktrees_by_session ON worktrees (session_id);
"#,
    r#"
-- Of each agent's tokens, those its compaction requests used.
ALTER TABLE threads ADD COLUMN tokens_compaction INTEGER NOT NULL DEFAULT 0;
"#,
    // Each agent's provider (NULL: the session's default, as rows of earlier versions) and,
    // of its input tokens, those written to a prompt cache.
    "
ALTER TABLE threads ADD COLUMN provider TEXT;
ALTER TABLE threads ADD COLUMN tokens_cache_write INTEGER NOT NULL DEFAULT 0;
",
    // Whether a mail came from the user (its author is `/root`, whose place the user speaks
    // from).
    r#"
ALTER TABLE mail ADD COLUMN from_user INTEGER NOT NULL DEFAULT 0 CHECK (from_user IN (0, 1));
"#,
    // A session root's handle, the short name commands take beside its id.
    r#"
ALTER TABLE threads ADD COLUMN handle TEXT;
CREATE INDEX threads_by_handle ON threads (handle) WHERE handle IS NOT NULL;
"#,
];
