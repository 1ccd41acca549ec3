//! Approvals of MCP calls.
