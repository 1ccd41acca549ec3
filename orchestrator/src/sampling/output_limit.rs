//! Responses cut at the output limit (`max_output_tokens`, or the server's own): what the model
//! is told after one, and when a turn stops trying.
//!
//! A cut response keeps what it holds: its text stays in history as written, and its complete
//! calls run (a call cut mid-way fails to parse and is told so, without running). Then a user
//! message says the response was cut, and the turn goes on. A model that is cut again and again
//! without making a call is stopped after [`MAX_CUT_IN_A_ROW`] such responses.

/// Cut responses without a tool call, one after another, after which the turn ends as errored.
pub const MAX_CUT_IN_A_ROW: u32 = 3;

/// The limit as the model and the user read it.
fn limit_text(limit: Option<u32>) -> String {
    match limit {
        Some(tokens) => format!("the output limit of {tokens} tokens (max_output_tokens)"),
        None => "the server's output limit".to_string(),
    }
}

/// What the model reads after a response that `limit` cut; `had_calls` when it made calls.
pub fn note(limit: Option<u32>, had_calls: bool) -> String {
    let limit = limit_text(limit);
    if had_calls {
        format!(
            "Your last response was cut at {limit}. Its complete tool calls ran and their \
             results are above; a call cut mid-way did not run. Go on, in shorter responses."
        )
    } else {
        format!(
            "Your last response was cut at {limit}: its text ends where it was cut. Go on from \
             there in a shorter response, or give your final answer."
        )
    }
}

/// The reason a turn ends with after [`MAX_CUT_IN_A_ROW`] cut responses.
pub fn gave_up(limit: Option<u32>) -> String {
    format!(
        "the model's response was cut at {} {MAX_CUT_IN_A_ROW} times in a row; raise \
         max_output_tokens or ask for shorter answers",
        limit_text(limit)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_texts_name_the_limit() {
        assert!(note(Some(256), true).contains("256 tokens (max_output_tokens)"));
        assert!(note(None, false).contains("the server's output limit"));
        assert_eq!(
            gave_up(Some(64)),
            "the model's response was cut at the output limit of 64 tokens (max_output_tokens) \
             3 times in a row; raise max_output_tokens or ask for shorter answers"
        );
    }
}
