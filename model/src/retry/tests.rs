//! Backoff, server-given waits, and the retry loop with its events.

use std::sync::atomic::{AtomicU32, Ordering};

use tokio::sync::mpsc;

use super::*;

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(300),
    }
}

#[test]
fn backoff_doubles_with_jitter_and_stays_under_the_cap() {
    let policy = policy();
    for _ in 0..100 {
        for (attempt, full) in [(1, 100), (2, 200), (3, 300), (4, 300), (40, 300)] {
            let wait = policy.delay(attempt, None);
            let full = Duration::from_millis(full);
            assert!(
                wait >= full / 2 && wait < full,
                "attempt {attempt}: {wait:?}"
            );
        }
    }
}

#[test]
fn a_server_wish_is_honoured_up_to_the_limit() {
    let policy = policy();
    assert_eq!(
        policy.delay(1, Some(Duration::from_secs(7))),
        Duration::from_secs(7)
    );
    assert_eq!(policy.delay(1, Some(Duration::ZERO)), Duration::ZERO);
    let too_long = policy.delay(1, Some(MAX_RETRY_AFTER + Duration::from_secs(1)));
    assert!(too_long < Duration::from_millis(100), "{too_long:?}");
}

#[test]
fn retry_after_headers() {
    assert_eq!(retry_after(None, Some("7")), Some(Duration::from_secs(7)));
    assert_eq!(
        retry_after(None, Some(" 1.5 ")),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(
        retry_after(Some("250"), Some("7")),
        Some(Duration::from_millis(250))
    );
    assert_eq!(
        retry_after(Some("soon"), Some("2")),
        Some(Duration::from_secs(2))
    );
    assert_eq!(retry_after(None, Some("-1")), None);
    assert_eq!(retry_after(None, Some("whenever")), None);
    assert_eq!(retry_after(None, None), None);
    assert_eq!(
        retry_after(None, Some("Sun, 06 Nov 1994 08:49:37 GMT")),
        Some(Duration::ZERO),
        "a date in the past means now"
    );
    let later = Timestamp::from_millis(Timestamp::now().as_millis() + 30_000);
    let (y, mo, d) = later.date();
    let secs = later.as_millis().div_euclid(1000).rem_euclid(86_400);
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][mo as usize - 1];
    let date = format!(
        "Mon, {d:02} {month} {y} {:02}:{:02}:{:02} GMT",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    let wait = retry_after(None, Some(&date)).expect("a date");
    assert!(
        wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
        "{date}: {wait:?}"
    );
}

#[test]
fn http_dates() {
    assert_eq!(
        http_date("Sun, 06 Nov 1994 08:49:37 GMT").map(|t| t.to_string()),
        Some("1994-11-06T08:49:37.000Z".to_string())
    );
    assert_eq!(http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
    assert_eq!(http_date("Sun, 06 Nov 1994 08:49:37 PST"), None);
    assert_eq!(http_date("Sun, 06 Foo 1994 08:49:37 GMT"), None);
}

#[test]
fn waits_named_in_error_messages() {
    assert_eq!(
        try_again_in("Rate limit reached. Please try again in 1.5s. Visit ..."),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(
        try_again_in("please try again in 300ms"),
        Some(Duration::from_millis(300))
    );
    assert_eq!(try_again_in("try again in a while"), None);
    assert_eq!(try_again_in("try again in 3 minutes"), None);
    assert_eq!(try_again_in("no hint"), None);
}

fn retry(reason: &str, rate_limited: bool) -> Failure {
    Failure::Retry {
        reason: reason.to_string(),
        after: Some(Duration::from_millis(1)),
        rate_limited,
        answer: None,
    }
}

async fn run(failures: Vec<Failure>) -> (Result<ModelResponse, ModelError>, Vec<ModelEvent>, u32) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let calls = AtomicU32::new(0);
    let result = with_retries(&policy(), &tx, || {
        let n = calls.fetch_add(1, Ordering::SeqCst) as usize;
        let outcome = failures.get(n).cloned();
        async move { outcome.map_or_else(|| Ok(ModelResponse::default()), Err) }
    })
    .await;
    drop(tx);
    let mut seen = Vec::new();
    while let Some(event) = rx.recv().await {
        seen.push(event);
    }
    (result, seen, calls.load(Ordering::SeqCst))
}

#[tokio::test]
async fn retries_report_each_wait_then_succeed() {
    let (result, events, calls) = run(vec![retry("http 500: boom", false)]).await;
    assert_eq!(result, Ok(ModelResponse::default()));
    assert_eq!(calls, 2);
    assert_eq!(
        events,
        [ModelEvent::Retrying {
            reason: "http 500: boom (attempt 1 of 3)".to_string(),
            retry_in_ms: 1
        }]
    );
}

#[tokio::test]
async fn running_out_of_attempts_names_the_last_failure() {
    let failures = vec![retry("a", false), retry("b", false), retry("c", false)];
    let (result, events, calls) = run(failures).await;
    assert_eq!(
        result,
        Err(ModelError::Transport(
            "c (gave up after 3 attempts)".to_string()
        ))
    );
    assert_eq!((events.len(), calls), (2, 3));
    let limited = vec![retry("a", true), retry("b", true), retry("c", true)];
    assert_eq!(run(limited).await.0, Err(ModelError::RateLimited));
}

#[tokio::test]
async fn a_fatal_failure_ends_at_once() {
    let fatal = Failure::Fatal(ModelError::Http {
        status: 400,
        message: "bad".to_string(),
    });
    let (result, events, calls) = run(vec![fatal]).await;
    assert!(matches!(result, Err(ModelError::Http { status: 400, .. })));
    assert_eq!((events.len(), calls), (0, 1));
}

fn answer(status: Option<u16>, body: &str) -> Failure {
    Failure::Retry {
        reason: format!("http 500: {body}"),
        after: Some(Duration::from_millis(1)),
        rate_limited: false,
        answer: Some(Answer {
            status,
            body: body.to_string(),
            message: body.to_string(),
        }),
    }
}

#[tokio::test]
async fn the_same_error_answer_to_a_retry_ends_the_request() {
    let same = vec![answer(Some(500), "bad args"), answer(Some(500), "bad args")];
    let (result, events, calls) = run(same).await;
    assert_eq!(
        result,
        Err(ModelError::Http {
            status: 500,
            message: "bad args (the same answer to a retry; not retried again)".to_string()
        })
    );
    assert_eq!((events.len(), calls), (1, 2));
    let in_stream = vec![answer(None, "oops"), answer(None, "oops")];
    assert_eq!(
        run(in_stream).await.0,
        Err(ModelError::Failed(
            "oops (the same answer to a retry; not retried again)".to_string()
        ))
    );
    // Different answers, or the same one with another status, are retried as usual.
    let varying = vec![answer(Some(500), "a"), answer(Some(503), "a")];
    let (result, _, calls) = run(varying).await;
    assert_eq!((result, calls), (Ok(ModelResponse::default()), 3));
}
