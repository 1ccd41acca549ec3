//! Keys: what each does in each pane and overlay (the help overlay lists them). Unknown keys
//! do nothing; no key moves the keyboard away from the composer except the user's own.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{App, Confirm, Focus, Overlay};
use crate::act::{Answer, Request};

impl App {
    /// Handles one key.
    pub fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        self.notice = None;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(overlay) = self.overlay.take() {
            self.on_overlay_key(overlay, key);
            return;
        }
        if ctrl && key.code == KeyCode::Char('c') {
            if self.focus == Focus::Composer && !self.composer.text.is_empty() {
                self.composer.take();
            } else {
                self.ask_quit();
            }
            return;
        }
        match self.focus {
            Focus::Composer => self.on_composer_key(key),
            Focus::Tree | Focus::Transcript => self.on_pane_key(key),
        }
    }

    fn ask_quit(&mut self) {
        if self.driving() {
            self.overlay = Some(Overlay::Confirm(Confirm::Quit));
        } else {
            self.quit = true;
        }
    }

    fn on_pane_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('q') => self.ask_quit(),
            KeyCode::Char('?') => self.overlay = Some(Overlay::Help),
            KeyCode::Tab => self.cycle_focus(true),
            KeyCode::BackTab => self.cycle_focus(false),
            KeyCode::Char('A') => self.overlay = Some(Overlay::Approvals { selected: 0 }),
            KeyCode::Char('/') => {
                self.overlay = Some(Overlay::Find {
                    query: String::new(),
                });
            }
            KeyCode::Char('i') | KeyCode::Char('m') => self.focus = Focus::Composer,
            KeyCode::Char('x') => self.interrupt_selected(),
            KeyCode::Char('X') => {
                if let Some(target) = self.selected_path() {
                    if target.is_root() {
                        self.notice("root is not a spawned agent: it cannot be closed", true);
                    } else {
                        self.overlay = Some(Overlay::Confirm(Confirm::Close { target }));
                    }
                }
            }
            KeyCode::Char('c') if !ctrl => {
                self.tree.show_closed = !self.tree.show_closed;
                self.sync_tree();
                let text = if self.tree.show_closed {
                    "closed branches shown"
                } else {
                    "closed branches hidden"
                };
                self.notice(text, false);
            }
            _ if self.focus == Focus::Tree => self.on_tree_key(key),
            _ => self.on_transcript_key(key),
        }
    }

    fn cycle_focus(&mut self, forward: bool) {
        let order = [Focus::Tree, Focus::Transcript, Focus::Composer];
        let at = order.iter().position(|f| *f == self.focus).unwrap_or(0);
        let next = if forward {
            at + 1
        } else {
            at + order.len() - 1
        };
        self.focus = order[next % order.len()];
    }

    fn sync_tree(&mut self) {
        if let Some(session) = &self.session {
            self.tree.sync(session, true);
        }
        self.reopen_if_moved();
    }

    fn reopen_if_moved(&mut self) {
        if self.transcript.as_ref().map(|t| t.thread) != self.tree.selected_id() {
            self.open_transcript();
        }
    }

    fn on_tree_key(&mut self, key: KeyEvent) {
        let page = self.tree_height.max(1) as isize;
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.tree.move_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.tree.move_by(1),
            KeyCode::PageUp => self.tree.move_by(-page),
            KeyCode::PageDown => self.tree.move_by(page),
            KeyCode::Home | KeyCode::Char('g') => self.tree.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.tree.move_by(isize::MAX / 2),
            KeyCode::Left | KeyCode::Char('h') => {
                if !self.tree.set_collapsed(Some(true)) {
                    self.select_parent();
                }
                self.sync_tree();
            }
            KeyCode::Right | KeyCode::Char('l') => {
                if self.tree.set_collapsed(Some(false)) {
                    self.sync_tree();
                } else {
                    self.tree.move_by(1);
                }
            }
            KeyCode::Char(' ') => {
                self.tree.set_collapsed(None);
                self.sync_tree();
            }
            KeyCode::Enter => self.focus = Focus::Composer,
            _ => {}
        }
        self.reopen_if_moved();
    }

    fn select_parent(&mut self) {
        let parent = self.selected_id().and_then(|id| {
            let session = self.session.as_ref()?;
            session.state.thread(id)?.record.meta.parent_id
        });
        if let Some(parent) = parent {
            self.tree.select_id(parent);
        }
    }

    fn on_transcript_key(&mut self, key: KeyEvent) {
        let page = (self.transcript_height / 3).max(1) as isize;
        let Some(transcript) = self.transcript.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => transcript.move_cursor(-1),
            KeyCode::Down | KeyCode::Char('j') => transcript.move_cursor(1),
            KeyCode::PageUp => transcript.move_cursor(-page),
            KeyCode::PageDown => transcript.move_cursor(page),
            KeyCode::Home | KeyCode::Char('g') => transcript.to_start(),
            KeyCode::End | KeyCode::Char('G') => transcript.to_end(),
            KeyCode::Enter | KeyCode::Char(' ') => transcript.toggle_fold(),
            _ => {}
        }
    }

    fn on_composer_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc if self.session.is_some() => self.focus = Focus::Tree,
            KeyCode::Tab if self.session.is_some() => self.cycle_focus(true),
            KeyCode::BackTab if self.session.is_some() => self.cycle_focus(false),
            KeyCode::Enter if alt => self.send(false),
            KeyCode::Enter => self.send(true),
            KeyCode::Char('o') if ctrl => self.send(false),
            KeyCode::Char('u') if ctrl => {
                self.composer.take();
            }
            KeyCode::Char('a') if ctrl => self.composer.home(),
            KeyCode::Char('e') if ctrl => self.composer.end(),
            KeyCode::Char(c) if !ctrl && !alt && !c.is_control() => self.composer.insert(c),
            KeyCode::Backspace => self.composer.backspace(),
            KeyCode::Delete => self.composer.delete(),
            KeyCode::Left => self.composer.left(),
            KeyCode::Right => self.composer.right(),
            KeyCode::Home => self.composer.home(),
            KeyCode::End => self.composer.end(),
            _ => {}
        }
    }

    /// Sends the composer's text to the selected agent: a follow-up (`wake`) or queue-only
    /// mail; without a session, the new session's task.
    fn send(&mut self, wake: bool) {
        if self.composer.text.trim().is_empty() {
            self.notice("Empty message can't be sent to an agent", true);
            return;
        }
        if self.session.is_none() {
            if self.sent.iter().any(|s| s.what.starts_with("task")) {
                self.notice("the session is starting", false);
                return;
            }
            let prompt = self.composer.take();
            self.request("task for /root".to_string(), Request::NewSession { prompt });
            return;
        }
        let Some(target) = self.selected_path() else {
            self.notice("select an agent first", true);
            return;
        };
        let text = self.composer.take();
        let target = target.to_string();
        if wake {
            let what = if target == "/root" {
                "prompt → /root".to_string()
            } else {
                format!("follow-up → {target}")
            };
            self.request(what, Request::Followup { target, text });
        } else {
            self.request(format!("mail → {target}"), Request::Queue { target, text });
        }
    }

    fn interrupt_selected(&mut self) {
        if let Some(target) = self.selected_path() {
            let target = target.to_string();
            self.request(format!("interrupt {target}"), Request::Interrupt { target });
        }
    }

    fn on_overlay_key(&mut self, overlay: Overlay, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match overlay {
            Overlay::Help => {}
            Overlay::Confirm(confirm) => {
                if matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
                    match confirm {
                        Confirm::Close { target } => {
                            let target = target.to_string();
                            self.request(format!("close {target}"), Request::Close { target });
                        }
                        Confirm::Quit => {
                            self.stopping = true;
                            self.notice("stopping: running turns are interrupted and saved", false);
                            self.request_stop();
                        }
                    }
                }
            }
            Overlay::Find { mut query } => match key.code {
                KeyCode::Esc => {}
                KeyCode::Enter => self.find(&query),
                KeyCode::Backspace => {
                    query.pop();
                    self.overlay = Some(Overlay::Find { query });
                }
                KeyCode::Char(c) if !ctrl && !c.is_control() => {
                    query.push(c);
                    self.overlay = Some(Overlay::Find { query });
                }
                _ => self.overlay = Some(Overlay::Find { query }),
            },
            Overlay::Approvals { selected } => self.on_approvals_key(selected, key),
            Overlay::Diff { selected, scroll } => self.on_diff_key(selected, scroll, key),
        }
    }

    fn request_stop(&mut self) {
        self.request("stop the run".to_string(), Request::Stop);
    }

    fn on_approvals_key(&mut self, selected: usize, key: KeyEvent) {
        let list: Vec<(String, bool, String)> = self
            .approvals()
            .iter()
            .map(|a| {
                (
                    a.id.clone(),
                    a.outcome == arbor_agent_graph::ApprovalOutcome::Pending,
                    a.requester.to_string(),
                )
            })
            .collect();
        let selected = selected.min(list.len().saturating_sub(1));
        let keep = |app: &mut App, selected| {
            app.overlay = Some(Overlay::Approvals { selected });
        };
        let Some((id, pending, requester)) = list.get(selected).cloned() else {
            if !matches!(key.code, KeyCode::Esc | KeyCode::Char('q')) {
                keep(self, 0);
            }
            return;
        };
        let answer = match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return,
            KeyCode::Up | KeyCode::Char('k') => {
                keep(self, selected.saturating_sub(1));
                return;
            }
            KeyCode::Down | KeyCode::Char('j') => {
                keep(self, (selected + 1).min(list.len() - 1));
                return;
            }
            KeyCode::Char('g') => {
                if let Some(row) = self
                    .session
                    .as_ref()
                    .and_then(|s| s.state.approval(&id))
                    .map(|a| a.requester_id)
                {
                    self.tree.select_id(row);
                    self.reopen_if_moved();
                }
                return;
            }
            KeyCode::Char('d') => {
                let has_diff = self
                    .approvals()
                    .get(selected)
                    .is_some_and(|a| arbor_orchestrator::action_diff(&a.action).is_some());
                self.overlay = Some(if has_diff {
                    Overlay::Diff {
                        selected,
                        scroll: 0,
                    }
                } else {
                    Overlay::Approvals { selected }
                });
                return;
            }
            KeyCode::Char('y') if pending => Answer::Once,
            KeyCode::Char('s') if pending => Answer::ForSession,
            KeyCode::Char('n') if pending => Answer::Deny,
            KeyCode::Char('o') | KeyCode::Char('y') if !pending => Answer::Override,
            _ => {
                keep(self, selected);
                return;
            }
        };
        let what = match answer {
            Answer::Once => "allow once",
            Answer::ForSession => "allow for the session",
            Answer::Deny => "deny",
            Answer::Override => "override",
        };
        self.request(
            format!("{what} {requester} ({})", short_id(&id)),
            Request::Answer { id, answer },
        );
        keep(self, selected);
    }

    /// Keys of the whole-diff window: move through it, or go back to the queue.
    fn on_diff_key(&mut self, selected: usize, scroll: usize, key: KeyEvent) {
        let lines = self
            .approvals()
            .get(selected)
            .and_then(|a| arbor_orchestrator::action_diff(&a.action).map(|d| d.lines().count()))
            .unwrap_or(0);
        // The diff's window is the body less its borders and its keys line.
        let page = self.tree_height.saturating_sub(2).max(1);
        let last = lines.saturating_sub(page);
        let scroll = match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('d') => {
                self.overlay = Some(Overlay::Approvals { selected });
                return;
            }
            KeyCode::Up | KeyCode::Char('k') => scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => (scroll + 1).min(last),
            KeyCode::PageUp => scroll.saturating_sub(page),
            KeyCode::PageDown => (scroll + page).min(last),
            KeyCode::Char('g') | KeyCode::Home => 0,
            KeyCode::Char('G') | KeyCode::End => last,
            _ => scroll,
        };
        self.overlay = Some(Overlay::Diff { selected, scroll });
    }

    /// Selects the next agent after the selection whose path or nickname holds `query`.
    fn find(&mut self, query: &str) {
        let Some(session) = &self.session else {
            return;
        };
        let query = query.trim().to_lowercase();
        if query.is_empty() {
            return;
        }
        let rows = &self.tree.rows;
        let count = rows.len();
        let hit = (1..=count).find_map(|step| {
            let at = (self.tree.selected + step) % count;
            let row = session.state.thread(rows[at].id)?;
            let path = row.record.meta.path.as_str().to_lowercase();
            let nickname = row
                .record
                .meta
                .nickname
                .as_deref()
                .unwrap_or("")
                .to_lowercase();
            (path.contains(&query) || nickname.contains(&query)).then_some(at)
        });
        if let Some(at) = hit {
            self.tree.selected = at;
            self.focus = Focus::Tree;
            self.reopen_if_moved();
            return;
        }
        // A hidden agent (under a collapsed or closed branch): open the way to it.
        let hidden = session.state.threads.values().find(|row| {
            row.record
                .meta
                .path
                .as_str()
                .to_lowercase()
                .contains(&query)
                || row
                    .record
                    .meta
                    .nickname
                    .as_deref()
                    .is_some_and(|n| n.to_lowercase().contains(&query))
        });
        let Some(found) = hidden.map(|row| row.record.id()) else {
            self.notice(&format!("no agent matches `{query}`"), true);
            return;
        };
        let mut current = Some(found);
        while let Some(id) = current {
            self.tree.collapsed.remove(&id);
            let row = session.state.thread(id);
            if row.is_some_and(crate::session::Session::is_closed) {
                self.tree.show_closed = true;
            }
            current = row.and_then(|r| r.record.meta.parent_id);
        }
        self.tree.sync(session, true);
        self.tree.select_id(found);
        self.focus = Focus::Tree;
        self.reopen_if_moved();
    }
}

/// The last characters of a request id (ids made close together share their first ones).
pub fn short_id(id: &str) -> &str {
    let count = id.chars().count();
    let cut = id
        .char_indices()
        .nth(count.saturating_sub(8))
        .map_or(0, |(at, _)| at);
    &id[cut..]
}
