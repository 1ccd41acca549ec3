//! The transcript of the selected agent: its rollout read backwards from the end (older lines
//! load when scrolled to), then the lines of the log its rollout does not hold yet, then every
//! new line as the session log gains it.

pub mod entry;

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use arbor_agent_graph::AgentRow;
use arbor_protocol::{RolloutLine, ThreadId};

pub use entry::{DIFF_HEADING, Entry, FOLD_LINES, Kind, action_lines, entry_of};

use crate::backwards::read_before;
use crate::session::{LineAt, Session};

/// Lines read when a transcript opens, and per step back.
pub const WINDOW_LINES: usize = 400;
/// Entries from the top of what is loaded at which the next older window is read.
pub const LOAD_MARGIN: usize = 40;

/// One agent's transcript and where the reader is in it.
#[derive(Debug)]
pub struct Transcript {
    pub thread: ThreadId,
    rollout: PathBuf,
    /// Where the part of the rollout not loaded yet ends (0: everything is loaded).
    older_end: u64,
    /// The newest line number shown.
    last_seq: u64,
    /// The oldest line number loaded from the rollout (lines of the log below it are older).
    pub entries: Vec<Entry>,
    /// The entry the reader is on.
    pub cursor: usize,
    /// New entries move the cursor to the end.
    pub follow: bool,
    /// The first entry at the top of the pane, and the lines of it scrolled past.
    pub top: usize,
    pub top_skip: usize,
    /// Lines that could not be read.
    pub skipped: usize,
}

impl Transcript {
    /// Opens the transcript of `row` at its end.
    pub fn open(session: &Session, row: &AgentRow) -> Self {
        let mut transcript = Self {
            thread: row.record.id(),
            rollout: session.home.join(&row.record.rollout_path),
            older_end: 0,
            last_seq: 0,
            entries: Vec::new(),
            cursor: 0,
            follow: true,
            top: 0,
            top_skip: 0,
            skipped: 0,
        };
        let from_rollout = transcript.load_rollout_end();
        let indexed = session.lines_of(row.record.id());
        if !from_rollout && session.stored > 0 {
            // No rollout to read (not made yet, or damaged), and the lines before the store's
            // position were not indexed: read the agent's lines from the log.
            transcript.scan_log(session);
        }
        transcript.append_indexed(session, indexed);
        transcript.cursor = transcript.entries.len().saturating_sub(1);
        transcript
    }

    /// Reads the end of the rollout; false when there is none to read.
    fn load_rollout_end(&mut self) -> bool {
        let Ok(tail) = arbor_rollout::log::peek_tail(&self.rollout) else {
            return false;
        };
        if tail.end == 0 {
            return false;
        }
        match read_before(&self.rollout, tail.end, WINDOW_LINES) {
            Ok(window) => {
                self.older_end = window.start;
                self.skipped += window.skipped;
                for (_, line) in &window.lines {
                    self.take(line);
                }
                true
            }
            Err(_) => false,
        }
    }

    fn scan_log(&mut self, session: &Session) {
        let thread = self.thread;
        let mut lines = Vec::new();
        let _ = arbor_rollout::log::for_each_line(&session.log_path, 0, |line, _| {
            if line.thread == Some(thread) && line.item.in_rollout() {
                lines.push(line);
            }
            Ok(())
        });
        for line in &lines {
            self.take(line);
        }
    }

    /// Adds the indexed log lines newer than what is shown.
    fn append_indexed(&mut self, session: &Session, indexed: &[LineAt]) {
        let newer: Vec<LineAt> = indexed
            .iter()
            .filter(|at| at.seq > self.last_seq)
            .copied()
            .collect();
        if newer.is_empty() {
            return;
        }
        let Ok(file) = std::fs::File::open(&session.log_path) else {
            return;
        };
        for at in newer {
            let mut bytes = vec![0; usize::try_from(at.end - at.start).unwrap_or(0)];
            if file.read_exact_at(&mut bytes, at.start).is_err() {
                self.skipped += 1;
                continue;
            }
            match serde_json::from_slice::<RolloutLine>(bytes.trim_ascii()) {
                Ok(line) if line.item.in_rollout() => {
                    self.take(&line);
                }
                Ok(_) => {}
                Err(_) => self.skipped += 1,
            }
        }
    }

    /// Adds a line at the end when it is newer than what is shown.
    fn take(&mut self, line: &RolloutLine) -> bool {
        let seq = line.seq.unwrap_or(0);
        if seq != 0 && seq <= self.last_seq {
            return false;
        }
        self.last_seq = self.last_seq.max(seq);
        match entry_of(line) {
            Some(entry) => {
                self.entries.push(entry);
                true
            }
            None => false,
        }
    }

    /// A new line of the session log; the cursor follows it when following.
    pub fn push(&mut self, line: &RolloutLine) {
        if line.thread != Some(self.thread) || !line.item.in_rollout() {
            return;
        }
        if self.take(line) && self.follow {
            self.cursor = self.entries.len() - 1;
        }
    }

    /// Whether older lines remain to load.
    pub fn has_older(&self) -> bool {
        self.older_end > 0
    }

    /// Loads the next older window; returns the number of entries added at the top.
    pub fn load_older(&mut self) -> usize {
        if self.older_end == 0 {
            return 0;
        }
        let Ok(window) = read_before(&self.rollout, self.older_end, WINDOW_LINES) else {
            self.older_end = 0;
            return 0;
        };
        self.older_end = window.start;
        self.skipped += window.skipped;
        let older: Vec<Entry> = window
            .lines
            .iter()
            .filter_map(|(_, line)| entry_of(line))
            .collect();
        let added = older.len();
        self.entries.splice(0..0, older);
        self.cursor += added;
        self.top += added;
        added
    }

    /// Loads the older windows while the cursor is near the top of what is loaded.
    pub fn ensure_loaded_around_cursor(&mut self) {
        while self.cursor < LOAD_MARGIN && self.has_older() {
            if self.load_older() == 0 && !self.has_older() {
                break;
            }
        }
    }

    /// Moves the cursor by `delta` entries.
    pub fn move_cursor(&mut self, delta: isize) {
        if self.entries.is_empty() {
            return;
        }
        let last = self.entries.len() - 1;
        let target = self.cursor.saturating_add_signed(delta).min(last);
        self.cursor = target;
        self.follow = target == last;
        self.ensure_loaded_around_cursor();
    }

    /// The first entry (everything older loaded first).
    pub fn to_start(&mut self) {
        while self.has_older() {
            self.load_older();
        }
        self.cursor = 0;
        self.top = 0;
        self.top_skip = 0;
        self.follow = self.entries.len() <= 1;
    }

    /// The last entry, following new ones.
    pub fn to_end(&mut self) {
        self.cursor = self.entries.len().saturating_sub(1);
        self.follow = true;
    }

    /// Folds or unfolds the entry under the cursor.
    pub fn toggle_fold(&mut self) {
        if let Some(entry) = self.entries.get_mut(self.cursor)
            && entry.foldable()
        {
            entry.expanded = !entry.expanded;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::{
        AgentPath, ResponseItem, RolloutItem, SessionMeta, Timestamp, rollout_relative_path,
    };
    use std::io::Write;

    fn line(seq: u64, thread: ThreadId, item: RolloutItem) -> RolloutLine {
        RolloutLine {
            seq: Some(seq),
            thread: Some(thread),
            timestamp: Timestamp::from_millis(1_700_000_000_000),
            item,
        }
    }

    /// A session of one root with `n` messages, in its log and in its rollout.
    fn session_with(n: u64) -> (tempfile::TempDir, Session, ThreadId) {
        let home = tempfile::tempdir().expect("home");
        let root = ThreadId::new();
        let meta = SessionMeta {
            thread_id: root,
            session_id: root,
            parent_id: None,
            path: AgentPath::root(),
            depth: 0,
            nickname: None,
            role: "default".into(),
            model: "m".into(),
            provider: None,
            effort: None,
            sandbox: "read-only".into(),
            cwd: "/w".into(),
            format_version: 1,
            repository: None,
            handle: None,
        };
        let mut lines = vec![line(1, root, RolloutItem::SessionMeta(Box::new(meta)))];
        for i in 0..n {
            lines.push(line(
                i + 2,
                root,
                RolloutItem::ResponseItem(ResponseItem::Message {
                    role: "assistant".into(),
                    content: format!("message {i}"),
                }),
            ));
        }
        let text: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).expect("json") + "\n")
            .collect();
        let log = home.path().join("log.jsonl");
        std::fs::write(&log, &text).expect("log");
        let rollout = home.path().join(rollout_relative_path(
            Timestamp::from_millis(1_700_000_000_000),
            root,
        ));
        std::fs::create_dir_all(rollout.parent().expect("dir")).expect("dirs");
        std::fs::File::create(&rollout)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .expect("rollout");
        let session =
            Session::from_log(home.path(), &log, crate::session::Driver::None).expect("session");
        (home, session, root)
    }

    #[test]
    fn a_long_transcript_opens_at_its_end_and_loads_older_lines_when_scrolled_to() {
        let (_home, session, root) = session_with(10_000);
        let row = session.state.thread(root).expect("root");
        let mut transcript = Transcript::open(&session, row);
        assert_eq!(transcript.entries.len(), WINDOW_LINES);
        assert!(transcript.has_older());
        assert_eq!(
            transcript.entries.last().map(|e| e.body.clone()),
            Some(vec!["message 9999".to_string()])
        );
        // Moving up past the margin loads the next window, keeping the cursor's entry.
        let before = transcript.entries[transcript.cursor].clone();
        transcript.move_cursor(-(WINDOW_LINES as isize - 10));
        assert_eq!(transcript.entries.len(), 2 * WINDOW_LINES);
        transcript.move_cursor(WINDOW_LINES as isize - 10);
        assert_eq!(transcript.entries[transcript.cursor], before);
        transcript.to_start();
        assert!(!transcript.has_older());
        assert_eq!(transcript.entries.len(), 10_001);
        assert_eq!(transcript.entries[0].kind, Kind::Header);
        let bodies: Vec<String> = transcript.entries[1..]
            .iter()
            .map(|e| e.body[0].clone())
            .collect();
        let expected: Vec<String> = (0..10_000).map(|i| format!("message {i}")).collect();
        assert_eq!(bodies, expected);
    }
}
