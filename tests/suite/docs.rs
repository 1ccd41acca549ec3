//! Reference pages kept equal to what they describe: the generated part of `docs/tools.md` is
//! rendered again from the tool specs the model is offered and compared (with
//! `ARBOR_UPDATE_DOCS=1` the test writes it instead), and every page the docs point at exists.

use std::path::{Path, PathBuf};

use arbor_protocol::ToolSpec;
use serde_json::Value;

const BEGIN: &str = "<!-- generated from the tool specs: ARBOR_UPDATE_DOCS=1 cargo test -p arbor-cli --test suite docs rewrites it -->\n";
const END: &str = "<!-- end of the generated part -->\n";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn the_tools_reference_is_the_specs_the_model_sees() {
    let roles = arbor_roles::RoleSet::builtin().describe_for_spawn();
    let generated = render(&arbor_orchestrator::tool_specs(&roles));
    let path = repo().join("docs/tools.md");
    let page = std::fs::read_to_string(&path).expect("docs/tools.md");
    let (head, rest) = page
        .split_once(BEGIN)
        .expect("docs/tools.md has the generated part's opening marker");
    let (current, tail) = rest
        .split_once(END)
        .expect("docs/tools.md has the generated part's closing marker");
    if std::env::var_os("ARBOR_UPDATE_DOCS").is_some() {
        std::fs::write(&path, format!("{head}{BEGIN}{generated}{END}{tail}")).expect("write");
        return;
    }
    assert!(
        current == generated,
        "docs/tools.md differs from the tool specs (ARBOR_UPDATE_DOCS=1 cargo test -p arbor-cli \
         --test suite docs rewrites it); generated:\n{generated}"
    );
    // Every tool has its results and errors written down after the generated part.
    for spec in arbor_orchestrator::tool_specs(&roles) {
        assert!(
            tail.contains(&format!("### `{}`", spec.name)),
            "docs/tools.md says nothing of {}'s results and errors",
            spec.name
        );
    }
}

#[test]
fn the_docs_point_only_at_pages_that_exist() {
    let docs = repo().join("docs");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&docs)
        .expect("docs")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.push(repo().join("README.md"));
    pages.push(repo().join("ARCHITECTURE.md"));
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("page");
        for (at, _) in text.match_indices(".md`") {
            let start = text[..at].rfind('`').map_or(at, |i| i + 1);
            let name = &text[start..at + 3];
            // `AGENTS.md` names the project instruction files arbor reads in a user's checkout.
            if name.contains(' ') || name.is_empty() || name.ends_with("AGENTS.md") {
                continue;
            }
            let found = [
                repo().join(name),
                docs.join(name),
                repo().join("docs").join(name),
            ]
            .iter()
            .any(|candidate| candidate.exists());
            assert!(
                found,
                "{} points at `{name}`, which is not in the repository",
                page.display()
            );
        }
    }
}

/// The reference of `specs`: per tool, its description as the model reads it and a table of
/// its arguments.
fn render(specs: &[ToolSpec]) -> String {
    let mut out = String::new();
    for spec in specs {
        out.push_str(&format!("\n### `{}`\n\n", spec.name));
        out.push_str(&format!(
            "```text\n{}\n```\n\n",
            spec.description.trim_end()
        ));
        let properties = spec.parameters["properties"].as_object();
        let required: Vec<&str> = spec.parameters["required"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match properties.filter(|p| !p.is_empty()) {
            None => out.push_str("No arguments.\n"),
            Some(properties) => {
                out.push_str("| argument | type | required | description |\n|---|---|---|---|\n");
                for (name, schema) in properties {
                    out.push_str(&format!(
                        "| `{name}` | {} | {} | {} |\n",
                        type_of(schema),
                        if required.contains(&name.as_str()) {
                            "yes"
                        } else {
                            "no"
                        },
                        cell(schema["description"].as_str().unwrap_or("")),
                    ));
                }
            }
        }
    }
    out.push('\n');
    out
}

/// `string`, `` `any` or `all` ``, `integer ≥ 0`, `array of string`.
fn type_of(schema: &Value) -> String {
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values
            .iter()
            .filter_map(Value::as_str)
            .map(|v| format!("`{v}`"))
            .collect();
        return match values.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "enum".to_string(),
        };
    }
    let kind = schema["type"].as_str().unwrap_or("any");
    match kind {
        "array" => format!("array of {}", type_of(&schema["items"])),
        "integer" | "number" => match schema["minimum"].as_i64() {
            Some(min) => format!("{kind} ≥ {min}"),
            None => kind.to_string(),
        },
        other => other.to_string(),
    }
}

/// Text safe in a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('\n', " ")
}
