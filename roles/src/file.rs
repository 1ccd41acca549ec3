//! Parsing one role file: TOML text to a validated [`Role`], with errors naming file and field.
//!
//! The file is parsed to a TOML table first (syntax errors carry line and column), then each
//! field is taken out and deserialized on its own, so a bad value is reported with the field it
//! belongs to. Keys left over are unknown fields and are rejected (`deny_unknown_fields`).

use std::path::Path;

use arbor_protocol::{Isolation, SandboxMode};
use serde::de::DeserializeOwned;

use crate::RoleError;
use crate::role::{
    Role, RoleSource, check_effort, check_name, check_nicknames, check_text, check_tools,
};

/// The keys a role file may contain, in documentation order.
pub const ROLE_FIELDS: &[&str] = &[
    "name",
    "description",
    "developer_instructions",
    "model",
    "reasoning_effort",
    "tools",
    "sandbox_mode",
    "nickname_candidates",
    "can_spawn",
    "isolation",
    "auto_merge",
];

impl Role {
    /// Parses and validates the text of a role file; `path` names the file in errors and becomes
    /// the role's [`RoleSource::File`].
    pub fn from_toml(path: &Path, text: &str) -> Result<Role, RoleError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| syntax(path, text, &e))?;
        let mut file = FileFields { path, table };

        if let Some(key) = file
            .table
            .keys()
            .find(|k| !ROLE_FIELDS.contains(&k.as_str()))
        {
            return Err(RoleError::UnknownField {
                path: path.to_path_buf(),
                field: key.clone(),
                expected: ROLE_FIELDS.join(", "),
            });
        }

        let name: String = file.require("name")?;
        file.check("name", check_name(&name))?;
        let description: String = file.require("description")?;
        file.check("description", check_text(&description))?;
        let developer_instructions: String = file.require("developer_instructions")?;
        file.check(
            "developer_instructions",
            check_text(&developer_instructions),
        )?;

        let model: Option<String> = file.take("model")?;
        if let Some(model) = &model {
            file.check("model", check_text(model))?;
        }
        let reasoning_effort: Option<String> = file.take("reasoning_effort")?;
        if let Some(effort) = &reasoning_effort {
            file.check("reasoning_effort", check_effort(effort))?;
        }
        let tools = match file.take::<Vec<String>>("tools")? {
            Some(tools) => Some(file.check("tools", check_tools(tools))?),
            None => None,
        };
        let sandbox_mode = match file.take::<String>("sandbox_mode")? {
            Some(text) => Some(file.check("sandbox_mode", parse_sandbox(&text))?),
            None => None,
        };
        let nickname_candidates: Option<Vec<String>> = file.take("nickname_candidates")?;
        if let Some(names) = &nickname_candidates {
            file.check("nickname_candidates", check_nicknames(names))?;
        }
        let can_spawn = file.take::<bool>("can_spawn")?.unwrap_or(true);
        let isolation = match file.take::<String>("isolation")? {
            Some(text) => Some(file.check(
                "isolation",
                Isolation::parse(&text).ok_or_else(|| Isolation::unknown(&text)),
            )?),
            None => None,
        };
        let auto_merge = file.take::<bool>("auto_merge")?;

        Ok(Role {
            name,
            description,
            developer_instructions,
            model,
            reasoning_effort,
            tools,
            sandbox_mode,
            nickname_candidates,
            can_spawn,
            isolation,
            auto_merge,
            source: RoleSource::File(path.to_path_buf()),
        })
    }
}

/// The fields of one file, taken out one at a time.
struct FileFields<'a> {
    path: &'a Path,
    table: toml::Table,
}

impl FileFields<'_> {
    /// Takes an optional field and deserializes it.
    fn take<T: DeserializeOwned>(&mut self, field: &'static str) -> Result<Option<T>, RoleError> {
        match self.table.remove(field) {
            None => Ok(None),
            Some(value) => value
                .try_into::<T>()
                .map(Some)
                .map_err(|e| self.error(field, e.message().trim_end().to_owned())),
        }
    }

    /// Takes a required field.
    fn require<T: DeserializeOwned>(&mut self, field: &'static str) -> Result<T, RoleError> {
        self.take(field)?.ok_or_else(|| RoleError::MissingField {
            path: self.path.to_path_buf(),
            field,
        })
    }

    /// Turns a validation message into an error naming the field.
    fn check<T>(&self, field: &'static str, result: Result<T, String>) -> Result<T, RoleError> {
        result.map_err(|message| self.error(field, message))
    }

    fn error(&self, field: &'static str, message: String) -> RoleError {
        RoleError::Field {
            path: self.path.to_path_buf(),
            field,
            message,
        }
    }
}

fn parse_sandbox(text: &str) -> Result<SandboxMode, String> {
    SandboxMode::parse(text).ok_or_else(|| {
        let expected: Vec<&str> = [
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
            SandboxMode::DangerFullAccess,
        ]
        .iter()
        .map(|m| m.as_str())
        .collect();
        format!(
            "unknown variant `{text}`, expected one of {}",
            expected.join(", ")
        )
    })
}

/// A TOML syntax error with its 1-based line and column.
fn syntax(path: &Path, text: &str, error: &toml::de::Error) -> RoleError {
    let location = match error.span() {
        Some(span) => {
            let (line, column) = line_column(text, span.start);
            format!("line {line}, column {column}")
        }
        None => "an unknown position".to_owned(),
    };
    RoleError::Syntax {
        path: path.to_path_buf(),
        location,
        message: error.message().trim_end().to_owned(),
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/w/.arbor/roles/fast.toml";
    const HEAD: &str = "name = \"fast\"\ndescription = \"d\"\ndeveloper_instructions = \"i\"\n";

    fn parse(text: &str) -> Result<Role, RoleError> {
        Role::from_toml(Path::new(PATH), text)
    }

    /// `text` must fail with exactly `expect` after the `role file <path>: ` prefix.
    fn check_err(text: &str, expect: &str) {
        let err = parse(text)
            .map(|r| r.name)
            .expect_err("role file should not load");
        assert_eq!(
            err.to_string(),
            format!("role file {PATH}: {expect}"),
            "{text}"
        );
    }

    #[test]
    fn minimal_file_inherits_everything() {
        let role = parse(HEAD).expect("minimal role");
        assert_eq!(role.name, "fast");
        assert_eq!(role.model, None);
        assert_eq!(role.reasoning_effort, None);
        assert_eq!(role.tools, None);
        assert_eq!(role.sandbox_mode, None);
        assert_eq!(role.nickname_candidates, None);
        assert!(role.can_spawn);
        assert_eq!(role.isolation, None);
        assert_eq!(role.auto_merge, None);
        assert_eq!(role.source, RoleSource::File(PATH.into()));
    }

    #[test]
    fn full_file() {
        let text = format!(
            "{HEAD}model = \"m\"\nreasoning_effort = \"high\"\n\
             tools = [\"exec_command\", \"list_agents\"]\nsandbox_mode = \"read-only\"\n\
             nickname_candidates = [\"Ada\", \"Alan\"]\ncan_spawn = false\n\
             isolation = \"worktree\"\nauto_merge = true\n"
        );
        let role = parse(&text).expect("full role");
        assert_eq!(role.model.as_deref(), Some("m"));
        assert_eq!(role.reasoning_effort.as_deref(), Some("high"));
        // Canonical order, not file order.
        assert_eq!(
            role.tools,
            Some(vec!["list_agents".to_owned(), "exec_command".to_owned()])
        );
        assert_eq!(role.sandbox_mode, Some(SandboxMode::ReadOnly));
        assert_eq!(
            role.nickname_candidates,
            Some(vec!["Ada".to_owned(), "Alan".to_owned()])
        );
        assert!(!role.can_spawn);
        assert_eq!(role.isolation, Some(arbor_protocol::Isolation::Worktree));
        assert_eq!(role.auto_merge, Some(true));
    }

    #[test]
    fn missing_fields() {
        check_err("", "missing field `name`");
        check_err("name = \"x\"\n", "missing field `description`");
        check_err(
            "name = \"x\"\ndescription = \"d\"\n",
            "missing field `developer_instructions`",
        );
    }

    #[test]
    fn field_errors() {
        let cases: &[(&str, &str)] = &[
            (
                "sandbox_mode = \"wide\"",
                "field `sandbox_mode`: unknown variant `wide`, expected one of read-only, \
                 workspace-write, danger-full-access",
            ),
            (
                "tools = [\"exec_command\", \"rm_rf\"]",
                "field `tools`: unknown tool `rm_rf`, expected one of spawn_agent, send_message, \
                 followup_task, wait_agent, list_agents, close_agent, interrupt_agent, \
                 diff_agent, merge_agent, exec_command, apply_patch or an MCP pattern \
                 `mcp__SERVER__TOOL`",
            ),
            (
                "isolation = \"copy\"",
                "field `isolation`: unknown value `copy`, expected one of shared, worktree",
            ),
            (
                "auto_merge = \"yes\"",
                "field `auto_merge`: invalid type: string \"yes\", expected a boolean",
            ),
            (
                "tools = [\"mcp__fs.x\"]",
                "field `tools`: MCP pattern `mcp__fs.x` may use only letters, digits, `_`, `-` and `*`",
            ),
            (
                "tools = [\"exec_command\", \"exec_command\"]",
                "field `tools`: duplicate tool `exec_command`",
            ),
            (
                "nickname_candidates = []",
                "field `nickname_candidates`: must not be empty",
            ),
            (
                "nickname_candidates = [\"Ada\", \" \"]",
                "field `nickname_candidates`: names must not be blank",
            ),
            (
                "nickname_candidates = [\"Ada\", \"Ada\"]",
                "field `nickname_candidates`: duplicate name `Ada`",
            ),
            (
                "nickname_candidates = [\"Ada \"]",
                "field `nickname_candidates`: name `Ada ` has leading or trailing whitespace",
            ),
            (
                "reasoning_effort = \"max\"",
                "field `reasoning_effort`: unknown value `max`, expected one of none, minimal, \
                 low, medium, high, xhigh",
            ),
            ("model = \"\"", "field `model`: must not be empty"),
        ];
        for (extra, expect) in cases {
            check_err(&format!("{HEAD}{extra}\n"), expect);
        }
    }

    #[test]
    fn type_errors_name_the_field() {
        let cases: &[(&str, &str)] = &[
            (
                "can_spawn = \"yes\"",
                "field `can_spawn`: invalid type: string \"yes\", expected a boolean",
            ),
            (
                "tools = \"exec_command\"",
                "field `tools`: invalid type: string \"exec_command\", expected a sequence",
            ),
            (
                "model = 3",
                "field `model`: invalid type: integer `3`, expected a string",
            ),
        ];
        for (extra, expect) in cases {
            check_err(&format!("{HEAD}{extra}\n"), expect);
        }
    }

    #[test]
    fn name_errors() {
        let rest = "description = \"d\"\ndeveloper_instructions = \"i\"\n";
        check_err(
            &format!("name = \"\"\n{rest}"),
            "field `name`: must not be empty",
        );
        for bad in ["Fast", "fast-role", "fast role", "é"] {
            check_err(
                &format!("name = \"{bad}\"\n{rest}"),
                "field `name`: must use only lowercase letters, digits, and underscores",
            );
        }
        check_err(
            "name = \"x\"\ndescription = \" \"\ndeveloper_instructions = \"i\"\n",
            "field `description`: must not be empty",
        );
    }

    #[test]
    fn unknown_field() {
        check_err(
            &format!("{HEAD}colour = \"blue\"\n"),
            "unknown field `colour`, expected one of name, description, developer_instructions, \
             model, reasoning_effort, tools, sandbox_mode, nickname_candidates, can_spawn, \
             isolation, auto_merge",
        );
    }

    #[test]
    fn syntax_error_has_line_and_column() {
        check_err(
            "name = \"x\"\nname = \"y\"\n",
            "invalid toml at line 2, column 1: duplicate key",
        );
        check_err(
            "[roles\n",
            "invalid toml at line 1, column 7: unclosed table, expected `]`",
        );
        // The parser's own wording may change; the location is ours.
        let err = parse("name = \"x\"\ndescription = \n")
            .map(|r| r.name)
            .expect_err("bad toml");
        assert!(
            err.to_string().starts_with(&format!(
                "role file {PATH}: invalid toml at line 2, column 15: "
            )),
            "{err}"
        );
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("abc", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("é = x", 3), (1, 3));
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
