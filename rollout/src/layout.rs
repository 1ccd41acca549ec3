//! Where rollouts live: `$ARBOR_HOME/sessions/YYYY/MM/DD/rollout-<stamp>-<thread id>.jsonl`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use arbor_protocol::{ThreadId, Timestamp};

use crate::RolloutError;

/// The folder under `$ARBOR_HOME` that holds every rollout.
pub const SESSIONS_DIR: &str = "sessions";

/// `$ARBOR_HOME/sessions`.
pub fn sessions_dir(home: &Path) -> PathBuf {
    home.join(SESSIONS_DIR)
}

/// The file name of a rollout: `rollout-<YYYY-MM-DDTHH-MM-SS>-<thread id>.jsonl`.
pub fn rollout_file_name(meta_timestamp: Timestamp, thread_id: ThreadId) -> String {
    format!("rollout-{}-{thread_id}.jsonl", meta_timestamp.file_stamp())
}

/// Where the rollout of `thread_id`, whose header is stamped `meta_timestamp`, lives. The date
/// folders are the UTC date of that timestamp.
pub fn rollout_path(home: &Path, meta_timestamp: Timestamp, thread_id: ThreadId) -> PathBuf {
    home.join(arbor_protocol::rollout_relative_path(
        meta_timestamp,
        thread_id,
    ))
}

/// Finds the rollout of `thread_id` under `$ARBOR_HOME/sessions` by its file-name suffix.
///
/// The date folder of the id's own creation time (UUID v7) and its neighbours are tried first,
/// so the usual look-up reads three small folders; otherwise every date folder is scanned.
pub fn find_rollout(home: &Path, thread_id: ThreadId) -> Result<PathBuf, RolloutError> {
    let sessions = sessions_dir(home);
    let suffix = format!("-{thread_id}.jsonl");
    if let Some(millis) = uuid_v7_millis(thread_id) {
        for offset in [0, -1, 1] {
            let (year, month, day) = Timestamp::from_millis(millis + offset * 86_400_000).date();
            let dir = sessions
                .join(format!("{year:04}"))
                .join(format!("{month:02}"))
                .join(format!("{day:02}"));
            if let Some(found) = find_in_day(&dir, &suffix)? {
                return Ok(found);
            }
        }
    }
    for day in day_dirs(&sessions)?.into_iter().rev() {
        if let Some(found) = find_in_day(&day, &suffix)? {
            return Ok(found);
        }
    }
    Err(RolloutError::NotFound {
        thread_id,
        sessions,
    })
}

/// Every rollout file under `$ARBOR_HOME/sessions`, oldest date folder first, each folder in
/// file-name order. A missing `sessions` folder means no rollouts.
pub fn list_rollouts(home: &Path) -> Result<Vec<PathBuf>, RolloutError> {
    let mut found = Vec::new();
    for day in day_dirs(&sessions_dir(home))? {
        let mut files: Vec<PathBuf> = entries(&day)?
            .into_iter()
            .filter(|(name, is_dir)| !is_dir && is_rollout_name(name))
            .map(|(name, _)| day.join(name))
            .collect();
        files.sort();
        found.append(&mut files);
    }
    Ok(found)
}

fn is_rollout_name(name: &str) -> bool {
    name.starts_with("rollout-") && name.ends_with(".jsonl")
}

fn find_in_day(dir: &Path, suffix: &str) -> Result<Option<PathBuf>, RolloutError> {
    Ok(entries(dir)?
        .into_iter()
        .find(|(name, is_dir)| !is_dir && is_rollout_name(name) && name.ends_with(suffix))
        .map(|(name, _)| dir.join(name)))
}

/// The `YYYY/MM/DD` folders under `sessions`, sorted by date.
fn day_dirs(sessions: &Path) -> Result<Vec<PathBuf>, RolloutError> {
    let mut days = Vec::new();
    for year in sorted_subdirs(sessions)? {
        for month in sorted_subdirs(&year)? {
            days.extend(sorted_subdirs(&month)?);
        }
    }
    Ok(days)
}

fn sorted_subdirs(dir: &Path) -> Result<Vec<PathBuf>, RolloutError> {
    let mut dirs: Vec<PathBuf> = entries(dir)?
        .into_iter()
        .filter(|(_, is_dir)| *is_dir)
        .map(|(name, _)| dir.join(name))
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// `(name, is_dir)` of each entry with a UTF-8 name; a missing folder has none.
fn entries(dir: &Path) -> Result<Vec<(String, bool)>, RolloutError> {
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(RolloutError::io(dir, "list folder", err)),
    };
    let mut out = Vec::new();
    for entry in read {
        let entry = entry.map_err(|err| RolloutError::io(dir, "list folder", err))?;
        let file_type = entry
            .file_type()
            .map_err(|err| RolloutError::io(entry.path(), "stat", err))?;
        if let Ok(name) = entry.file_name().into_string() {
            out.push((name, file_type.is_dir()));
        }
    }
    Ok(out)
}

/// The creation time a UUID v7 carries in its first 48 bits, if `id` is a v7.
fn uuid_v7_millis(id: ThreadId) -> Option<i64> {
    let text = id.to_string();
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    if hex.get(12..13)? != "7" {
        return None;
    }
    i64::from_str_radix(hex.get(..12)?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_has_date_folders_and_stamped_name() {
        let ts = Timestamp::parse("2026-01-02T03:04:05.678Z").expect("ts");
        let id = ThreadId::parse("0190c2a4-7b3e-7c1a-9f2b-3c4d5e6f7a8b").expect("id");
        assert_eq!(
            rollout_path(Path::new("/h"), ts, id),
            Path::new(
                "/h/sessions/2026/01/02/rollout-2026-01-02T03-04-05-0190c2a4-7b3e-7c1a-9f2b-3c4d5e6f7a8b.jsonl"
            )
        );
    }

    #[test]
    fn v7_ids_carry_their_creation_time() {
        let before = Timestamp::now().as_millis();
        let id = ThreadId::new();
        let after = Timestamp::now().as_millis();
        let millis = uuid_v7_millis(id).expect("v7");
        assert!(
            (before..=after).contains(&millis),
            "{before} {millis} {after}"
        );
        let v4 = ThreadId::parse("0190c2a4-7b3e-4c1a-9f2b-3c4d5e6f7a8b").expect("id");
        assert_eq!(uuid_v7_millis(v4), None);
    }

    #[test]
    fn find_falls_back_to_a_full_scan() {
        let home = tempfile::tempdir().expect("tempdir");
        let id = ThreadId::new();
        // A header stamped years away from the id's own time still gets found.
        let far = rollout_path(home.path(), Timestamp::from_millis(86_400_000), id);
        fs::create_dir_all(far.parent().expect("parent")).expect("mkdir");
        fs::write(&far, b"").expect("write");
        assert_eq!(find_rollout(home.path(), id).expect("found"), far);
        assert_eq!(list_rollouts(home.path()).expect("list"), vec![far]);
        let other = ThreadId::new();
        let err = find_rollout(home.path(), other).expect_err("absent");
        assert!(
            err.to_string()
                .starts_with(&format!("no rollout for thread {other} under "))
        );
    }
}
