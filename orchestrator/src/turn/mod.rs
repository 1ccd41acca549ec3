//! An agent's task: it waits for the session to grant it a turn, runs the turn (`body.rs`:
//! take input, ask the model, run the tool calls, repeat until a final answer) and ends it
//! (`end.rs`), until its token or its task's token is cancelled. Mail handed to it between
//! turns waits in its inbox for the next one.

mod body;
mod end;

use std::sync::Arc;

use arbor_mailbox::Inbox;
use arbor_protocol::{AbortKind, AgentStatus, Event, RolloutItem, TurnStarted};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentMsg, Grant, TurnControl, TurnSpan};
use crate::ctx::Ctx;
use crate::worktrees::merge::turn_end_note;
use arbor_tree::{Input, TurnEnd};
use body::Turn;
use end::{Outcome, finish_turn};

/// The task of one resident agent. Boxed, because tools the turn runs may make agents (whose
/// tasks are this function).
pub fn agent_task(
    ctx: Arc<Ctx>,
    agent: Arc<Agent>,
    rx: mpsc::UnboundedReceiver<AgentMsg>,
    task: CancellationToken,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(agent_loop(ctx, agent, rx, task))
}

async fn agent_loop(
    ctx: Arc<Ctx>,
    agent: Arc<Agent>,
    mut rx: mpsc::UnboundedReceiver<AgentMsg>,
    task: CancellationToken,
) {
    let mut inbox = Inbox::new();
    loop {
        tokio::select! {
            biased;
            () = task.cancelled() => break,
            message = rx.recv() => match message {
                Some(AgentMsg::Mail(mail)) => inbox.arrive(*mail),
                Some(AgentMsg::Go(grant)) => {
                    let Grant {
                        control,
                        input,
                        mails,
                    } = *grant;
                    for mail in mails {
                        inbox.arrive(mail);
                    }
                    // Boxed: an idle agent's task then holds only this loop, not the
                    // largest state a turn can reach (thousands of agents wait at once).
                    Box::pin(run_turn(&ctx, &agent, &mut rx, &mut inbox, control, input)).await;
                }
                None => break,
            },
        }
    }
    if !agent.token.is_cancelled() {
        // Evicted (only ever while idle): nothing was granted that has not ended.
        return;
    }
    // Closed or stopping: nothing its commands started may outlive it.
    agent.live.kill_all();
    // A turn granted but never started ends now, unstarted.
    rx.close();
    while let Ok(message) = rx.try_recv() {
        if let AgentMsg::Go(grant) = message {
            let control = grant.control;
            ctx.session.send(Input::TurnEnded {
                agent: agent.id(),
                end: TurnEnd {
                    status: AgentStatus::Interrupted(control.reason()),
                    completed: None,
                    result: None,
                    started: false,
                },
            });
        }
    }
}

async fn run_turn(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    rx: &mut mpsc::UnboundedReceiver<AgentMsg>,
    inbox: &mut Inbox,
    control: Arc<TurnControl>,
    input: Vec<arbor_protocol::ResponseItem>,
) {
    let number = {
        let mut runtime = agent.runtime();
        runtime.turn_no += 1;
        runtime.last_model_error = None;
        let start = runtime.history.len();
        runtime.turns.push(TurnSpan {
            start,
            final_answer: None,
        });
        runtime.turn_no
    };
    let first = inbox.start_turn();
    let outcome = match agent.record([RolloutItem::TurnStarted(TurnStarted { turn: number })]) {
        Err(err) => Outcome::Aborted(AbortKind::Errored, err.to_string()),
        Ok(_) => {
            ctx.events.emit(Event::TurnStarted {
                path: agent.path().clone(),
            });
            ctx.session.send(Input::Started { agent: agent.id() });
            let turn = Turn {
                ctx,
                agent,
                rx: &mut *rx,
                inbox: &mut *inbox,
            };
            tokio::select! {
                outcome = body::turn_body(turn, input, first) => outcome,
                () = control.token.cancelled() => {
                    Outcome::Aborted(AbortKind::Interrupted, control.reason())
                }
            }
        }
    };
    inbox.end_turn();
    if matches!(outcome, Outcome::Aborted(AbortKind::Interrupted, _)) {
        // An interrupted turn leaves no process of its agent's running.
        agent.live.kill_all();
    }
    // A worktree agent's result ends with what it changed (and, with auto_merge, what merged);
    // the turn stays busy until that is known.
    let completed = matches!(outcome, Outcome::Completed(_));
    let note = turn_end_note(ctx, agent, completed).await;
    finish_turn(ctx, agent, number, outcome, note);
}
