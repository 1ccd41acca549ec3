//! Holes a confused or hostile model once had, probed through the scripted model as an attacker
//! would: rules bypassed through wrappers, `eval` and git; `untrusted` escapes through git and
//! abbreviated options; self-approval from the sandbox; secrets in the agents' environment; a
//! repository config redirecting the API key; processes that outlive the session; sockets that
//! reach past a closed network; an approval prompt made to lie with control characters.

mod env;
mod network;
mod policy;
mod processes;
mod prompt;
mod self_approval;
mod trust;
mod untrusted;
