//! The module import graph of one crate, read from its source: every `crate::`, `super::` and
//! `self::` path a module names (in `use` trees and inline) points at the longest module prefix
//! that exists. Test modules are left out; a parent declaring `mod child;` is not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the modules it imports.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The import graph of the crate whose `src` folder is `src`.
pub fn import_graph(src: &Path) -> Graph {
    let mut sources = BTreeMap::new();
    collect(src, src, &mut sources);
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    let mut graph = Graph::new();
    for (module, text) in &sources {
        let mut targets = BTreeSet::new();
        for path in paths_in(text) {
            if let Some(target) = resolve(module, &path, &modules)
                && &target != module
            {
                targets.insert(target);
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

/// A cycle of imports, as the modules along it (the first again at the end).
pub fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let at = stack.iter().position(|n| n == node).unwrap_or(0);
                let mut cycle = stack[at..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        let mut stack = Vec::new();
        if let Some(cycle) = visit(node, graph, &mut marks, &mut stack) {
            return Some(cycle);
        }
    }
    None
}

/// Module path of every non-test `.rs` file under `dir` (`crate` for `lib.rs`).
fn collect(src: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(src, &path, out);
            continue;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".rs") || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let rel = path.strip_prefix(src).expect("inside src");
        let mut parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts
            .last()
            .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
        {
            parts.pop();
        }
        let module = if parts.is_empty() {
            "crate".to_string()
        } else {
            parts.join("::")
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // An inline test module (last in its file) is a test, not the module's imports.
        let text = match text.find("#[cfg(test)]\nmod ") {
            Some(at) => &text[..at],
            None => &text[..],
        };
        out.insert(module, strip_comments(text));
    }
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path starting with `crate`, `super` or `self` the text names, as segments.
fn paths_in(text: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    // `use` trees, expanded.
    let mut rest = text;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = rest.find(';') else {
            break;
        };
        // Aliases (`a::B as C`) name nothing new to resolve: drop them, then the whitespace.
        let mut words = rest[..end].split_whitespace().peekable();
        let mut tree = String::new();
        while let Some(word) = words.next() {
            if word == "as" {
                let alias = words.next().unwrap_or("");
                tree.extend(alias.chars().filter(|c| matches!(c, ',' | '}')));
                continue;
            }
            tree.push_str(word);
        }
        expand(&tree, &mut Vec::new(), &mut paths);
        rest = &rest[end..];
    }
    // Inline paths.
    for start in ["crate::", "super::", "self::"] {
        let mut rest = text;
        while let Some(at) = rest.find(start) {
            let before = rest[..at].chars().last();
            let tail = &rest[at..];
            rest = &rest[at + start.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: Vec<String> = tail
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or("")
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            paths.push(path);
        }
    }
    paths
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(|mut p| {
            // A `use` path of the 2018 form (`use child::Item`) starts at the module itself.
            if !matches!(p[0].as_str(), "crate" | "super" | "self") {
                p.insert(0, "self".to_string());
                p.push(String::new());
            }
            p
        })
        .collect()
}

/// Expands a `use` tree without whitespace (`crate::a::{b, c::{d}}`) into its paths.
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let Some(open) = tree.find('{') else {
        let mut path = prefix.clone();
        path.extend(
            tree.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        out.push(path);
        return;
    };
    let head: Vec<String> = tree[..open]
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let close = tree.rfind('}').unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let depth = prefix.len();
    prefix.extend(head);
    let mut level = 0;
    let mut start = 0;
    let bytes: Vec<char> = inner.chars().collect();
    for (i, c) in bytes.iter().enumerate() {
        match c {
            '{' => level += 1,
            '}' => level -= 1,
            ',' if level == 0 => {
                let part: String = bytes[start..i].iter().collect();
                if !part.is_empty() {
                    expand(&part, prefix, out);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    let part: String = bytes[start..].iter().collect();
    if !part.is_empty() {
        expand(&part, prefix, out);
    }
    prefix.truncate(depth);
}

/// The module a path from `module` points at: the longest prefix of it that is a module.
fn resolve(module: &str, path: &[String], modules: &BTreeSet<String>) -> Option<String> {
    let mut base: Vec<String> = if module == "crate" {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    };
    let mut segments = path.iter().peekable();
    match segments.next().map(String::as_str) {
        Some("crate") => base.clear(),
        Some("self") => {}
        Some("super") => {
            base.pop();
            while segments.peek().is_some_and(|s| *s == "super") {
                segments.next();
                base.pop();
            }
        }
        _ => return None,
    }
    let rest: Vec<String> = segments.filter(|s| *s != "self").cloned().collect();
    // A bare path that names no child module is an outside crate's (`use std::…`).
    let bare = path.last().is_some_and(String::is_empty);
    let lowest = usize::from(bare);
    for take in (lowest..=rest.len()).rev() {
        let mut candidate = base.clone();
        candidate.extend(rest[..take].iter().cloned());
        let name = if candidate.is_empty() {
            "crate".to_string()
        } else {
            candidate.join("::")
        };
        if modules.contains(&name) {
            return Some(name);
        }
    }
    None
}
