//! `arbor`: the command line of the multi-agent orchestrator.

use clap::Parser;

/// arbor runs a tree of LLM coding agents on your code.
#[derive(Debug, Parser)]
#[command(name = "arbor", version, about)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
}
