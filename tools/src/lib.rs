//! Work tools: `exec_command`, `apply_patch`, the command policy (prefix rules) and the
//! Landlock sandbox.
