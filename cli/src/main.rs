//! `arbor`: the command line of the multi-agent orchestrator.

fn main() {}
