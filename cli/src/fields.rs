//! A request as a person reads it: its fields one per line, and what it asks to run.

use serde_json::Value;

/// One `  label: value` line of a request as a person reads it (here, in `--engine restate`'s
/// list and in the terminal prompt): the value as `text::visible_lines` shows it, every line
/// after the first indented under the label, so a command or a justification the model wrote
/// can neither erase nor pose as another line.
pub fn field(label: &str, value: &str) -> String {
    format!(
        "  {label}: {}\n",
        arbor_protocol::text::visible_lines(value, "    ")
    )
}

/// What a request asks to run, for a person: its command, or the whole action.
pub fn command_of(action: &Value) -> String {
    action["command"]
        .as_str()
        .map_or_else(|| action.to_string(), str::to_string)
}
