//! What a model is told about a tool: its name, description and JSON schema.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A function tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}
