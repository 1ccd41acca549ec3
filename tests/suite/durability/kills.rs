//! SIGKILL at seeded random points of a fan-out and of a rally, each followed by a resume that
//! waits for everything: whatever was printed before the kill is in the log and is consumed
//! exactly once afterwards, no agent owed a turn is left unwoken, `doctor` agrees, and a
//! rebuild from the log gives the same store.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use arbor_protocol::RolloutItem;
use arbor_rollout::log::read_log;
use arbor_rollout::read_rollout;
use serde_json::{Value, json};

use crate::cli::{Workspace, text};
use crate::resume::{Driver, agents, write_script};

/// A small deterministic generator (xorshift64*), so a failing kill point can be replayed.
pub(crate) struct Seeded(u64);

impl Seeded {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound.max(1)
    }
}

fn fan_out(n: usize) -> Value {
    let spawns: Vec<Value> = (0..n)
        .map(|i| json!({"call": "spawn_agent", "args": {"task_name": format!("w_{i}"), "message": format!("part {i}")}}))
        .collect();
    json!({"agents": [
        {"match": "/root", "responses": [
            spawns,
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
            [{"say": "collected"}]]},
        {"match": "/root/w_*", "repeat": true, "responses": [
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"say": "{{path}}: done"}]]}
    ]})
}

fn rally(messages: usize) -> Value {
    let hop =
        |to: &str| json!([{"call": "followup_task", "args": {"target": to, "message": "ball"}}]);
    let mut a = Vec::new();
    let mut b = vec![json!([{"say": "ready"}])];
    for _ in 0..messages / 2 {
        a.push(hop("/root/b"));
        a.push(json!([{"say": "sent"}]));
        b.push(hop("/root/a"));
        b.push(json!([{"say": "sent"}]));
    }
    a.push(json!([{"say": "a done"}]));
    json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "wait for pings"}}],
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "start"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
            [{"say": "rally over"}]]},
        {"match": "/root/a", "responses": a},
        {"match": "/root/b", "responses": b}
    ]})
}

/// The second day: the root waits for every child and answers (again for each wake-once);
/// every child owed a turn answers it.
fn day_two() -> Value {
    json!({"agents": [
        {"match": "/root", "repeat": true, "responses": [
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
            [{"say": "all collected"}]]},
        {"match": "/root/*", "repeat": true, "responses": [[{"say": "{{path}} resumed"}]]}
    ]})
}

/// What the killed driver printed.
#[derive(Default)]
struct Printed {
    mails: Vec<String>,
    completed: HashMap<String, usize>,
}

/// Runs `script` with `--json`, kills the driver after `kill_after` events (if it has not
/// ended by then), and returns the session and what was printed before the kill.
fn run_and_kill(
    ws: &Workspace,
    script: &Path,
    extra: &[&str],
    kill_after: u64,
) -> (String, Printed) {
    let mut driver = Driver::start(ws, script, extra);
    let session = driver.session.clone();
    let mut printed = Printed::default();
    let mut seen = 1;
    let mut ended = false;
    while seen < kill_after {
        let Some(event) = driver.next_event() else {
            ended = true;
            break;
        };
        seen += 1;
        match event["type"].as_str() {
            Some("mail.sent") => printed
                .mails
                .push(event["id"].as_str().unwrap_or_default().into()),
            Some("turn.completed") => {
                *printed
                    .completed
                    .entry(event["path"].as_str().unwrap_or_default().into())
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    if ended {
        driver.wait();
    } else {
        driver.kill();
    }
    (session, printed)
}

/// Every agent's rollout under the home, by path, read back.
fn rollouts(ws: &Workspace, session: &str) -> HashMap<String, Vec<RolloutItem>> {
    let mut found = HashMap::new();
    for agent in agents(ws, session) {
        let id = agent["id"].as_str().expect("id");
        let path = crate::store_lag::find_rollout(ws, id);
        let read = read_rollout(&path).expect("rollout reads back");
        found.insert(
            agent["path"].as_str().expect("path").to_string(),
            read.items().cloned().collect(),
        );
    }
    found
}

fn check_after_resume(ws: &Workspace, session: &str, printed: &Printed, label: &str) {
    let day_two = write_script(ws, "day2.json", &day_two());
    let resumed = ws
        .arbor()
        .args(["resume", session, "wait for all", "--json", "--script"])
        .arg(&day_two)
        .output()
        .expect("resume");
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{label}: {}",
        text(&resumed.stderr)
    );
    // Every mail printed before the kill is in the log.
    let log = crate::store_lag::find_log(ws, session);
    let logged: HashSet<String> = read_log(&log, 0)
        .expect("log")
        .lines
        .into_iter()
        .filter_map(|(line, _)| match line.item {
            RolloutItem::MailSent(mail) => Some(mail.id.to_string()),
            _ => None,
        })
        .collect();
    for id in &printed.mails {
        assert!(
            logged.contains(id),
            "{label}: printed mail {id} is not in the log"
        );
    }
    // Each is consumed exactly once, and every turn printed as completed is in its rollout.
    let all = rollouts(ws, session);
    let mut consumed: HashMap<String, usize> = HashMap::new();
    for items in all.values() {
        for item in items {
            if let RolloutItem::MailConsumed(c) = item {
                *consumed.entry(c.mail.id.to_string()).or_default() += 1;
            }
        }
    }
    assert!(
        consumed.values().all(|n| *n == 1),
        "{label}: a mail was consumed twice"
    );
    for id in &printed.mails {
        assert_eq!(
            consumed.get(id),
            Some(&1),
            "{label}: printed mail {id} never consumed"
        );
    }
    for (path, count) in &printed.completed {
        let in_rollout = all.get(path).map_or(0, |items| {
            items
                .iter()
                .filter(|i| matches!(i, RolloutItem::TurnCompleted(_)))
                .count()
        });
        assert!(
            in_rollout >= *count,
            "{label}: {path} lost a completed turn"
        );
    }
    // Nothing is owed a turn any more: no agent holds unread mail, none is active.
    let list = agents(ws, session);
    for agent in &list {
        assert_eq!(agent["unread"], 0, "{label}: {agent}");
        assert!(
            agent["status"].get("completed").is_some()
                || agent["status"].get("interrupted").is_some(),
            "{label}: {agent}"
        );
    }
    let doctor = ws.run(&["doctor"]);
    assert!(doctor.status.success(), "{label}: {}", text(&doctor.stdout));
    let rebuilt = ws.run(&["doctor", "--rebuild"]);
    assert!(
        rebuilt.status.success(),
        "{label}: {}",
        text(&rebuilt.stderr)
    );
    assert_eq!(
        agents(ws, session),
        list,
        "{label}: the rebuilt store differs"
    );
}

/// Kills per workload.
const KILLS: u64 = 16;

#[test]
fn sigkill_at_random_points_of_a_fan_out_loses_nothing_printed() {
    let mut rng = Seeded::new(0x5eed_f00d);
    for round in 0..KILLS {
        let ws = Workspace::new();
        let script = write_script(&ws, "fan_out.json", &fan_out(200));
        let kill_after = 1 + rng.below(2_400);
        let (session, printed) = run_and_kill(
            &ws,
            &script,
            &["--max-running", "200", "--max-resident", "200"],
            kill_after,
        );
        check_after_resume(
            &ws,
            &session,
            &printed,
            &format!("fan-out round {round}, kill after {kill_after} events"),
        );
    }
}

#[test]
fn sigkill_at_random_points_of_a_rally_loses_nothing_printed() {
    let mut rng = Seeded::new(0x00ba_110f_5eed);
    for round in 0..KILLS {
        let ws = Workspace::new();
        let script = write_script(&ws, "rally.json", &rally(2_000));
        let kill_after = 1 + rng.below(20_000);
        let (session, printed) = run_and_kill(&ws, &script, &[], kill_after);
        check_after_resume(
            &ws,
            &session,
            &printed,
            &format!("rally round {round}, kill after {kill_after} events"),
        );
    }
}
