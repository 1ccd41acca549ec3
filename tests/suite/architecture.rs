//! The architecture's invariants, checked on the source tree (`ARCHITECTURE.md`, "Rules"):
//! the crate dependency edges are the table's, only `agent-graph` links SQLite, no leaf crate
//! depends on the orchestrator, every module starts with `//!`, no file of the product is over
//! 500 lines, `unsafe` appears only where the list below says why, and no module of the
//! orchestrator imports one that imports it back. Each failure names the rule and the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Files that may hold `unsafe`, and why.
const UNSAFE_ALLOWED: &[(&str, &str)] = &[
    (
        "tools/src/exec/contain.rs",
        "the supervisor: fork, prctl(PR_SET_CHILD_SUBREAPER), waitpid and kill",
    ),
    (
        "tools/src/exec/group.rs",
        "killpg of a command's process group",
    ),
    (
        "tools/src/beneath/mod.rs",
        "openat2 and the O_NOFOLLOW walk",
    ),
    (
        "tools/src/beneath/dir.rs",
        "the *at calls on a directory handle",
    ),
    (
        "tools/src/sandbox/child.rs",
        "between fork and exec: Landlock, mounts, setsid",
    ),
    ("tools/src/sandbox/mod.rs", "the pre_exec hook"),
    (
        "tools/src/sandbox/seccomp.rs",
        "seccomp(SECCOMP_SET_MODE_FILTER), its probe's fork, and its tests' raw system calls",
    ),
    ("bench/src/main.rs", "getrusage for CPU and peak memory"),
    (
        "bench/src/ui.rs",
        "openpty for the UI's terminal, sysconf for clock ticks, SIGTERM to it",
    ),
    (
        "cli/src/memory.rs",
        "mallopt, to keep the process's heap in one arena",
    ),
    (
        "cli/src/mcp/runs.rs",
        "SIGTERM to a tree's `arbor exec` child, so its turns end resumable",
    ),
    (
        "tools/src/exec/tests.rs",
        "tests signal and inspect their processes",
    ),
    (
        "tools/src/sandbox/tests.rs",
        "tests inspect a sandboxed child",
    ),
    (
        "tools/src/sandbox/home_tests.rs",
        "tests inspect a sandboxed child",
    ),
    (
        "tests/suite/cli.rs",
        "SIGINT to a driver, as Ctrl-C sends it",
    ),
    ("tests/suite/resume/crash.rs", "SIGKILL of a driver by pid"),
    (
        "tests/suite/hardening/processes.rs",
        "SIGKILL of a stray process by pid",
    ),
];

/// Test files, which may be longer than the product's 500 lines.
fn is_test_file(rel: &str) -> bool {
    rel.starts_with("tests/")
        || rel.ends_with("/tests.rs")
        || rel.ends_with("_tests.rs")
        || rel.contains("/tests/")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The workspace's member folders.
fn members() -> Vec<String> {
    let manifest: toml::Table = toml::from_str(&read(&root().join("Cargo.toml"))).expect("toml");
    manifest["workspace"]["members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|m| m.as_str().map(str::to_string))
        .collect()
}

/// A member's normal dependencies: (workspace members by folder, every package name).
fn dependencies(member: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let manifest: toml::Table =
        toml::from_str(&read(&root().join(member).join("Cargo.toml"))).expect("toml");
    let names: BTreeSet<String> = manifest
        .get("dependencies")
        .and_then(|deps| deps.as_table())
        .map(|deps| deps.keys().cloned().collect())
        .unwrap_or_default();
    let folders = member_folders();
    let internal = names
        .iter()
        .filter_map(|name| folders.get(name).cloned())
        .collect();
    (internal, names)
}

/// The workspace's own packages (`[workspace.dependencies]` with a `path`) by package name,
/// each to its member folder (`arbor-restate` → `restate-engine`).
fn member_folders() -> BTreeMap<String, String> {
    let manifest: toml::Table = toml::from_str(&read(&root().join("Cargo.toml"))).expect("toml");
    manifest["workspace"]["dependencies"]
        .as_table()
        .expect("workspace dependencies")
        .iter()
        .filter_map(|(name, spec)| {
            let path = spec.get("path")?.as_str()?;
            Some((name.clone(), path.to_string()))
        })
        .collect()
}

/// The table under "## Crate dependencies" in ARCHITECTURE.md: crate → what it depends on.
fn documented_edges() -> BTreeMap<String, BTreeSet<String>> {
    let text = read(&root().join("ARCHITECTURE.md"));
    let (_, section) = text
        .split_once("## Crate dependencies")
        .expect("ARCHITECTURE.md has a \"## Crate dependencies\" section");
    let mut edges = BTreeMap::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 2 || cells[0] == "crate" || cells[0].starts_with("---") {
            continue;
        }
        let name = cells[0].trim_matches('`').to_string();
        let deps = cells[1]
            .split(',')
            .map(|d| d.trim().trim_matches('`').to_string())
            .filter(|d| !d.is_empty() && d != "—")
            .collect();
        edges.insert(name, deps);
    }
    edges
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n == "target" || n == "fixtures")
            {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every Rust file of the workspace, relative to its root.
fn workspace_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for member in members() {
        rust_files(&root().join(member), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(root())
                .expect("inside")
                .display()
                .to_string();
            (rel, read(&path))
        })
        .collect()
}

#[test]
fn the_crate_edges_are_the_ones_architecture_md_lists() {
    let documented = documented_edges();
    let mut problems = Vec::new();
    for member in members() {
        let (actual, _) = dependencies(&member);
        match documented.get(&member) {
            None => problems.push(format!("{member} is missing from the table")),
            Some(listed) if listed != &actual => problems.push(format!(
                "{member} depends on {actual:?}, the table says {listed:?}"
            )),
            Some(_) => {}
        }
    }
    for listed in documented.keys() {
        if !members().contains(listed) {
            problems.push(format!(
                "the table lists {listed}, which is no workspace member"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "rule \"crate edges equal ARCHITECTURE.md's table\": {problems:#?}"
    );
}

#[test]
fn only_agent_graph_links_sqlite_and_no_leaf_crate_depends_on_the_orchestrator() {
    // The front ends (the CLI and its terminal UI), the tests and the benchmarks sit above it.
    let above_orchestrator = ["orchestrator", "tui", "cli", "tests", "bench"];
    let mut problems = Vec::new();
    for member in members() {
        let (internal, names) = dependencies(&member);
        if names.contains("rusqlite") && member != "agent-graph" {
            problems.push(format!(
                "rule \"only agent-graph depends on rusqlite\": {member}"
            ));
        }
        if internal.contains("orchestrator") && !above_orchestrator.contains(&member.as_str()) {
            problems.push(format!(
                "rule \"no leaf crate depends on orchestrator\": {member}"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_module_starts_with_its_doc_and_no_product_file_is_over_500_lines() {
    let mut problems = Vec::new();
    for (rel, text) in workspace_files() {
        if !text.trim_start().starts_with("//!") {
            problems.push(format!("rule \"every module starts with //!\": {rel}"));
        }
        let lines = text.lines().count();
        if lines > 500 && !is_test_file(&rel) {
            problems.push(format!(
                "rule \"no non-test file over 500 lines\": {rel} has {lines}"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn each_crate_has_one_error_enum_and_only_the_binary_uses_anyhow() {
    let mut enums: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (rel, text) in workspace_files() {
        if is_test_file(&rel) {
            continue;
        }
        let member = rel.split('/').next().unwrap_or_default().to_string();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.trim_start().starts_with("#[derive(") && line.contains("thiserror::Error") {
                let item = lines
                    .find(|l| !l.trim_start().starts_with("#["))
                    .unwrap_or("");
                enums
                    .entry(member.clone())
                    .or_default()
                    .push(format!("{rel}: {}", item.trim()));
            }
        }
    }
    let mut problems: Vec<String> = enums
        .into_iter()
        .filter(|(_, found)| found.len() > 1)
        .map(|(member, found)| {
            format!("rule \"one error enum per crate\": {member} has {found:#?}")
        })
        .collect();
    for member in members() {
        let (_, names) = dependencies(&member);
        if names.contains("anyhow") && member != "cli" {
            problems.push(format!(
                "rule \"anyhow only in the binary\": {member} depends on it"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn unsafe_appears_only_in_the_modules_listed_with_their_reason() {
    let allowed: BTreeSet<&str> = UNSAFE_ALLOWED.iter().map(|(file, _)| *file).collect();
    let mut problems = Vec::new();
    for (rel, text) in workspace_files() {
        let uses = text.lines().any(|line| {
            // Code only: not a comment, not the inside of a string.
            let code: String = line
                .split("//")
                .next()
                .unwrap_or("")
                .split('"')
                .step_by(2)
                .collect();
            code.contains("unsafe {") || code.contains("unsafe fn") || code.contains("unsafe impl")
        });
        if uses && !allowed.contains(rel.as_str()) {
            problems.push(format!(
                "rule \"unsafe only in the listed modules\": {rel} is not listed"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn no_module_of_the_orchestrator_imports_one_that_imports_it_back() {
    let graph = crate::architecture_modules::import_graph(&root().join("orchestrator/src"));
    if let Some(cycle) = crate::architecture_modules::find_cycle(&graph) {
        panic!(
            "rule \"no module of the orchestrator imports one that imports it back\": {}",
            cycle.join(" → ")
        );
    }
}
