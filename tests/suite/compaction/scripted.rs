//! Automatic compaction on the scripted model with usage figures: the threshold crossed, the
//! compaction request, the new window, and the same history after eviction and revival and
//! after a resume the next day.

use std::sync::Arc;

use arbor_model::ScriptedModel;
use arbor_orchestrator::config::RoleModel;
use arbor_orchestrator::{COMPACTION_PROMPT, Orchestrator, RunConfig, SUMMARY_HEADER};
use arbor_protocol::{AgentStatus, Event, MailKind, ResponseItem, RolloutItem};
use arbor_tests::{Session, texts};
use serde_json::{Value, json};

/// A worker with a 10 000-token window: compaction past 8 000.
fn small_window(config: &mut RunConfig) {
    config.role_models.insert(
        "worker".into(),
        RoleModel {
            model_context_window: Some(10_000),
            ..RoleModel::default()
        },
    );
}

fn script() -> Value {
    json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "step one"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "followup_task", "args": {"target": "w", "message": "step two"}}],
            [{"call": "wait_agent", "args": {"targets": ["w"], "mode": "all", "timeout_ms": 60000}}],
            [{"call": "spawn_agent", "args": {"task_name": "v", "agent_type": "worker", "message": "other work"}}],
            [{"call": "wait_agent", "args": {"targets": ["v"], "mode": "all", "timeout_ms": 60000}}],
            [{"call": "followup_task", "args": {"target": "w", "message": "step three"}}],
            [{"call": "wait_agent", "args": {"targets": ["w"], "mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/w", "responses": [
            // 9 010 tokens reported: the next request would pass 8 000.
            {"items": [{"say": "w did step one"}], "usage": {"input_tokens": 9000, "output_tokens": 10}},
            // The compaction request.
            [{"say": "SUMMARY: w did step one, step two is next"}],
            {"items": [{"say": "w did step two"}], "usage": {"input_tokens": 300, "output_tokens": 10}},
            [{"say": "w did step three"}]
        ]},
        {"match": "/root/v", "responses": [[{"say": "v done"}]]}
    ]})
}

fn summary() -> ResponseItem {
    ResponseItem::Message {
        role: "user".into(),
        content: format!("{SUMMARY_HEADER}SUMMARY: w did step one, step two is next"),
    }
}

#[tokio::test]
async fn an_agent_past_the_threshold_compacts_and_its_revived_and_resumed_requests_match() {
    let mut s = Session::new(script(), |c| {
        c.max_resident = 1;
        small_window(c);
    })
    .await;
    s.run("go").await;
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Completed(Some("done".into()))
    );
    let w = Session::path("/root/w");
    let requests = s.model.requests_for(&w);
    assert_eq!(
        requests.len(),
        4,
        "turn one, compaction, turn two, turn three"
    );

    // The compaction request: the whole history, then the fixed prompt; no tools.
    let compaction = &requests[1];
    assert!(compaction.tools.is_empty());
    assert!(!compaction.parallel_tool_calls);
    assert_eq!(compaction.instructions, requests[0].instructions);
    assert_eq!(
        texts(&compaction.input),
        ["step one", "w did step one", "step two", COMPACTION_PROMPT]
    );
    assert_eq!(
        &compaction.input[..requests[0].input.len()],
        &requests[0].input[..]
    );

    // The next request starts with the summary, then the recent inputs.
    let after = &requests[2];
    assert_eq!(after.input[0], summary());
    assert_eq!(texts(&after.input[1..]), ["step one", "step two"]);
    assert_eq!(after.tools, requests[0].tools);

    // w was evicted by v and revived by step three: its request is the window, the answer
    // and the new mail; nothing of the old window came back.
    s.drain();
    let evicted = s
        .seen
        .iter()
        .any(|l| matches!(&l.event, Event::AgentEvicted { path } if *path == w));
    let revived = s
        .seen
        .iter()
        .any(|l| matches!(&l.event, Event::AgentRevived { path } if *path == w));
    assert!(evicted && revived, "w was evicted and revived");
    let revived_request = &requests[3];
    assert_eq!(
        &revived_request.input[..after.input.len()],
        &after.input[..]
    );
    assert_eq!(
        texts(&revived_request.input[after.input.len()..]),
        ["w did step two", "step three"]
    );

    // The same run without eviction sends exactly the same request.
    let mut live = Session::new(script(), small_window).await;
    live.run("go").await;
    let live_requests = live.model.requests_for(&w);
    assert_eq!(live_requests.len(), 4);
    assert_eq!(live_requests[3].input, revived_request.input);
    assert_eq!(live_requests[2].input, after.input);

    // One compaction, labelled in the usage events, and in the tree's totals.
    let compactions: Vec<(u64, u64)> = s
        .seen
        .iter()
        .filter_map(|l| match &l.event {
            Event::Usage {
                path,
                usage,
                tree_total,
                ..
            } if *path == w && usage.compaction_tokens > 0 => {
                Some((usage.compaction_tokens, tree_total.compaction_tokens))
            }
            _ => None,
        })
        .collect();
    assert_eq!(compactions.len(), 1, "{compactions:?}");
    assert_eq!(compactions[0].0, compactions[0].1);
    let compacted = s
        .seen
        .iter()
        .filter(|l| matches!(&l.event, Event::AgentCompacted { path, .. } if *path == w))
        .count();
    assert_eq!(compacted, 1);

    // The rollout kept everything: the first window's lines are still there, then the
    // compaction's usage and the `compacted` line.
    let id = s.orch.agent(&w).await.expect("w").id;
    let rollout = arbor_rollout::read_rollout(
        &arbor_rollout::find_rollout(s.home.path(), id).expect("w's rollout"),
    )
    .expect("rollout");
    let items: Vec<&RolloutItem> = rollout.items().collect();
    let at = items
        .iter()
        .position(|item| matches!(item, RolloutItem::Compacted(_)))
        .expect("a compacted line");
    assert!(matches!(items[at - 1], RolloutItem::Usage(u) if u.usage.compaction_tokens > 0));
    assert!(items[..at].iter().any(|item| matches!(item,
        RolloutItem::ResponseItem(ResponseItem::Message { content, .. }) if content == "w did step one")));
    let session = s.orch.session_id().to_string();
    s.orch.shutdown("done").await;
    // The process ends: its lease goes with the orchestrator.
    let Session {
        orch, home, cwd, ..
    } = s;
    drop(orch);

    // The next day: a fresh process resumes the tree and w continues from its last window.
    let day_two =
        json!({"agents": [{"match": "/root/w", "responses": [[{"say": "w did step four"}]]}]});
    let model = Arc::new(ScriptedModel::from_json(&day_two.to_string()).expect("script"));
    let mut config = RunConfig::new(home.path().to_path_buf(), cwd.path().to_path_buf());
    small_window(&mut config);
    config.root_driven = false;
    let orch = resume_when_free(config, model.clone(), &session).await;
    orch.send_from_user("/root/w", MailKind::Followup, "step four")
        .await
        .expect("followup");
    orch.wait_quiescent().await;
    let day_two_requests = model.requests();
    assert_eq!(day_two_requests.len(), 1);
    let resumed = &day_two_requests[0].input;
    assert_eq!(
        &resumed[..revived_request.input.len()],
        &revived_request.input[..]
    );
    assert_eq!(
        texts(&resumed[revived_request.input.len()..]),
        ["w did step three", "step four"]
    );
    orch.shutdown("done").await;
}

/// Resumes `session` once its lease is free. The lease of the day-one orchestrator is dropped
/// with it, but a command another test of this binary forks at that moment holds a copy of
/// every descriptor until it execs: a bounded poll rides that out.
async fn resume_when_free(
    config: RunConfig,
    model: Arc<ScriptedModel>,
    session: &str,
) -> Orchestrator {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match Orchestrator::resume(config.clone(), model.clone(), session).await {
            Ok((orch, _)) => return orch,
            Err(arbor_orchestrator::OrchestratorError::Held { .. })
                if std::time::Instant::now() < deadline =>
            {
                tokio::task::yield_now().await
            }
            Err(err) => panic!("resume: {err}"),
        }
    }
}

#[tokio::test]
async fn a_compaction_that_fails_twice_errors_the_turn_and_one_failure_is_retried() {
    let call = json!([{"call": "list_agents", "args": {}}]);
    let script = |compaction_answers: Vec<Value>| {
        let mut responses = vec![
            json!({"items": [{"say": "first"}], "usage": {"input_tokens": 9500, "output_tokens": 10}}),
        ];
        responses.extend(compaction_answers);
        responses.push(json!([{"say": "second"}]));
        json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "one"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"call": "followup_task", "args": {"target": "w", "message": "two"}}],
                [{"call": "wait_agent", "args": {"targets": ["w"], "mode": "all", "timeout_ms": 60000}}],
                [{"say": "done"}]
            ]},
            {"match": "/root/w", "responses": responses}
        ]})
    };
    let w = Session::path("/root/w");

    // Two answers that are no summary: the turn errors, naming why.
    let mut s = Session::new(script(vec![call.clone(), call.clone()]), small_window).await;
    s.run("go").await;
    let status = s.orch.agent(&w).await.expect("w").status;
    assert_eq!(
        status,
        AgentStatus::Errored(
            "compaction failed: the model called a tool instead of writing a summary".into()
        )
    );
    assert_eq!(s.model.requests_for(&w).len(), 3, "one try and one retry");

    // One bad answer, then a summary: the retry compacts and the turn goes on.
    let mut s = Session::new(
        script(vec![call, json!([{"say": "the summary"}])]),
        small_window,
    )
    .await;
    s.run("go").await;
    let status = s.orch.agent(&w).await.expect("w").status;
    assert_eq!(status, AgentStatus::Completed(Some("second".into())));
    let requests = s.model.requests_for(&w);
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[3].input[0],
        ResponseItem::Message {
            role: "user".into(),
            content: format!("{SUMMARY_HEADER}the summary"),
        }
    );
}

#[tokio::test]
async fn fork_turns_after_a_compaction_copies_the_summary() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            {"items": [{"call": "list_agents", "args": {}}], "usage": {"input_tokens": 9500, "output_tokens": 10}},
            [{"say": "SUMMARY: listed the agents"}],
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "carry on", "fork_turns": "all"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/w", "responses": [[{"say": "w carried on"}]]}
    ]});
    let mut s = Session::new(script, |c| c.model_context_window = Some(10_000)).await;
    s.run("list, then delegate").await;
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Completed(Some("done".into()))
    );
    let child = s.model.requests_for(&Session::path("/root/w"));
    assert_eq!(child.len(), 1);
    // The forked turns: the summary and the recent input (user messages), then the task.
    assert_eq!(
        texts(&child[0].input),
        [
            format!("{SUMMARY_HEADER}SUMMARY: listed the agents"),
            "list, then delegate".to_string(),
            "carry on".to_string()
        ]
    );
}
