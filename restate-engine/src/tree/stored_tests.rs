//! A tree whose agents are stored under their own keys and loaded as operations miss them
//! decides as one held whole: the same operations on both give the same replies and effects,
//! and the stored one reads only what each operation touches.

use std::collections::HashMap;

use arbor_protocol::{AgentPath, AgentStatus, MailId, ThreadId};
use serde_json::Value;

use super::{Effect, Entry, Fresh, Misses, Tree};
use crate::wire::{
    CloseRequest, Input, MailRequest, SessionConfig, SpawnRequest, TurnEnded, TurnOutcome,
    WaitRequest,
};

/// The keys a `Session` object would hold: the tree's small part, the nicknames drawn, each
/// agent, its children, thread ids.
#[derive(Default)]
struct Store {
    keys: HashMap<String, Value>,
}

impl Store {
    fn save(&mut self, tree: &Tree) {
        self.keys.insert("tree".into(), json(tree));
        self.keys.insert("nicknames".into(), json(&tree.nicknames));
        for (path, children) in tree.agents.changed_children() {
            self.keys.insert(format!("children{path}"), json(children));
        }
        for entry in tree.agents.changed() {
            self.keys
                .insert(format!("agent{}", entry.path), json(entry));
            self.keys
                .insert(format!("thread{}", entry.thread_id), json(&entry.path));
        }
    }

    /// The tree's small part and the nicknames drawn, no agent loaded.
    fn tree(&self) -> Tree {
        let mut tree: Tree = serde_json::from_value(self.keys["tree"].clone()).expect("tree");
        tree.nicknames = serde_json::from_value(self.keys["nicknames"].clone()).expect("nicknames");
        tree
    }

    /// Loads `misses` into `tree`; how many agents that read.
    fn load(&self, tree: &mut Tree, misses: Misses) -> usize {
        for thread in misses.threads {
            let path = self
                .keys
                .get(&format!("thread{thread}"))
                .map(|value| serde_json::from_value(value.clone()).expect("path"));
            tree.agents.load_thread(thread, path);
        }
        for path in misses.children {
            let children = self
                .keys
                .get(&format!("children{path}"))
                .map(|value| serde_json::from_value(value.clone()).expect("children"))
                .unwrap_or_default();
            tree.agents.load_children(path, children);
        }
        let read = misses.paths.len();
        for path in misses.paths {
            let entry: Option<Entry> = self
                .keys
                .get(&format!("agent{path}"))
                .map(|value| serde_json::from_value(value.clone()).expect("entry"));
            tree.agents.load(path, entry);
        }
        read
    }
}

fn json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("json")
}

/// The same session held whole and stored apart.
struct Twin {
    whole: Tree,
    store: Store,
    /// How many agents the last operation read from the store.
    read: usize,
}

fn path(text: &str) -> AgentPath {
    AgentPath::parse(text).expect("path")
}

fn fresh(n: u8) -> Fresh {
    Fresh {
        thread_id: ThreadId::new().as_string(),
        mail_id: MailId::new().to_string(),
        now_ms: i64::from(n),
    }
}

impl Twin {
    fn start(config: SessionConfig) -> Self {
        let session = ThreadId::new().as_string();
        let (whole, _) = Tree::start(&session, "task".into(), config, &fresh(0));
        // The store starts as the session's first handler leaves it: the root under its key.
        let mut store = Store::default();
        store.save(&whole);
        Self {
            whole,
            store,
            read: 0,
        }
    }

    /// Runs `op` on both; their replies and effects must agree.
    fn op<R: PartialEq + std::fmt::Debug>(
        &mut self,
        op: impl Fn(&mut Tree, &Fresh) -> (R, Vec<Effect>),
    ) -> (R, Vec<Effect>) {
        let fresh = fresh(1);
        let whole = op(&mut self.whole, &fresh);
        let mut base = self.store.tree();
        self.read = 0;
        let stored = loop {
            let mut tree = base.clone();
            let answer = op(&mut tree, &fresh);
            let misses = tree.agents.take_misses();
            if misses.is_empty() {
                self.store.save(&tree);
                break answer;
            }
            self.read += self.store.load(&mut base, misses);
        };
        assert_eq!(whole, stored, "held whole and stored apart disagree");
        whole
    }
}

fn spawn(twin: &mut Twin, caller: &'static str, name: &'static str) {
    let (reply, _) = twin.op(|tree, fresh| {
        let request = SpawnRequest {
            caller: path(caller),
            task_name: name.into(),
            message: format!("do {name}"),
            agent_type: None,
            fresh: None,
        };
        tree.spawn(&request, fresh)
    });
    reply.expect("spawn");
}

fn drain(twin: &mut Twin, at: &'static str) {
    // The inbox's mail, as the engine reads it from the inbox's keys.
    let inputs: Vec<Input> = twin
        .whole
        .mails
        .get(&path(at))
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mail| Input::Mail { mail })
        .collect();
    twin.op(|tree, _| ((), tree.drained(&path(at), &inputs, true)));
}

fn end(twin: &mut Twin, at: &'static str) -> Vec<Effect> {
    twin.op(|tree, fresh| {
        let ended = TurnEnded {
            path: path(at),
            outcome: TurnOutcome::Completed {
                last_message: Some(format!("{at} done")),
            },
            events: Vec::new(),
            fresh: None,
        };
        ((), tree.turn_ended(&ended, fresh))
    })
    .1
}

#[test]
fn a_tree_stored_apart_decides_as_one_held_whole_and_reads_only_what_it_touches() {
    let mut config = SessionConfig::new("/w");
    config.max_depth = 2;
    let mut twin = Twin::start(config);
    drain(&mut twin, "/root");
    for name in ["a", "b", "c", "d"] {
        spawn(&mut twin, "/root", name);
    }
    spawn(&mut twin, "/root/a", "deep");
    // A wait for all the root's children, by default targets.
    twin.op(|tree, _| {
        tree.wait(&WaitRequest {
            caller: AgentPath::root(),
            targets: Vec::new(),
            all: true,
            awakeable: "all".into(),
            unread_from: Vec::new(),
        })
    });
    // A child's turn ends: the child and its parent are what it reads, not its siblings.
    drain(&mut twin, "/root/b");
    end(&mut twin, "/root/b");
    assert!(twin.read <= 2, "read {} agents to end one turn", twin.read);
    // Mail by thread id, and a follow-up that wakes an idle agent.
    let (sent, _) = twin.op(|tree, fresh| {
        let b = tree
            .agents
            .get(&path("/root/b"))
            .map(|entry| entry.thread_id.clone())
            .unwrap_or_default();
        tree.mail(
            &MailRequest {
                author: path("/root/c"),
                target: b,
                content: "again".into(),
                followup: true,
            },
            fresh,
        )
    });
    sent.expect("mail by thread id");
    drain(&mut twin, "/root/b");
    end(&mut twin, "/root/b");
    // Closing a branch closes what is under it.
    let (closed, _) = twin.op(|tree, _| {
        tree.close(&CloseRequest {
            caller: AgentPath::root(),
            target: "a".into(),
        })
    });
    closed.expect("close");
    assert_eq!(
        twin.whole.agents[&path("/root/a/deep")].status,
        AgentStatus::Closed
    );
    for name in ["/root/c", "/root/d"] {
        drain(&mut twin, name);
        end(&mut twin, name);
    }
    // Every child is idle: the wait is over; the root takes the results, and its turn's end
    // ends the run.
    assert!(!twin.whole.waits.contains_key(&AgentPath::root()));
    drain(&mut twin, "/root");
    let effects = end(&mut twin, "/root");
    assert!(twin.whole.completed, "{effects:#?}");
    assert!(!twin.store.tree().busy());
}
