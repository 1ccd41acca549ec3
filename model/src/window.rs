//! Context windows: the known window of common model names, and the character-based estimate
//! of a request's size used until a provider has reported one.

use arbor_protocol::{ResponseItem, Thinking, ToolSpec};

/// The context window, in tokens, of a model arbor knows by name; `None` for any other name
/// (configure `model_context_window` for it). Names match by prefix after an optional
/// `provider/` part, so `openai/gpt-4o-2024-08-06` is `gpt-4o`'s.
pub fn known_context_window(model: &str) -> Option<u64> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    // Longest prefixes first: `gpt-4o` before `gpt-4`, `gpt-4.1` before `gpt-4`.
    const KNOWN: &[(&str, u64)] = &[
        ("gpt-5", 400_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4-32k", 32_768),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o4-mini", 200_000),
        ("o3", 200_000),
        ("o1", 200_000),
        ("codex-mini", 200_000),
        ("claude", 200_000),
        ("gemini-1.5", 1_048_576),
        ("gemini-2", 1_048_576),
        ("gemma-3-270m", 32_768),
        ("gemma-3", 131_072),
        ("llama-3.1", 131_072),
        ("llama-3.2", 131_072),
        ("llama-3.3", 131_072),
        ("qwen2.5", 32_768),
        ("mistral-large", 131_072),
        ("deepseek", 65_536),
    ];
    KNOWN
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

/// About four bytes per token, rounded up: the estimate of text no provider has measured.
pub fn estimate_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX)
}

/// The bytes of text in history items: message contents, call names and arguments, outputs,
/// reasoning (what the scripted model counts too).
pub fn item_bytes(items: &[ResponseItem]) -> usize {
    items
        .iter()
        .map(|item| match item {
            ResponseItem::Message { content, .. } => content.len(),
            ResponseItem::FunctionCall {
                name, arguments, ..
            } => name.len() + arguments.len(),
            ResponseItem::FunctionCallOutput { output, .. } => output.len(),
            ResponseItem::Reasoning {
                summary,
                encrypted_content,
                thinking,
            } => {
                let thinking = match thinking.as_deref() {
                    Some(Thinking::Thinking { signature }) => signature.len(),
                    Some(Thinking::RedactedThinking { data }) => data.len(),
                    None => 0,
                };
                summary.iter().map(String::len).sum::<usize>()
                    + encrypted_content.as_ref().map_or(0, String::len)
                    + thinking
            }
        })
        .sum()
}

/// The bytes of names, descriptions and parameter schemas of tool specs.
pub fn tool_bytes(tools: &[ToolSpec]) -> usize {
    tools
        .iter()
        .map(|tool| tool.name.len() + tool.description.len() + tool.parameters.to_string().len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_match_by_their_longest_prefix() {
        assert_eq!(known_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("gpt-4"), Some(8_192));
        assert_eq!(known_context_window("gpt-4.1-nano"), Some(1_047_576));
        assert_eq!(known_context_window("openai/GPT-5"), Some(400_000));
        assert_eq!(known_context_window("scripted"), None);
        assert_eq!(known_context_window("my-local-model"), None);
    }

    #[test]
    fn four_bytes_make_a_token() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(8), 2);
        assert_eq!(estimate_tokens(9), 3);
    }
}
