//! `arbor doctor`: a fresh home has nothing wrong and no sessions yet; a broken config, role or
//! rules file is a problem (exit 1); MCP servers are started and the model server is asked,
//! unless `--offline`; `--rebuild` makes a store that cannot be opened again from the session
//! logs and keeps the damaged file beside it; read commands work on a full disk.

use std::path::{Path, PathBuf};

use arbor_tests::mock_http::{MockServer, Reply};
use serde_json::json;

use crate::cli::{Workspace, session_of, text};

fn example_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/refactor/script.json")
}

/// `arbor doctor ARGS` in `ws`, run off the test's runtime (a mock server may answer it).
async fn doctor(ws: &Workspace, args: &[&str]) -> std::process::Output {
    let mut cmd = ws.arbor();
    cmd.arg("doctor").args(args).arg("--cwd").arg(ws.project());
    tokio::task::spawn_blocking(move || cmd.output().expect("arbor runs"))
        .await
        .expect("joined")
}

#[tokio::test]
async fn a_fresh_home_has_no_sessions_yet_and_nothing_wrong() {
    let ws = Workspace::new();
    let out = doctor(&ws, &[]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for line in [
        "ok: config: no config.toml",
        "ok: roles: default, explorer, guardian, worker",
        "ok: rules: 0 command rules",
        "ok: model: none configured",
    ] {
        assert!(stdout.contains(line), "{line}:\n{stdout}");
    }
    assert!(stdout.contains("git: "), "{stdout}");
    assert!(stdout.contains("sandbox: "), "{stdout}");
    assert!(
        stdout.ends_with(&format!("ok: no sessions yet in {}\n", ws.home().display())),
        "{stdout}"
    );
    assert!(
        !ws.home().join("state.sqlite").exists(),
        "doctor made nothing"
    );
    let sessions = ws.run(&["sessions"]);
    assert_eq!(sessions.status.code(), Some(0));
    assert!(text(&sessions.stderr).contains("no sessions yet"));
    let json = ws.run(&["sessions", "--json"]);
    assert_eq!(text(&json.stdout).trim(), "[]");
}

#[tokio::test]
async fn a_broken_config_role_or_rules_file_is_a_problem() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home()).expect("home");
    let config = ws.home().join("config.toml");
    let named = format!("problem: config: config file {}", config.display());
    for (broken, expected) in [
        ("model = [broken\n", named.as_str()),
        ("no_such_key = 1\n", "no_such_key"),
        (
            "reasoning_effort = \"extreme\"\n",
            "problem: config: `reasoning_effort`",
        ),
    ] {
        std::fs::write(&config, broken).expect("config");
        let out = doctor(&ws, &["--offline"]).await;
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{broken}: {stdout}");
        assert!(stdout.contains(expected), "{broken}: {stdout}");
    }
    std::fs::remove_file(&config).expect("removed");
    let roles = ws.project().join(".arbor/roles");
    std::fs::create_dir_all(&roles).expect("roles");
    std::fs::write(
        roles.join("tester.toml"),
        "name = \"tester\"\nsandbox_mode = 7\n",
    )
    .expect("role");
    let out = doctor(&ws, &["--offline"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("problem: roles: "), "{stdout}");
    assert!(stdout.contains("tester.toml"), "{stdout}");
    std::fs::remove_file(roles.join("tester.toml")).expect("removed");
    let rules = ws.home().join("rules");
    std::fs::create_dir_all(&rules).expect("rules");
    std::fs::write(rules.join("bad.toml"), "[[rule]]\npattern = 3\n").expect("rules");
    let out = doctor(&ws, &["--offline"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("problem: rules: "), "{stdout}");
    assert!(stdout.contains("bad.toml"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_server_is_asked_for_its_models_unless_offline() {
    let ws = Workspace::new();
    let server = MockServer::start(|request| match request.header("authorization") {
        Some("Bearer good-key") => {
            Reply::json(200, &json!({"data": [{"id": "other"}, {"id": "m1"}]}))
        }
        _ => Reply::json(401, &json!({"error": {"message": "bad key"}})),
    })
    .await;
    std::fs::create_dir_all(ws.home()).expect("home");
    std::fs::write(
        ws.home().join("config.toml"),
        format!(
            "provider = \"chat\"\nmodel = \"m1\"\nbase_url = \"{}\"\napi_key_env = \"DOCTOR_TEST_KEY\"\n",
            server.base_url()
        ),
    )
    .expect("config");
    let run = |key: &'static str, args: &'static [&'static str]| {
        let mut cmd = ws.arbor();
        cmd.arg("doctor")
            .args(args)
            .arg("--cwd")
            .arg(ws.project())
            .env("DOCTOR_TEST_KEY", key);
        tokio::task::spawn_blocking(move || cmd.output().expect("arbor runs"))
    };
    let out = run("good-key", &[]).await.expect("joined");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "ok: model: m1 on {} (chat): the server answers and lists the model",
            server.base_url()
        )),
        "{stdout}"
    );
    let asked = server.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].method.as_str(), asked[0].path.as_str()),
        ("GET", "/v1/models")
    );

    let out = run("wrong-key", &[]).await.expect("joined");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("the server refused the key (http 401): bad key"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("wrong-key"),
        "the key is never printed: {stdout}"
    );

    let out = run("good-key", &["--offline"]).await.expect("joined");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("(chat): not asked (--offline)"), "{stdout}");
    assert_eq!(server.requests().len(), 2, "--offline asks nothing");
}

#[tokio::test]
async fn each_mcp_server_is_started_and_one_that_cannot_start_is_a_problem() {
    let ws = Workspace::new();
    let (python, args) = arbor_tests::tools::misbehaving_server("ok");
    std::fs::create_dir_all(ws.home()).expect("home");
    std::fs::write(
        ws.home().join("config.toml"),
        format!(
            "[mcp_servers.good]\ncommand = {python:?}\nargs = {args:?}\n\n\
             [mcp_servers.gone]\ncommand = \"/nonexistent/mcp-server\"\n"
        ),
    )
    .expect("config");
    let out = doctor(&ws, &["--offline"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let good = stdout
        .lines()
        .find(|line| line.starts_with("ok: mcp server good: started, "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(!good.ends_with(", 0 tools"), "{good}");
    assert!(
        stdout.contains("problem: mcp server gone did not start: "),
        "{stdout}"
    );
}

/// What a test does to a store.
type Damage = dyn Fn(&Path);

/// A session's home whose store is made unreadable by `damage`.
fn damaged_home(damage: impl Fn(&Path)) -> (Workspace, String) {
    let ws = Workspace::new();
    let out = ws.exec(&example_script(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    damage(&ws.home().join("state.sqlite"));
    (ws, session)
}

#[test]
fn rebuild_makes_a_store_that_cannot_be_opened_again_and_keeps_the_damaged_file() {
    let garbage = |path: &Path| {
        let mut bytes = std::fs::read(path).expect("store");
        for (i, byte) in bytes.iter_mut().take(8192).enumerate() {
            *byte = (i * 7 + 13) as u8;
        }
        std::fs::write(path, bytes).expect("garbage written");
    };
    let truncated = |path: &Path| {
        // The store's WAL into its file first, then the file cut after its first pages.
        for extra in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{extra}", path.display()));
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open");
        file.set_len(4096 * 3).expect("cut");
    };
    let foreign = |path: &Path| {
        for extra in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{extra}", path.display()));
        }
        let conn = rusqlite::Connection::open(path).expect("another program's database");
        conn.execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
            .expect("its tables");
    };
    let kinds: [(&str, &Damage); 3] = [
        ("corrupt", &garbage),
        ("truncated", &truncated),
        ("another program's", &foreign),
    ];
    for (kind, damage) in kinds {
        let (ws, session) = damaged_home(|path| {
            // A clean close first, so the store is its file alone.
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
                .arg("--home")
                .arg(path.parent().expect("home"))
                .args(["doctor", "--rebuild"])
                .output()
                .expect("rebuild");
            assert!(out.status.success(), "{}", text(&out.stderr));
            damage(path);
        });
        let store = ws.home().join("state.sqlite");
        let damaged_bytes = std::fs::read(&store).expect("damaged store");
        // A read says what to do.
        let read = ws.run(&["tree", &session]);
        assert_eq!(read.status.code(), Some(1), "{kind}");
        assert!(
            text(&read.stderr).contains("`arbor doctor --rebuild` makes the store again"),
            "{kind}: {}",
            text(&read.stderr)
        );
        let out = ws
            .arbor()
            .args(["doctor", "--offline", "--cwd"])
            .arg(ws.project())
            .output()
            .expect("doctor runs");
        assert_eq!(out.status.code(), Some(1), "{kind}: {}", text(&out.stdout));
        assert!(
            text(&out.stdout).contains("`arbor doctor --rebuild` makes it again"),
            "{kind}"
        );

        let rebuilt = ws.run(&["doctor", "--rebuild"]);
        let stderr = text(&rebuilt.stderr);
        assert!(rebuilt.status.success(), "{kind}: {stderr}");
        // A cut file may still open (then it is kept as a backup), the others never do.
        let kept = stderr
            .lines()
            .find_map(|line| {
                line.strip_prefix("kept the damaged store beside the new one as ")
                    .or_else(|| line.strip_prefix("kept the old store as "))
            })
            .unwrap_or_else(|| panic!("{kind}: {stderr}"));
        if kind != "truncated" {
            assert!(kept.contains(".damaged-"), "{kind}: {kept}");
        }
        assert_eq!(
            std::fs::read(kept).expect("kept"),
            damaged_bytes,
            "{kind}: the damaged file is kept as it was"
        );
        assert!(kept.starts_with(&ws.home().display().to_string()), "{kept}");
        // Everything is back: the session reads, and doctor agrees.
        let tree = ws.run(&["tree", &session, "--json"]);
        assert!(tree.status.success(), "{kind}: {}", text(&tree.stderr));
        let tree: serde_json::Value = serde_json::from_slice(&tree.stdout).expect("json");
        assert_eq!(tree["children"].as_array().map(Vec::len), Some(3), "{kind}");
        let check = ws.run(&["doctor", "--offline"]);
        assert!(
            text(&check.stdout).contains("ok: 4 threads agree with their session logs"),
            "{kind}: {}",
            text(&check.stdout)
        );
    }
}

/// Run inside `unshare --user --map-root-user --mount`, so the test can mount a tmpfs home of
/// its own; exit 90 says mounting is not permitted here.
const FULL_DISK: &str = r#"set -u
mount -t tmpfs -o size=4m tmpfs "$HOMEDIR" || exit 90
"$ARBOR" --home "$HOMEDIR" exec --script "$SCRIPT" --cwd "$WS" go > /dev/null 2> "$OUT/exec.err" || exit 91
# A clean close leaves the store without its shared-memory file, which a reader must then make.
"$ARBOR" --home "$HOMEDIR" doctor --rebuild > /dev/null 2>&1 || exit 92
[ -e "$HOMEDIR/state.sqlite-shm" ] && exit 93
dd if=/dev/zero of="$HOMEDIR/fill" bs=64k 2> /dev/null
df -k "$HOMEDIR" | tail -1 > "$OUT/df"
i=0
for command in "sessions" "tree --last" "agents --last --json" "log --last /root/worker_a" \
    "mail --last /root" "approvals --last" "doctor --offline"; do
  i=$((i + 1))
  "$ARBOR" --home "$HOMEDIR" $command > "$OUT/$i.out" 2> "$OUT/$i.err"
  echo $? > "$OUT/$i.rc"
  echo "$command" > "$OUT/$i.cmd"
done
"#;

#[test]
fn read_commands_work_on_a_full_disk() {
    let ws = Workspace::new();
    let home = ws.dir.path().join("tmpfs-home");
    let out = ws.dir.path().join("out");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&out).expect("out");
    let ran = std::process::Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            FULL_DISK,
        ])
        .env("HOMEDIR", &home)
        .env("ARBOR", env!("CARGO_BIN_EXE_arbor"))
        .env("SCRIPT", example_script())
        .env("WS", ws.project())
        .env("OUT", &out)
        .env_remove("ARBOR_HOME")
        .output()
        .expect("unshare runs (util-linux)");
    if ran.status.code() == Some(90)
        || !ran.status.success() && text(&ran.stderr).contains("unshare:")
    {
        eprintln!(
            "skipped: this machine does not let the test mount a tmpfs in a namespace of its own: {}",
            text(&ran.stderr)
        );
        return;
    }
    assert!(
        ran.status.success(),
        "steps: {:?} {}",
        ran.status.code(),
        text(&ran.stderr)
    );
    let read = |name: String| std::fs::read_to_string(out.join(name)).unwrap_or_default();
    let df = read("df".into());
    assert!(
        df.split_whitespace().nth(3) == Some("0"),
        "the disk is full: {df}"
    );
    for i in 1..=7 {
        let command = read(format!("{i}.cmd"));
        assert_eq!(
            read(format!("{i}.rc")).trim(),
            "0",
            "{command} on a full disk: {}",
            read(format!("{i}.err"))
        );
    }
    assert!(
        read("1.out".into()).contains("4 agents"),
        "{}",
        read("1.out".into())
    );
    assert!(read("2.out".into()).contains("/root/worker_c"));
    let agents: serde_json::Value = serde_json::from_str(&read("3.out".into())).expect("json");
    assert_eq!(agents.as_array().map(Vec::len), Some(4));
    assert!(read("4.out".into()).contains("turn 1 completed"));
    assert!(read("7.out".into()).contains("ok: 4 threads agree with their session logs"));
}
