//! The streamable HTTP transport: rmcp's client over arbor's reqwest build (rustls with ring,
//! no other TLS stack), with an optional bearer token read from the environment.

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// The transport to `url`; the token, if any, from the variable `token_env`.
pub(crate) fn transport(
    url: &str,
    token_env: Option<&str>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .build()
        .map_err(|err| format!("cannot build the HTTP client: {err}"))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(var) = token_env {
        let token = std::env::var(var)
            .ok()
            .filter(|token| !token.trim().is_empty())
            .ok_or_else(|| format!("{var} is not set; export it or drop bearer_token_env_var"))?;
        config = config.auth_header(token);
    }
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// reqwest is built without a bundled crypto provider; ring is the one arbor uses.
fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
