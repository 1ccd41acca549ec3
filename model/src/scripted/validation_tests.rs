//! Loading scripts: the example of `cli.md`, and a table of bad scripts with their exact errors.

use std::path::Path;

use arbor_protocol::ResponseItem;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::ScriptedModel;
use super::tests::request;
use crate::ModelClient;

/// The example from `cli.md`, "Scripted model", verbatim.
const CLI_EXAMPLE: &str = r#"{
  "agents": [
    { "match": "/root",
      "responses": [
        [ {"call": "spawn_agent", "args": {"task_name": "worker_a", "agent_type": "worker", "message": "rename foo in a.txt"}},
          {"call": "spawn_agent", "args": {"task_name": "worker_b", "agent_type": "worker", "message": "rename foo in b.txt"}} ],
        [ {"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}} ],
        [ {"say": "both workers are done"} ]
      ] },
    { "match": "/root/worker_*",
      "responses": [
        { "delay_ms": 50, "items": [ {"call": "exec_command", "args": {"cmd": "sed -i s/foo/bar/g {{task_name}}.txt"}} ] },
        [ {"say": "done with {{input}}"} ]
      ] },
    { "match": "role:guardian", "repeat": true,
      "responses": [ [ {"say": "{\"outcome\": \"allow\", \"risk_level\": \"low\", \"rationale\": \"read-only\"}"} ] ] }
  ]
}"#;

/// Each item as JSON: a message as its text, a call as `{"call": NAME, "args": ARGS}` with the
/// arguments parsed, so key order does not matter.
fn summary(items: &[ResponseItem]) -> Vec<Value> {
    items
        .iter()
        .map(|item| match item {
            ResponseItem::Message { content, .. } => json!(content),
            ResponseItem::FunctionCall {
                name, arguments, ..
            } => {
                let args: Value = serde_json::from_str(arguments).expect("json arguments");
                json!({"call": name, "args": args})
            }
            other => panic!("unexpected item {other:?}"),
        })
        .collect()
}

/// What the model answers `path` with `input`, summarised.
async fn ask(
    model: &ScriptedModel,
    path: &str,
    role: &str,
    input: Vec<ResponseItem>,
) -> Vec<Value> {
    let (events, _rx) = mpsc::unbounded_channel();
    let response = model
        .respond(&request(path, role, input), &events)
        .await
        .expect(path);
    summary(&response.items)
}

#[tokio::test(start_paused = true)]
async fn the_cli_example_loads_and_plays() {
    let model = ScriptedModel::from_json(CLI_EXAMPLE).expect("the documented example is valid");
    assert_eq!(
        ask(&model, "/root", "default", Vec::new()).await,
        [
            json!({"call": "spawn_agent", "args": {"task_name": "worker_a", "agent_type": "worker", "message": "rename foo in a.txt"}}),
            json!({"call": "spawn_agent", "args": {"task_name": "worker_b", "agent_type": "worker", "message": "rename foo in b.txt"}}),
        ]
    );
    assert_eq!(
        ask(&model, "/root/worker_b", "worker", Vec::new()).await,
        [json!({"call": "exec_command", "args": {"cmd": "sed -i s/foo/bar/g worker_b.txt"}})]
    );
    let task = ResponseItem::Message {
        role: "user".to_string(),
        content: "Message Type: NEW_TASK\nTask name: /root/worker_b\nSender: /root\nPayload:\n\
                  rename foo in b.txt"
            .to_string(),
    };
    assert_eq!(
        ask(&model, "/root/worker_b", "worker", vec![task]).await,
        [json!("done with rename foo in b.txt")]
    );
    assert_eq!(
        ask(&model, "/root", "default", Vec::new()).await,
        [json!({"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}})]
    );
    for _ in 0..3 {
        assert_eq!(
            ask(&model, "/root/guardian", "guardian", Vec::new()).await,
            [json!(
                r#"{"outcome": "allow", "risk_level": "low", "rationale": "read-only"}"#
            )]
        );
    }
    assert_eq!(
        ask(&model, "/root", "default", Vec::new()).await,
        [json!("both workers are done")]
    );
}

fn check(script: &str, expect: &str) {
    match ScriptedModel::from_json(script) {
        Ok(_) => panic!("accepted: {script}"),
        Err(error) => assert_eq!(error.to_string(), expect, "{script}"),
    }
}

const SHAPE: &str =
    r#"unknown item shape; expected {"say": TEXT} or {"call": NAME, "args": {...}}"#;
const MATCH_FORMS: &str =
    "expected an agent path such as /root/worker_a, a glob such as /root/worker_*, or role:NAME";
const PLACEHOLDERS: &str =
    "expected {{path}}, {{task_name}}, {{nickname}}, {{role}}, {{input}} or {{last_output}}";

/// A script whose first entry matches `/root` and has the one response `response`.
fn with_response(response: &str) -> String {
    format!(r#"{{"agents": [{{"match": "/root", "responses": [{response}]}}]}}"#)
}

/// A script whose first entry matches `/root` and has one response with the one item `item`.
fn with_item(item: &str) -> String {
    with_response(&format!("[{item}]"))
}

#[test]
fn bad_documents_are_refused_at_the_top() {
    check(
        "",
        "script: invalid json at line 1 column 0: EOF while parsing a value",
    );
    check(
        "{\n  \"agents\": [],\n}",
        "script: invalid json at line 3 column 1: trailing comma",
    );
    check("[]", r#"script: $: expected an object with "agents""#);
    check("{}", r#"script: $: expected an object with "agents""#);
    check(
        r#"{"agents": [], "agent": 1}"#,
        r#"script: $: unknown field "agent"; expected only "agents""#,
    );
    check(
        r#"{"agents": {}}"#,
        "script: $.agents: expected an array of entries",
    );
    check(
        r#"{"agents": []}"#,
        "script: $.agents: expected at least one entry",
    );
}

#[test]
fn bad_entries_name_their_index() {
    let entry = r#"{"match": "/root", "responses": [[]]}"#;
    check(
        r#"{"agents": [1]}"#,
        r#"script: $.agents[0]: expected an object with "match" and "responses""#,
    );
    check(
        &format!(r#"{{"agents": [{entry}, {entry}, {{"match": "/root", "respones": []}}]}}"#),
        r#"script: $.agents[2]: unknown field "respones"; expected "match", "responses" or "repeat""#,
    );
    check(
        r#"{"agents": [{"responses": [[]]}]}"#,
        r#"script: $.agents[0]: missing field "match""#,
    );
    check(
        r#"{"agents": [{"match": "/root"}]}"#,
        r#"script: $.agents[0]: missing field "responses""#,
    );
    check(
        r#"{"agents": [{"match": ["/root"], "responses": [[]]}]}"#,
        "script: $.agents[0].match: expected a string",
    );
    check(
        r#"{"agents": [{"match": "/x", "responses": [[]]}]}"#,
        &format!(
            r#"script: $.agents[0].match: "/x" is not an agent path (agent path must start with /root); {MATCH_FORMS}"#
        ),
    );
    check(
        r#"{"agents": [{"match": "/root/Worker_*", "responses": [[]]}]}"#,
        &format!(
            r#"script: $.agents[0].match: "/root/Worker_*" is not an agent path (agent_name must use only lowercase letters, digits, and underscores); {MATCH_FORMS}"#
        ),
    );
    check(
        r#"{"agents": [{"match": "/root/*/", "responses": [[]]}]}"#,
        &format!(
            r#"script: $.agents[0].match: "/root/*/" is not an agent path (agent path must not end with `/`); {MATCH_FORMS}"#
        ),
    );
    check(
        r#"{"agents": [{"match": "role:", "responses": [[]]}]}"#,
        r#"script: $.agents[0].match: expected a role name after "role:""#,
    );
    check(
        r#"{"agents": [{"match": "/root", "repeat": "yes", "responses": [[]]}]}"#,
        "script: $.agents[0].repeat: expected a boolean",
    );
    check(
        r#"{"agents": [{"match": "/root", "responses": {}}]}"#,
        "script: $.agents[0].responses: expected an array of responses",
    );
    check(
        r#"{"agents": [{"match": "/root", "responses": []}]}"#,
        "script: $.agents[0].responses: expected at least one response",
    );
}

#[test]
fn bad_responses_name_their_position() {
    check(
        &with_response(r#""hello""#),
        r#"script: $.agents[0].responses[0]: expected an array of items or {"items": [...], "delay_ms": N, "usage": {...}}"#,
    );
    check(
        &with_response(r#"{"items": [], "delay": 5}"#),
        r#"script: $.agents[0].responses[0]: unknown field "delay"; expected "items", "delay_ms" or "usage""#,
    );
    check(
        &with_response(r#"{"delay_ms": 5}"#),
        r#"script: $.agents[0].responses[0]: missing field "items""#,
    );
    check(
        &with_response(r#"{"items": {}}"#),
        "script: $.agents[0].responses[0].items: expected an array of items",
    );
    for delay in ["-1", "1.5", r#""50""#, "null"] {
        check(
            &with_response(&format!(r#"{{"items": [], "delay_ms": {delay}}}"#)),
            "script: $.agents[0].responses[0].delay_ms: expected a non-negative integer",
        );
    }
}

#[test]
fn bad_usage_names_its_position() {
    let at = "script: $.agents[0].responses[0].usage";
    let usage = |usage: &str| with_response(&format!(r#"{{"items": [], "usage": {usage}}}"#));
    check(
        &usage("5"),
        &format!(
            r#"{at}: expected {{"input_tokens": N, "output_tokens": N, "cached_input_tokens": N}}"#
        ),
    );
    check(
        &usage(r#"{"output_tokens": 1}"#),
        &format!(r#"{at}: missing field "input_tokens""#),
    );
    check(
        &usage(r#"{"input_tokens": 1, "output_tokens": -1}"#),
        &format!("{at}.output_tokens: expected a non-negative integer"),
    );
    check(
        &usage(r#"{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}"#),
        &format!(
            r#"{at}: unknown field "total_tokens"; expected "input_tokens", "output_tokens" or "cached_input_tokens""#
        ),
    );
    check(
        &usage(r#"{"input_tokens": 1, "output_tokens": 1, "cached_input_tokens": 2}"#),
        &format!("{at}.cached_input_tokens: must not be more than input_tokens"),
    );
}

#[test]
fn bad_items_name_their_position() {
    check(
        r#"{"agents": [
            {"match": "/root", "responses": [[]]},
            {"match": "/root/*", "responses": [[{"say": "a"}, {"say": "b"}, {"sya": "c"}]]}
        ]}"#,
        &format!("script: $.agents[1].responses[0][2]: {SHAPE}"),
    );
    check(
        &with_response(r#"{"items": [{"say": "a"}, "b"]}"#),
        &format!("script: $.agents[0].responses[0].items[1]: {SHAPE}"),
    );
    check(
        &with_item(r#"{"say": "a", "call": "f"}"#),
        &format!("script: $.agents[0].responses[0][0]: {SHAPE}"),
    );
    check(
        &with_item(r#"{"say": 1}"#),
        "script: $.agents[0].responses[0][0].say: expected a string",
    );
    check(
        &with_item(r#"{"say": "a", "args": {}}"#),
        r#"script: $.agents[0].responses[0][0]: unknown field "args"; expected only "say""#,
    );
    check(
        &with_item(r#"{"call": ""}"#),
        "script: $.agents[0].responses[0][0].call: expected a tool name (a non-empty string)",
    );
    check(
        &with_item(r#"{"call": "f", "arg": {}}"#),
        r#"script: $.agents[0].responses[0][0]: unknown field "arg"; expected "call" or "args""#,
    );
    check(
        &with_item(r#"{"call": "f", "args": ["x"]}"#),
        "script: $.agents[0].responses[0][0].args: expected an object",
    );
}

#[test]
fn unknown_placeholders_are_refused_where_they_are() {
    check(
        &with_item(r#"{"say": "done with {{inputs}}"}"#),
        &format!(
            "script: $.agents[0].responses[0][0].say: unknown placeholder {{{{inputs}}}}; {PLACEHOLDERS}"
        ),
    );
    check(
        &with_response(r#"{"items": [{"call": "f", "args": {"a b": [1, {"c": "{{ x }}"}]}}]}"#),
        &format!(
            r#"script: $.agents[0].responses[0].items[0].args["a b"][1].c: unknown placeholder {{{{x}}}}; {PLACEHOLDERS}"#
        ),
    );
}

#[test]
fn good_scripts_accept_the_optional_forms() {
    let script = r#"{"agents": [
        {"match": "/root", "repeat": false, "responses": [[], {"items": []}, {"items": [], "delay_ms": 0}]},
        {"match": "/root/*/w_*", "responses": [[{"call": "f"}, {"call": "g", "args": {}}]]},
        {"match": "role:worker", "responses": [[{"say": "{{ input }} {\"json\": {}} {{}}"}]]}
    ]}"#;
    assert!(ScriptedModel::from_json(script).is_ok());
}

#[test]
fn loading_names_the_file() {
    let missing = Path::new("/nonexistent/arbor/s.json");
    let error = ScriptedModel::load(missing).expect_err("missing");
    assert!(
        error
            .to_string()
            .starts_with("script /nonexistent/arbor/s.json: cannot read the file: "),
        "{error}"
    );

    let dir = std::env::temp_dir().join(format!("arbor-scripted-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("s.json");
    std::fs::write(&file, with_item(r#"{"sya": "x"}"#)).expect("write");
    let error = ScriptedModel::load(&file).expect_err("bad item");
    assert_eq!(
        error.to_string(),
        format!(
            "script {}: $.agents[0].responses[0][0]: {SHAPE}",
            file.display()
        )
    );
    std::fs::write(&file, CLI_EXAMPLE).expect("write");
    assert!(ScriptedModel::load(&file).is_ok());
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn calls_are_checked_against_the_tools_with_the_path_of_the_mistake() {
    let spec = |name: &str, args: Value| arbor_protocol::ToolSpec {
        name: name.to_string(),
        description: String::new(),
        parameters: json!({"type": "object", "properties": args}),
    };
    let specs = [
        spec("spawn_agent", json!({"task_name": {}, "message": {}})),
        spec("list_agents", json!({})),
    ];
    let mcp = |name: &str| name.starts_with("mcp__fs__");
    let tools = super::ToolCatalog {
        specs: &specs,
        other: &mcp,
    };
    let refused = |script: &str| {
        ScriptedModel::from_json_checked(script, &tools)
            .expect_err("refused")
            .to_string()
    };
    assert_eq!(
        refused(&with_response(
            r#"{"items": [{"say": "x"}, {"call": "spawn_agnet", "args": {}}]}"#
        )),
        "script: $.agents[0].responses[0].items[1].call: unknown tool \"spawn_agnet\"; expected \
         \"spawn_agent\" or \"list_agents\", or mcp__<server>__<tool> of a configured MCP server"
    );
    assert_eq!(
        refused(&with_item(
            r#"{"call": "spawn_agent", "args": {"task_name": "a", "task": "b"}}"#
        )),
        "script: $.agents[0].responses[0][0].args.task: unknown argument \"task\" of \
         spawn_agent; expected \"message\" or \"task_name\""
    );
    assert_eq!(
        refused(&with_item(
            r#"{"call": "list_agents", "args": {"all": true}}"#
        )),
        "script: $.agents[0].responses[0][0].args.all: unknown argument \"all\": list_agents \
         takes none"
    );
    // Known tools, and the names the caller checks elsewhere, pass.
    let fine = with_item(r#"{"call": "spawn_agent", "args": {"task_name": "a", "message": "b"}}"#);
    assert!(ScriptedModel::from_json_checked(&fine, &tools).is_ok());
    let fine = with_item(r#"{"call": "mcp__fs__read", "args": {"anything": 1}}"#);
    assert!(ScriptedModel::from_json_checked(&fine, &tools).is_ok());
    // Unchecked loading stays as it was.
    assert!(ScriptedModel::from_json(&with_item(r#"{"call": "nope"}"#)).is_ok());
}
