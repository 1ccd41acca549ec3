//! The `ModelClient` trait and its providers: the scripted model, the OpenAI Responses API and
//! Chat Completions, with retries and backoff.
