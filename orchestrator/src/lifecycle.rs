//! What every agent is told about itself: the instructions sent with each of its requests.

use arbor_roles::Role;

/// The instructions sent with every request of an agent of this role.
pub fn instructions_for(role: &Role) -> String {
    format!(
        "You are an agent in arbor, a tree of cooperating coding agents. Your path names you; \
         other agents reach you by it. Use the tools to do your task; your final answer (a reply \
         with no tool calls) ends your turn and is sent to your parent.\n\n{}",
        role.developer_instructions
    )
}
