//! Project instructions: the `AGENTS.md` files from the repository root (the nearest
//! directory above the cwd holding `.git`) down to an agent's cwd, joined outermost first
//! into its instructions, at most [`PROJECT_DOCS_MAX_BYTES`] (cut with a notice the model
//! reads). Read once per directory per session, off the async workers; an agent in another
//! directory (a worktree child) gets that directory's files. The guardian gets none: the
//! repository it reviews does not write its rules. `--no-project-docs` turns it off.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_roles::Role;

/// The file read at each level.
pub const PROJECT_DOC_FILE: &str = "AGENTS.md";
/// The most bytes of project instructions an agent is given.
pub const PROJECT_DOCS_MAX_BYTES: usize = 32 * 1024;

/// The session's project instructions by directory.
#[derive(Debug, Default)]
pub struct ProjectDocs {
    enabled: bool,
    /// What each directory's files join into, read once. A cache, not state of the session:
    /// any spawn fills it, and an entry never changes within a session.
    by_dir: Mutex<HashMap<PathBuf, Arc<str>>>,
    /// The instructions made of them, by role, cwd and whether the agent is internal: the
    /// agents that share all three share one text (a tree of 1 000 workers holds it once).
    composed: Mutex<HashMap<(String, PathBuf, bool), Arc<str>>>,
}

impl ProjectDocs {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            by_dir: Mutex::new(HashMap::new()),
            composed: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, cwd: &Path) -> Option<Arc<str>> {
        self.by_dir
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cwd)
            .cloned()
    }

    fn remember(&self, cwd: &Path, text: Arc<str>) -> Arc<str> {
        let mut by_dir = self.by_dir.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(by_dir.entry(cwd.to_path_buf()).or_insert(text))
    }

    /// Reads the instructions of every directory in `cwds` not read yet (on the blocking pool).
    pub async fn preload(&self, cwds: Vec<PathBuf>) {
        if !self.enabled {
            return;
        }
        // Agents share cwds (a resumed tree of 1 000 workers usually has one): each is read
        // once.
        let mut missing: Vec<PathBuf> = cwds
            .into_iter()
            .filter(|cwd| self.cached(cwd).is_none())
            .collect();
        missing.sort();
        missing.dedup();
        if missing.is_empty() {
            return;
        }
        let read = tokio::task::spawn_blocking(move || {
            missing
                .into_iter()
                .map(|cwd| {
                    let text = read_docs(&cwd);
                    (cwd, text)
                })
                .collect::<Vec<_>>()
        })
        .await;
        for (cwd, text) in read.unwrap_or_default() {
            self.remember(&cwd, Arc::from(text));
        }
    }

    /// The instructions of a new agent of `role` working in `cwd` (its files read off the
    /// async workers): the role's, then the project's.
    pub async fn for_new_agent(&self, role: &Role, cwd: &Path, internal: bool) -> Arc<str> {
        if !internal {
            self.preload(vec![cwd.to_path_buf()]).await;
        }
        self.instructions(role, cwd, internal)
    }

    /// The instructions of an agent of `role` working in `cwd`: the role's, then the project's.
    /// Reads the files unless [`ProjectDocs::preload`] did.
    pub fn instructions(&self, role: &Role, cwd: &Path, internal: bool) -> Arc<str> {
        let key = (role.name.clone(), cwd.to_path_buf(), internal);
        if let Some(text) = self
            .composed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Arc::clone(text);
        }
        let text = Arc::from(self.compose(role, cwd, internal));
        let mut composed = self.composed.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(composed.entry(key).or_insert(text))
    }

    fn compose(&self, role: &Role, cwd: &Path, internal: bool) -> String {
        let base = crate::lifecycle::instructions_for(role);
        if !self.enabled || internal {
            return base;
        }
        let docs = match self.cached(cwd) {
            Some(docs) => docs,
            None => self.remember(cwd, Arc::from(read_docs(cwd))),
        };
        if docs.is_empty() {
            base
        } else {
            format!("{base}\n\n{docs}")
        }
    }
}

/// The repository root above `cwd`: the nearest directory (itself included) holding `.git`.
fn repository_root(cwd: &Path) -> Option<&Path> {
    cwd.ancestors().find(|dir| dir.join(".git").exists())
}

/// The directories whose `AGENTS.md` apply to `cwd`, outermost first.
fn levels(cwd: &Path) -> Vec<&Path> {
    let mut dirs: Vec<&Path> = match repository_root(cwd) {
        Some(root) => cwd
            .ancestors()
            .take_while(|dir| dir.starts_with(root))
            .collect(),
        None => vec![cwd],
    };
    dirs.reverse();
    dirs
}

/// The joined project instructions for `cwd`; empty when there are none.
pub fn read_docs(cwd: &Path) -> String {
    let dirs = levels(cwd);
    let root = dirs.first().copied().unwrap_or(cwd);
    let mut files = Vec::new();
    for dir in &dirs {
        let path = dir.join(PROJECT_DOC_FILE);
        if !path.is_file() {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                let shown = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
                files.push((shown, String::from_utf8_lossy(&bytes).into_owned()));
            }
            Err(err) => {
                tracing::warn!(file = %path.display(), error = %err, "cannot read project instructions");
            }
        }
    }
    join(&files, PROJECT_DOCS_MAX_BYTES)
}

/// `files` (shown path, text) joined outermost first within `budget` bytes of text; the file
/// that crosses it is cut, later ones left out, and a notice says so.
fn join(files: &[(PathBuf, String)], budget: usize) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "# Project instructions (AGENTS.md)\n\nThe repository's AGENTS.md files, from its root \
         down to your working directory; a deeper file refines the ones above it.",
    );
    let total: usize = files.iter().map(|(_, text)| text.len()).sum();
    let mut left = budget;
    let mut cut_at = None;
    for (index, (path, text)) in files.iter().enumerate() {
        out.push_str(&format!("\n\n## {}\n\n", path.display()));
        if text.len() <= left {
            out.push_str(text.trim_end());
            left -= text.len();
            continue;
        }
        let mut end = left;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&text[..end]);
        cut_at = Some(index);
        break;
    }
    if let Some(index) = cut_at {
        let dropped: Vec<String> = files[index + 1..]
            .iter()
            .map(|(path, _)| path.display().to_string())
            .collect();
        let mut notice = format!(
            "\n\n[project instructions truncated: {total} bytes of AGENTS.md in all, more than \
             the {budget} bytes an agent is given; {} was cut",
            files[index].0.display()
        );
        if !dropped.is_empty() {
            notice.push_str(&format!(" and {} left out", dropped.join(", ")));
        }
        notice.push(']');
        tracing::warn!(total, budget, "project instructions truncated");
        out.push_str(&notice);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_run_from_the_repository_root_to_the_cwd() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        let deep = root.join("a").join("b");
        std::fs::create_dir_all(&deep).expect("mkdir");
        std::fs::create_dir(root.join(".git")).expect("git");
        std::fs::write(dir.path().join(PROJECT_DOC_FILE), "outside the repo").expect("write");
        std::fs::write(root.join(PROJECT_DOC_FILE), "root rules").expect("write");
        std::fs::write(deep.join(PROJECT_DOC_FILE), "deep rules").expect("write");
        let text = read_docs(&deep);
        let root_at = text.find("## AGENTS.md\n\nroot rules").expect("root first");
        let deep_at = text.find("## a/b/AGENTS.md\n\ndeep rules").expect("deep");
        assert!(root_at < deep_at, "{text}");
        assert!(!text.contains("outside the repo"), "{text}");
        // Without a repository only the cwd's own file counts.
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).expect("mkdir");
        assert_eq!(read_docs(&plain), "");
    }

    #[tokio::test]
    async fn each_agent_reads_its_own_cwd_and_a_worktree_is_a_repository() {
        let dir = tempfile::tempdir().expect("tempdir");
        let main = dir.path().join("main");
        let tree = dir.path().join("main-wt");
        std::fs::create_dir_all(main.join(".git")).expect("git");
        std::fs::create_dir_all(tree.join("src")).expect("mkdir");
        // A worktree's `.git` is a file naming the real git dir.
        std::fs::write(tree.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").expect("git");
        std::fs::write(main.join(PROJECT_DOC_FILE), "main rules").expect("write");
        std::fs::write(tree.join(PROJECT_DOC_FILE), "worktree rules").expect("write");
        std::fs::write(tree.join("src").join(PROJECT_DOC_FILE), "src rules").expect("write");
        let roles = arbor_roles::RoleSet::builtin();
        let role = roles.get(arbor_roles::DEFAULT_ROLE).expect("default role");
        let docs = ProjectDocs::new(true);
        let in_main = docs.for_new_agent(role, &main, false).await;
        let in_tree = docs.for_new_agent(role, &tree.join("src"), false).await;
        assert!(
            in_main.contains("main rules") && !in_main.contains("worktree"),
            "{in_main}"
        );
        assert!(!in_tree.contains("main rules"), "{in_tree}");
        let (top, below) = (
            in_tree
                .find("## AGENTS.md\n\nworktree rules")
                .expect("worktree root"),
            in_tree.find("## src/AGENTS.md\n\nsrc rules").expect("src"),
        );
        assert!(top < below, "{in_tree}");
        assert!(in_tree.starts_with(&crate::lifecycle::instructions_for(role)));
        // The guardian and a session without project docs get the role's alone.
        assert_eq!(
            docs.for_new_agent(role, &main, true).await,
            crate::lifecycle::instructions_for(role).into()
        );
        let off = ProjectDocs::new(false);
        assert_eq!(
            off.for_new_agent(role, &main, false).await,
            crate::lifecycle::instructions_for(role).into()
        );
    }

    #[test]
    fn the_budget_cuts_with_a_notice() {
        let files = vec![
            (PathBuf::from("AGENTS.md"), "a".repeat(10)),
            (PathBuf::from("x/AGENTS.md"), "b".repeat(10)),
            (PathBuf::from("x/y/AGENTS.md"), "c".repeat(10)),
        ];
        let text = join(&files, 15);
        assert!(text.contains(&"a".repeat(10)), "{text}");
        assert!(
            text.contains("## x/AGENTS.md\n\nbbbbb\n\n[project instructions truncated: 30 bytes"),
            "{text}"
        );
        assert!(
            text.contains("x/AGENTS.md was cut and x/y/AGENTS.md left out]"),
            "{text}"
        );
        assert!(!text.contains("ccc"), "{text}");
        assert_eq!(join(&files, 100).matches("## ").count(), 3);
    }
}
