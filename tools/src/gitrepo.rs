//! A git repository as git finds it from a directory, and the keys of its own config files,
//! read without running git: what the policy checks before a command's git runs
//! (`policy/gitcheck.rs`) and what arbor's own git checks before every command it runs
//! (`arbor_worktree`).

use std::path::{Path, PathBuf};

/// A repository found from a working directory: its git dir and its common dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRepository {
    /// The checkout's own git directory (`.git`, or what a `.git` file names).
    pub git_dir: PathBuf,
    /// The repository's shared one (its `commondir`, else the git dir).
    pub common_dir: PathBuf,
}

/// The repository `dir` is in, as git finds it: up from `dir`, the first `.git` (a directory,
/// or a file naming one) or bare repository.
pub fn find_repository(dir: &Path) -> Option<GitRepository> {
    let start = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    for at in start.ancestors() {
        let dot_git = at.join(".git");
        let git_dir = if dot_git.is_dir() {
            Some(dot_git)
        } else if dot_git.is_file() {
            std::fs::read_to_string(&dot_git).ok().and_then(|text| {
                let target = text.trim().strip_prefix("gitdir:")?.trim().to_string();
                Some(at.join(target))
            })
        } else if at.join("HEAD").is_file() && at.join("objects").is_dir() {
            Some(at.to_path_buf())
        } else {
            None
        };
        if let Some(git_dir) = git_dir {
            let common_dir = std::fs::read_to_string(git_dir.join("commondir"))
                .map(|text| git_dir.join(text.trim()))
                .unwrap_or_else(|_| git_dir.clone());
            let canonical = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
            return Some(GitRepository {
                git_dir: canonical(git_dir),
                common_dir: canonical(common_dir),
            });
        }
    }
    None
}

impl GitRepository {
    /// The repository's own config files that exist: the common `config`, the checkout's
    /// `config` and `config.worktree`.
    pub fn config_files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.common_dir.join("config")];
        for extra in [
            self.git_dir.join("config"),
            self.git_dir.join("config.worktree"),
        ] {
            if !files.contains(&extra) {
                files.push(extra);
            }
        }
        files.retain(|file| file.exists());
        files
    }
}

/// One `key = value` of a config file: its section (lower case), subsection (as written) and
/// key (lower case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub section: String,
    pub subsection: Option<String>,
    pub key: String,
    pub value: String,
}

impl ConfigEntry {
    /// `section.subsection.key` as git spells it.
    pub fn name(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }
}

/// Every entry of the config file at `path`, in order; an error (naming the file) when it
/// cannot be read or a section header cannot be parsed.
pub fn config_entries(path: &Path) -> Result<Vec<ConfigEntry>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    let mut entries = Vec::new();
    let mut section = String::new();
    let mut subsection: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let mut body = line;
        if let Some(header) = body.strip_prefix('[') {
            let Some((inside, after)) = header.split_once(']') else {
                return Err(format!("{}: cannot read `{line}`", path.display()));
            };
            (section, subsection) = parse_header(inside);
            body = after.trim();
            if body.is_empty() || body.starts_with('#') || body.starts_with(';') {
                continue;
            }
        }
        let (key, value) = match body.split_once('=') {
            Some((key, value)) => (key.trim(), value.trim()),
            None => (body, "true"),
        };
        entries.push(ConfigEntry {
            section: section.clone(),
            subsection: subsection.clone(),
            key: key.to_ascii_lowercase(),
            value: value.to_string(),
        });
    }
    Ok(entries)
}

/// `core`, `remote "origin"`, `branch.main` (the old spelling).
fn parse_header(inside: &str) -> (String, Option<String>) {
    match inside.split_once(|c: char| c.is_whitespace()) {
        Some((name, sub)) => (
            name.to_ascii_lowercase(),
            Some(sub.trim().trim_matches('"').to_string()),
        ),
        None => match inside.split_once('.') {
            Some((name, sub)) => (name.to_ascii_lowercase(), Some(sub.to_string())),
            None => (inside.to_ascii_lowercase(), None),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_their_section_subsection_and_key() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("config");
        std::fs::write(
            &file,
            "[core]\n\tFileMode = true\n[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\
             [branch.main] remote = origin\n\tbare\n",
        )
        .expect("config");
        let names: Vec<String> = config_entries(&file)
            .expect("reads")
            .iter()
            .map(ConfigEntry::name)
            .collect();
        assert_eq!(
            names,
            [
                "core.filemode",
                "filter.lfs.clean",
                "branch.main.remote",
                "branch.main.bare"
            ]
        );
        std::fs::write(&file, "[core\n").expect("config");
        assert!(
            config_entries(&file)
                .expect_err("bad")
                .contains("cannot read `[core`")
        );
    }

    #[test]
    fn a_worktree_names_its_own_and_the_common_git_dir() {
        let dir = tempfile::tempdir().expect("dir");
        let common = dir.path().join("main/.git");
        let own = common.join("worktrees/wt");
        std::fs::create_dir_all(&own).expect("dirs");
        std::fs::write(own.join("commondir"), "../..\n").expect("commondir");
        let tree = dir.path().join("wt/sub");
        std::fs::create_dir_all(&tree).expect("tree");
        std::fs::write(
            dir.path().join("wt/.git"),
            format!("gitdir: {}\n", own.display()),
        )
        .expect(".git file");
        let found = find_repository(&tree).expect("found");
        let canonical = |p: &Path| std::fs::canonicalize(p).expect("canonical");
        assert_eq!(found.git_dir, canonical(&own));
        assert_eq!(found.common_dir, canonical(&common));
        assert_eq!(find_repository(dir.path()), None);
    }
}
