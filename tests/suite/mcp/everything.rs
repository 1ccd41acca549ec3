//! `@modelcontextprotocol/server-everything` from npm: its tools reach the model with their
//! schemas, structured results come back as JSON, an image as a placeholder, and a long-running
//! tool past its timeout ends cleanly while the server goes on answering.

use arbor_tests::Session;
use serde_json::json;

use super::stdio;

#[tokio::test]
async fn schemas_structured_results_and_a_long_tool_that_times_out() {
    let bin = arbor_tests::tools::npm_bin("mcp-server-everything");
    let server = stdio("everything", &bin.display().to_string(), &[], |raw| {
        raw.tool_timeout_ms = Some(1000);
    });
    let call = |name: &str, args: serde_json::Value| json!([{"call": name, "args": args}]);
    let script = json!({"agents": [{"match": "/root", "responses": [
        call("mcp__everything__get-sum", json!({"a": 2, "b": 40})),
        call("mcp__everything__get-structured-content", json!({"location": "Chicago"})),
        call("mcp__everything__get-tiny-image", json!({})),
        call("mcp__everything__trigger-long-running-operation", json!({"duration": 30, "steps": 3})),
        call("mcp__everything__echo", json!({"message": "still here"})),
        [{"say": "done"}]]}]});
    let mut s = Session::new(script, |config| config.mcp_servers = vec![server]).await;
    s.run("use the everything server").await;

    let request = &s.model.requests_for(&Session::path("/root"))[0];
    let sum = request
        .tools
        .iter()
        .find(|tool| tool.name == "mcp__everything__get-sum")
        .expect("get-sum offered");
    assert_eq!(sum.parameters["type"], "object");
    assert_eq!(sum.parameters["properties"]["a"]["type"], "number");
    assert_eq!(sum.parameters["required"], json!(["a", "b"]));
    // The built-in tools come first, in their stable order.
    assert_eq!(request.tools[0].name, "spawn_agent");

    let outputs: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .map(|(_, output)| output)
        .collect();
    assert!(outputs[0].contains("42"), "{}", outputs[0]);
    let weather: serde_json::Value = serde_json::from_str(&outputs[1]).expect("JSON");
    assert!(weather["temperature"].is_number(), "{}", outputs[1]);
    assert!(
        outputs[2].contains("[image: image/png, ")
            && outputs[2].contains("bytes base64, not shown]"),
        "{}",
        outputs[2]
    );
    assert!(
        outputs[2].len() < 1000,
        "an image is a placeholder: {}",
        outputs[2]
    );
    assert_eq!(
        outputs[3],
        "mcp server `everything` did not answer `trigger-long-running-operation` within 1000 ms (tool_timeout_ms); the call was cancelled"
    );
    assert_eq!(outputs[4], "Echo: still here");
}
