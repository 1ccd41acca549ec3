//! A tool call's result as the model reads it: text as it is, structured content as JSON,
//! images, audio and other blobs as a short placeholder. Read from the result's JSON (the
//! protocol's own shape), so any server's answer renders the same way. The caller bounds it.

use serde_json::Value;

/// The model-visible text of a `tools/call` result (its JSON form). `Err` when the server said
/// the call failed (`isError`), with the same rendering.
pub fn render(result: &Value) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        parts.push(render_block(block));
    }
    if let Some(structured) = result.get("structuredContent") {
        // Servers are asked to repeat structured content as text: say it once. It is repeated
        // when a text block is its JSON, or when it is one field holding the text.
        let texts: Vec<&str> = blocks
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        let wrapped = structured.as_object().is_some_and(|fields| {
            let mut values = fields.values();
            match (values.next(), values.next()) {
                (Some(Value::String(only)), None) => texts.join("\n") == *only,
                _ => false,
            }
        });
        let repeated = wrapped
            || texts.iter().any(|text| {
                serde_json::from_str::<Value>(text).is_ok_and(|parsed| &parsed == structured)
            });
        if !repeated {
            parts.push(format!("structured content: {structured}"));
        }
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        Err(format!("the tool reported an error: {text}"))
    } else {
        Ok(text)
    }
}

fn render_block(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    match field("type") {
        Some("text") => field("text").unwrap_or_default().to_string(),
        Some(kind @ ("image" | "audio")) => format!(
            "[{kind}: {}, {} bytes base64, not shown]",
            field("mimeType").unwrap_or("unknown type"),
            field("data").map_or(0, str::len)
        ),
        Some("resource") => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
            match (
                resource.get("text").and_then(Value::as_str),
                resource.get("blob").and_then(Value::as_str),
            ) {
                (Some(text), _) => format!("[resource {uri}]\n{text}"),
                (None, Some(blob)) => format!(
                    "[resource {uri}: {}, {} bytes base64, not shown]",
                    resource
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown type"),
                    blob.len()
                ),
                (None, None) => format!("[resource {uri}]"),
            }
        }
        Some("resource_link") => format!(
            "[resource link: {}{}]",
            field("uri").unwrap_or("?"),
            field("name").map(|n| format!(" ({n})")).unwrap_or_default()
        ),
        Some(other) => format!("[{other} content, not shown]"),
        None => "[content of no type, not shown]".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_structured_content_and_blobs() {
        let out = render(&json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAA", "mimeType": "application/gzip"}},
            {"type": "resource_link", "uri": "demo://1", "name": "one"},
        ], "structuredContent": {"temperature": 21}}));
        assert_eq!(
            out.expect("ok"),
            "hello\n[image: image/png, 8 bytes base64, not shown]\n[resource file:///a]\nbody\n\
             [resource file:///b: application/gzip, 4 bytes base64, not shown]\n\
             [resource link: demo://1 (one)]\nstructured content: {\"temperature\":21}"
        );
    }

    #[test]
    fn structured_content_repeated_as_text_is_said_once() {
        let out = render(&json!({"content": [{"type": "text", "text": "{\"a\": 1}"}],
            "structuredContent": {"a": 1}}));
        assert_eq!(out.expect("ok"), "{\"a\": 1}");
        let out = render(&json!({"content": [{"type": "text", "text": "[FILE] a"}],
            "structuredContent": {"content": "[FILE] a"}}));
        assert_eq!(out.expect("ok"), "[FILE] a");
    }

    #[test]
    fn errors_and_empty_results() {
        assert_eq!(
            render(
                &json!({"content": [{"type": "text", "text": "no such file"}], "isError": true})
            ),
            Err("the tool reported an error: no such file".to_string())
        );
        assert_eq!(
            render(&json!({"content": []})),
            Ok("(the tool returned no content)".to_string())
        );
    }
}
