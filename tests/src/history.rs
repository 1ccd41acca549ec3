//! Reading model histories in tests: mail as the model sees it, by payload.

use arbor_protocol::ResponseItem;

/// The payload of a model-visible mail (the text after its `Payload:` line); any other text as
/// it is.
pub fn payload(text: &str) -> &str {
    text.rsplit("Payload:\n").next().unwrap_or_default()
}

/// Each item of a history as text: a message by its payload, any other item in debug form.
pub fn texts(items: &[ResponseItem]) -> Vec<String> {
    items
        .iter()
        .map(|item| match item {
            ResponseItem::Message { content, .. } => payload(content).to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// The payloads of the mails of one type (`NEW_TASK`, `MESSAGE`, `FINAL_ANSWER`) in a history,
/// in order.
pub fn mail_payloads(items: &[ResponseItem], label: &str) -> Vec<String> {
    let prefix = format!("Message Type: {label}");
    items
        .iter()
        .filter_map(|item| match item {
            ResponseItem::Message { content, .. } if content.starts_with(&prefix) => {
                Some(payload(content).to_string())
            }
            _ => None,
        })
        .collect()
}
