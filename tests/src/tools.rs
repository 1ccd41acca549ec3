//! The external programs the tests run (MCP servers from npm, the Python MCP client, the
//! Restate server), pinned in `tests/tools/versions` and installed by `tests/tools/install.sh`
//! into one folder. The first test that needs one runs the installer (once, under a lock, for
//! every test binary at the same time), so `cargo test --workspace` works on a machine that has
//! Node.js and Python but never ran `.ci/run`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace's root (this crate sits in `tests/`).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Where the tools are installed: `$ARBOR_TEST_TOOLS`, else `target/test-tools`.
pub fn tools_dir() -> PathBuf {
    match std::env::var_os("ARBOR_TEST_TOOLS") {
        Some(dir) => PathBuf::from(dir),
        None => workspace().join("target").join("test-tools"),
    }
}

/// Installs the pinned tools if they are not yet, and returns their folder. Panics with the
/// installer's message when it fails (no Node.js, no network).
pub fn ensure_tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tools_dir();
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", dir.display()));
        let lock = File::create(dir.join(".lock"))
            .unwrap_or_else(|err| panic!("cannot create the lock in {}: {err}", dir.display()));
        lock.lock()
            .unwrap_or_else(|err| panic!("cannot lock {}: {err}", dir.display()));
        let script = workspace().join("tests").join("tools").join("install.sh");
        let out = Command::new("bash")
            .arg(&script)
            .env("ARBOR_TEST_TOOLS", &dir)
            .output()
            .unwrap_or_else(|err| panic!("cannot run {}: {err}", script.display()));
        assert!(
            out.status.success(),
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        drop(lock);
        dir
    })
}

/// The path of the executable `name` an npm package of `tests/tools/versions` installs
/// (`mcp-server-filesystem`, `mcp-server-everything`, `restate-server`).
pub fn npm_bin(name: &str) -> PathBuf {
    let path = ensure_tools()
        .join("npm")
        .join("node_modules")
        .join(".bin")
        .join(name);
    assert!(path.exists(), "{} is not installed", path.display());
    path
}

/// The Python of the tools' virtual environment (it has the `mcp` package).
pub fn python() -> PathBuf {
    let path = ensure_tools().join("venv").join("bin").join("python");
    assert!(path.exists(), "{} is not installed", path.display());
    path
}

/// The misbehaving stdio MCP server of the test support (`tests/fixtures/mcp/misbehaving.py`),
/// as the command and arguments that start it in `mode` (`ok`, `hang-at-start`,
/// `garbage-at-start`).
pub fn misbehaving_server(mode: &str) -> (String, Vec<String>) {
    let script = workspace()
        .join("tests")
        .join("fixtures")
        .join("mcp")
        .join("misbehaving.py");
    (
        python().display().to_string(),
        vec![script.display().to_string(), mode.to_string()],
    )
}
