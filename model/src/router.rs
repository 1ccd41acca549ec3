//! Several providers behind one `ModelClient`: each request goes to the provider it names
//! (`ModelRequest::provider`, else the default), and when that one fails for its availability
//! after its own retries (overloaded, rate limited, a server error, unreachable), to the
//! fallbacks of the agent's role (else the session's), in order.
//!
//! A switch is reported as `ModelEvent::Fallback` before the fallback is asked, with a note of
//! the reasoning items its API cannot take (each provider leaves those out of the history it
//! sends, `ProviderKind::takes`). A model that failed so is cooling down for a while
//! ([`DEFAULT_COOLDOWN`]): requests in that time go straight to the next one in their chain
//! (still reported), so a provider that is down costs one request its retries, not every one.
//! Every response says which provider and model served it (`ModelResponse::served_by`).

mod catalog;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arbor_protocol::{ModelFallback, ResponseItem, ServedBy};

pub use catalog::{Catalog, ModelRef};

use crate::{
    BoxFuture, ModelClient, ModelError, ModelEvent, ModelEvents, ModelRequest, ModelResponse,
    ProviderKind,
};

/// How long a model that failed for its availability is passed over by requests that have a
/// fallback.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(60);

/// The fallback chains: per role, else the session's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fallbacks {
    pub session: Vec<ModelRef>,
    pub roles: BTreeMap<String, Vec<ModelRef>>,
}

impl Fallbacks {
    /// The fallbacks of an agent of `role`.
    pub fn for_role(&self, role: &str) -> &[ModelRef] {
        self.roles.get(role).unwrap_or(&self.session)
    }

    /// Every model any chain names.
    pub fn all(&self) -> impl Iterator<Item = &ModelRef> {
        self.session.iter().chain(self.roles.values().flatten())
    }
}

/// One provider of the router: its client, or why there is none (a missing key).
struct Provider {
    client: Result<Arc<dyn ModelClient>, ModelError>,
    /// The wire protocol, for the note on reasoning items; `None` for the scripted model.
    kind: Option<ProviderKind>,
}

/// Routes requests to named providers, with fallbacks.
pub struct Router {
    catalog: Catalog,
    providers: BTreeMap<String, Provider>,
    fallbacks: Fallbacks,
    cooldown: Duration,
    /// Models that failed for their availability: when, and why.
    cooling: Mutex<HashMap<ModelRef, (Instant, String)>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("catalog", &self.catalog)
            .field("fallbacks", &self.fallbacks)
            .finish_non_exhaustive()
    }
}

impl Router {
    /// A router whose default provider is `default` (added with [`Router::with_provider`]).
    pub fn new(default: &str) -> Self {
        let mut catalog = Catalog::single(default);
        catalog.add(default, false, Some("it is not configured".to_string()));
        Self {
            catalog,
            providers: BTreeMap::new(),
            fallbacks: Fallbacks::default(),
            cooldown: DEFAULT_COOLDOWN,
            cooling: Mutex::new(HashMap::new()),
        }
    }

    /// Adds provider `name`: its client, or the error every request to it gets (a missing
    /// key); `kind` is its wire protocol (`None` for the scripted model).
    pub fn with_provider(
        mut self,
        name: &str,
        kind: Option<ProviderKind>,
        client: Result<Arc<dyn ModelClient>, ModelError>,
    ) -> Self {
        let slashed = kind.is_some_and(ProviderKind::slashed_models);
        let unavailable = client.as_ref().err().map(ToString::to_string);
        self.catalog.add(name, slashed, unavailable);
        self.providers
            .insert(name.to_string(), Provider { client, kind });
        self
    }

    pub fn with_fallbacks(mut self, fallbacks: Fallbacks) -> Self {
        self.fallbacks = fallbacks;
        self
    }

    /// How long a failed model is passed over ([`DEFAULT_COOLDOWN`] unless set).
    pub fn with_cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// The fallbacks of this router.
    pub fn fallbacks(&self) -> &Fallbacks {
        &self.fallbacks
    }

    /// Why `target` is passed over, while it cools down after a failure.
    fn cooling(&self, target: &ModelRef) -> Option<String> {
        let mut cooling = self.cooling.lock().unwrap_or_else(PoisonError::into_inner);
        match cooling.get(target) {
            Some((since, reason)) if since.elapsed() < self.cooldown => Some(format!(
                "it failed less than {} s ago: {reason}",
                self.cooldown.as_secs()
            )),
            Some(_) => {
                cooling.remove(target);
                None
            }
            None => None,
        }
    }

    fn cool(&self, target: &ModelRef, error: &ModelError) {
        self.cooling
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(target.clone(), (Instant::now(), error.to_string()));
    }

    /// Asks the models of `chain` in order until one answers or fails for good.
    async fn ask(
        &self,
        request: &ModelRequest,
        chain: &[ModelRef],
        events: &ModelEvents,
    ) -> Result<ModelResponse, ModelError> {
        let last = chain.len().saturating_sub(1);
        // The model the request left, and why: reported when the next one is asked.
        let mut left: Option<(String, String)> = None;
        let mut failure = ModelError::Config("no model to ask".to_string());
        for (at, target) in chain.iter().enumerate() {
            let Some(provider) = self.providers.get(&target.provider) else {
                return Err(ModelError::Config(
                    self.catalog
                        .check(&target.provider)
                        .err()
                        .unwrap_or_default(),
                ));
            };
            let skip = match &provider.client {
                Err(error) => Some(error.to_string()),
                Ok(_) if at < last => self.cooling(target),
                Ok(_) => None,
            };
            if let Some(reason) = skip.filter(|_| at < last) {
                left.get_or_insert((target.to_string(), reason));
                continue;
            }
            let client = provider.client.as_ref().map_err(Clone::clone)?;
            if let Some((from, reason)) = left.take() {
                let _ = events.send(ModelEvent::Fallback(ModelFallback {
                    from,
                    to: target.to_string(),
                    reason,
                    note: dropped_note(provider.kind, &request.input),
                }));
            }
            let routed;
            let asked = if at == 0 {
                request
            } else {
                routed = ModelRequest {
                    provider: Some(target.provider.clone()),
                    model: target.model.clone(),
                    ..request.clone()
                };
                &routed
            };
            match client.respond(asked, events).await {
                Ok(mut response) => {
                    response.served_by = Some(ServedBy {
                        provider: target.provider.clone(),
                        model: target.model.clone(),
                    });
                    return Ok(response);
                }
                Err(error) if error.is_availability() => {
                    self.cool(target, &error);
                    left = Some((target.to_string(), error.to_string()));
                    failure = error;
                }
                Err(error) => return Err(error),
            }
        }
        Err(failure)
    }
}

/// What a history sent to a provider of `kind` lacks: the reasoning items its API cannot take.
fn dropped_note(kind: Option<ProviderKind>, history: &[ResponseItem]) -> Option<String> {
    let kind = kind?;
    let dropped = history
        .iter()
        .filter(|item| matches!(item, ResponseItem::Reasoning { .. }) && !kind.takes(item))
        .count();
    (dropped > 0).then(|| {
        format!(
            "{dropped} reasoning item{} of the history left out: the {kind} API cannot take {}",
            if dropped == 1 { "" } else { "s" },
            if dropped == 1 { "it" } else { "them" },
        )
    })
}

impl ModelClient for Router {
    fn provider(&self) -> &str {
        self.catalog.default_provider()
    }

    fn catalog(&self) -> Catalog {
        self.catalog.clone()
    }

    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let primary = ModelRef {
                provider: request
                    .provider
                    .clone()
                    .unwrap_or_else(|| self.catalog.default_provider().to_string()),
                model: request.model.clone(),
            };
            let fallbacks = self.fallbacks.for_role(&request.agent.role);
            let chain: Vec<ModelRef> = std::iter::once(primary.clone())
                .chain(fallbacks.iter().filter(|f| **f != primary).cloned())
                .collect();
            self.ask(request, &chain, events).await
        })
    }
}

#[cfg(test)]
mod tests;
