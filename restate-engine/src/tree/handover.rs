//! The mail that wakes an agent, handed over with the wake. When an operation delivers mail
//! to an agent whose inbox held nothing before and then wakes it (a spawn's task, the root's
//! prompt, a result that makes an idle parent owe a turn), the inputs travel in `Agent/wake`
//! instead of the inbox, and their turn starts now: its first request takes them without a
//! call to the session. An agent whose inbox holds older inputs is woken plainly and drains
//! them at its first request, as every later request of a turn does.

use arbor_protocol::{AgentPath, AgentStatus, Event};

use super::{Effect, Tree};
use crate::wire::Input;

impl Tree {
    /// Rewrites `effects` so that each wake of an agent whose inbox held nothing before this
    /// operation (`stored` says whether it did) carries the inputs delivered to it ahead of
    /// the wake; those are taken (not unread any more) and its turn is started.
    pub fn hand_over(
        &mut self,
        effects: Vec<Effect>,
        stored: impl Fn(&AgentPath) -> bool,
    ) -> Vec<Effect> {
        let woken: Vec<AgentPath> = effects
            .iter()
            .filter_map(|effect| match effect {
                Effect::Wake(path) if !stored(path) => Some(path.clone()),
                _ => None,
            })
            .collect();
        if woken.is_empty() {
            return effects;
        }
        let mut out = Vec::with_capacity(effects.len());
        let mut held: Vec<(AgentPath, Vec<Input>)> = Vec::new();
        let mut handed: Vec<AgentPath> = Vec::new();
        for effect in effects {
            match effect {
                Effect::Deliver(path, input)
                    if woken.contains(&path) && !handed.contains(&path) =>
                {
                    match held.iter_mut().find(|(held, _)| *held == path) {
                        Some((_, inputs)) => inputs.push(input),
                        None => held.push((path, vec![input])),
                    }
                }
                Effect::Wake(path) if woken.contains(&path) && !handed.contains(&path) => {
                    let inputs = held
                        .iter()
                        .position(|(held, _)| *held == path)
                        .map(|at| held.remove(at).1)
                        .unwrap_or_default();
                    handed.push(path.clone());
                    if inputs.is_empty() {
                        out.push(Effect::Wake(path));
                        continue;
                    }
                    self.turn_started(&path, &mut out);
                    self.taken(&path, &inputs, &mut out);
                    out.push(Effect::HandOver(path, inputs));
                }
                effect => out.push(effect),
            }
        }
        // Inputs delivered to an agent woken later by this operation are never held past its
        // wake; none is left here, but nothing may be lost if that changes.
        for (path, inputs) in held {
            out.extend(
                inputs
                    .into_iter()
                    .map(|input| Effect::Deliver(path.clone(), input)),
            );
        }
        out
    }

    /// `path`'s turn starts: it runs and counts one more turn.
    pub(super) fn turn_started(&mut self, path: &AgentPath, effects: &mut Vec<Effect>) {
        if let Some(entry) = self.agents.get_mut(path)
            && entry.status != AgentStatus::Closed
        {
            entry.status = AgentStatus::Running;
            entry.turns += 1;
            effects.push(Effect::Event(Event::TurnStarted { path: path.clone() }));
        }
    }

    /// `path`'s turn took `inputs`: their mail is no longer unread.
    pub(super) fn taken(&mut self, path: &AgentPath, inputs: &[Input], effects: &mut Vec<Effect>) {
        let Some(entry) = self.agents.get_mut(path) else {
            return;
        };
        for input in inputs {
            if let Input::Mail { mail } = input {
                entry.unread.count(mail, false);
                #[cfg(test)]
                if let Some(mails) = self.mails.get_mut(path) {
                    mails.retain(|held| held.id != mail.id);
                }
                effects.push(Effect::Event(Event::MailDelivered {
                    id: mail.id,
                    recipient: path.clone(),
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use arbor_protocol::{AgentPath, AgentStatus, Event, MailId, MailKind, ThreadId};

    use super::super::{Effect, Fresh, Tree};
    use crate::wire::{Input, MailRequest, SessionConfig, SpawnRequest, TurnEnded, TurnOutcome};

    fn fresh() -> Fresh {
        Fresh {
            thread_id: ThreadId::new().as_string(),
            mail_id: MailId::new().to_string(),
            now_ms: 0,
        }
    }

    fn child() -> AgentPath {
        AgentPath::parse("/root/a").expect("path")
    }

    /// A started tree whose root took its prompt in the wake, and the effects of spawning
    /// `/root/a`, handed over as the session hands them.
    fn spawned() -> (Tree, Vec<Effect>) {
        let session = ThreadId::new().as_string();
        let (mut tree, effects) =
            Tree::start(&session, "task".into(), SessionConfig::new("/w"), &fresh());
        let effects = tree.hand_over(effects, |_| false);
        assert!(effects.contains(&Effect::HandOver(
            AgentPath::root(),
            vec![Input::User {
                text: "task".into()
            }]
        )));
        assert_eq!(tree.agents[&AgentPath::root()].status, AgentStatus::Running);
        let request = SpawnRequest {
            caller: AgentPath::root(),
            task_name: "a".into(),
            message: "do a".into(),
            agent_type: None,
            fresh: None,
        };
        let (reply, effects) = tree.spawn(&request, &fresh());
        reply.expect("spawn");
        let effects = tree.hand_over(effects, |_| false);
        (tree, effects)
    }

    #[test]
    fn a_spawned_agent_gets_its_task_in_the_wake_and_its_turn_starts() {
        let (tree, effects) = spawned();
        assert!(
            !effects
                .iter()
                .any(|effect| matches!(effect, Effect::Deliver(path, _) if *path == child())),
            "the task is not left in the inbox: {effects:?}"
        );
        let handed = effects.iter().find_map(|effect| match effect {
            Effect::HandOver(path, inputs) if *path == child() => Some(inputs),
            _ => None,
        });
        let handed = handed.expect("the wake carries the task");
        assert!(matches!(&handed[..], [Input::Mail { mail }] if mail.kind == MailKind::Spawn));
        let started = effects
            .iter()
            .position(|effect| *effect == Effect::Event(Event::TurnStarted { path: child() }));
        let delivered = effects.iter().position(|effect| {
            matches!(effect, Effect::Event(Event::MailDelivered { recipient, .. }) if *recipient == child())
        });
        let woken = effects
            .iter()
            .position(|effect| matches!(effect, Effect::HandOver(..)));
        assert!(started < delivered && delivered < woken, "{effects:?}");
        let entry = &tree.agents[&child()];
        assert_eq!(entry.status, AgentStatus::Running);
        assert_eq!((entry.unread.mails, entry.turns), (0, 1));
        assert!(entry.busy);
    }

    #[test]
    fn an_agent_whose_inbox_holds_older_inputs_is_woken_plainly() {
        let session = ThreadId::new().as_string();
        let (mut tree, effects) =
            Tree::start(&session, "task".into(), SessionConfig::new("/w"), &fresh());
        let kept = tree.hand_over(effects.clone(), |_| true);
        assert_eq!(kept, effects);
        assert_eq!(tree.agents[&AgentPath::root()].unread.mails, 0);
        assert_ne!(tree.agents[&AgentPath::root()].status, AgentStatus::Running);
    }

    #[test]
    fn mail_that_comes_during_a_handed_over_turn_still_wakes_it_once_more() {
        let (mut tree, _) = spawned();
        let followup = MailRequest {
            author: AgentPath::root(),
            target: "a".into(),
            content: "and then".into(),
            followup: true,
        };
        let (reply, effects) = tree.mail(&followup, &fresh());
        reply.expect("mail");
        let effects = tree.hand_over(effects, |_| true);
        assert!(
            effects
                .iter()
                .any(|effect| matches!(effect, Effect::Deliver(path, _) if *path == child()))
        );
        assert!(
            !effects
                .iter()
                .any(|effect| matches!(effect, Effect::Wake(_) | Effect::HandOver(..)))
        );
        let ended = TurnEnded {
            path: child(),
            outcome: TurnOutcome::Completed {
                last_message: Some("done".into()),
            },
            events: Vec::new(),
            fresh: None,
        };
        let effects = tree.turn_ended(&ended, &fresh());
        assert!(effects.contains(&Effect::Wake(child())), "{effects:?}");
    }
}
