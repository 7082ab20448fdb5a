//! The web client's HTTP routes: `/` (the page on a plain GET, the WebSocket on an upgrade),
//! sign-in with a one-time link (`POST /auth/link` with the gateway token issues it,
//! `GET /signin/{code}` redeems it) or a pasted token (`POST /auth/token`), `GET /auth/me`, and
//! `POST /auth/signout`. A browser session is a random id in an HttpOnly, SameSite=Strict cookie
//! named for the gateway's port; every state-changing browser request and every WebSocket
//! upgrade that carries an `Origin` must come from the gateway's own origin, and a sign-in link
//! is redeemed only when the browser opened it itself (not for another site's page). The token
//! is only ever read from a request body or an `Authorization` header, and never logged.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::limits::Admission;
use crate::shared::Shared;
use crate::web_auth::{Refused, WebSession};

/// Largest sign-in body read (a token is 64 characters).
const MAX_SIGNIN_BODY: usize = 1024;

/// `GET /`: the WebSocket on an upgrade request, the web client's page otherwise.
pub(crate) async fn root(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(admission): ConnectInfo<Admission>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    match ws {
        Ok(ws) => upgrade(&shared, admission, &headers, ws),
        Err(_) => crate::web_assets::page(),
    }
}

/// `GET /ws`: the WebSocket only.
pub(crate) async fn ws_only(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(admission): ConnectInfo<Admission>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    upgrade(&shared, admission, &headers, ws)
}

/// Refuses an upgrade from another origin; a same-origin upgrade carrying a live session cookie
/// may authenticate its `hello` by that session instead of the token.
fn upgrade(
    shared: &Arc<Shared>,
    admission: Admission,
    headers: &HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let web = match origin_check(shared, headers) {
        OriginCheck::Foreign => {
            tracing::info!("WebSocket upgrade from another origin refused");
            return (StatusCode::FORBIDDEN, "cross-origin WebSocket refused\n").into_response();
        }
        OriginCheck::Absent => None,
        OriginCheck::Same => session_of(shared, headers),
    };
    crate::server::upgrade(Arc::clone(shared), admission, ws, web)
}

/// `POST /auth/link` with `Authorization: Bearer <gateway token>`: a one-time sign-in path for
/// the token's user, `{"path": "/signin/<code>", "expires_in_secs": 60}`. Not for browsers (a
/// request carrying `Origin` is refused).
pub(crate) async fn issue_link(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if headers.contains_key(header::ORIGIN) {
        return (StatusCode::FORBIDDEN, "not from a browser\n").into_response();
    }
    if let Err(refused) = shared.web.admit_attempt() {
        return refusal(refused);
    }
    let presented = crate::mcp_route::bearer(&headers);
    let user = presented.and_then(|t| shared.users.values().find(|u| u.token.verify(t)));
    let Some(user) = user else {
        return refusal(shared.web.failed());
    };
    let Some(code) = shared.web.issue_code(&user.user_id) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "no randomness\n").into_response();
    };
    tracing::info!(user = %user.user_id, "one-time sign-in link issued");
    let body = serde_json::json!({
        "path": format!("/signin/{code}"),
        "expires_in_secs": shared.config.signin_code_lifetime.as_secs(),
    });
    json(StatusCode::OK, &body)
}

/// `GET /signin/{code}`: redeems a one-time code for a session cookie and goes to the page. A
/// request another site's page made (an image, a link: the browser says so in `Sec-Fetch-Site`)
/// is refused before anything is looked at: it neither counts as a failed attempt, which would
/// let any page keep the sign-in shut, nor signs the browser in with a code it chose.
pub(crate) async fn redeem_link(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(code): Path<String>,
) -> Response {
    if from_another_site(&headers) {
        tracing::info!("sign-in link requested by another site's page refused");
        return (
            StatusCode::FORBIDDEN,
            "a sign-in link works only when opened directly: paste it into the address bar\n",
        )
            .into_response();
    }
    match shared.web.redeem_code(&code) {
        Ok((session, user)) => {
            tracing::info!(user = %user, "signed in with a one-time link");
            let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
            set_cookie(&shared, &mut response, &session);
            response
        }
        Err(Refused::Bad) => (
            StatusCode::FORBIDDEN,
            "this sign-in link was already used or has expired: run `runner --user <id> open` \
             again, or sign in with the gateway token\n",
        )
            .into_response(),
        Err(refused) => refusal(refused),
    }
}

#[derive(Deserialize)]
struct TokenBody {
    token: String,
}

/// `POST /auth/token` with `{"token": "..."}` (JSON, same origin): the pasted gateway token
/// signs the browser in as its user.
pub(crate) async fn sign_in_with_token(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = browser_post_refusal(&shared, &headers) {
        return refused;
    }
    if let Err(refused) = shared.web.admit_attempt() {
        return refusal(refused);
    }
    let presented = (body.len() <= MAX_SIGNIN_BODY)
        .then(|| serde_json::from_slice::<TokenBody>(&body).ok())
        .flatten();
    let Some(presented) = presented else {
        return (
            StatusCode::BAD_REQUEST,
            "send {\"token\": \"<the gateway token>\"} as JSON\n",
        )
            .into_response();
    };
    let token = presented.token.trim();
    let Some(user) = shared.users.values().find(|u| u.token.verify(token)) else {
        tracing::info!("web sign-in with a wrong token refused");
        return refusal(shared.web.failed());
    };
    let Some(session) = shared.web.start_session(&user.user_id) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "no randomness\n").into_response();
    };
    tracing::info!(user = %user.user_id, "signed in with the gateway token");
    let mut response = json(
        StatusCode::OK,
        &serde_json::json!({"user_id": user.user_id.as_str()}),
    );
    set_cookie(&shared, &mut response, &session);
    response
}

/// `GET /auth/me`: the signed-in user, `{"user_id": "alice"}`, or 401.
pub(crate) async fn me(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    match session_of(&shared, &headers) {
        Some(s) => json(
            StatusCode::OK,
            &serde_json::json!({"user_id": s.user.as_str()}),
        ),
        None => (StatusCode::UNAUTHORIZED, "not signed in\n").into_response(),
    }
}

/// `POST /auth/signout` (same origin): ends the session server-side (its WebSocket connections
/// close) and clears the cookie.
pub(crate) async fn sign_out(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(refused) = browser_post_refusal(&shared, &headers) {
        return refused;
    }
    if let Some(id) = cookie(&shared, &headers)
        && shared.web.end_session(id)
    {
        tracing::info!("web session signed out");
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    let clear = format!(
        "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
        shared.cookie_name
    );
    if let Ok(value) = HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

enum OriginCheck {
    Absent,
    Same,
    Foreign,
}

/// Whether the request's `Origin` is the gateway's own: `https://` + its `Host` with TLS; without,
/// `http://` or `https://` (a TLS reverse proxy in front).
fn origin_check(shared: &Shared, headers: &HeaderMap) -> OriginCheck {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return OriginCheck::Absent;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let same = match (origin.to_str().ok(), host) {
        (Some(origin), Some(host)) => origin
            .strip_prefix("https://")
            .or_else(|| {
                let plain_allowed = shared.config.tls.is_none();
                origin.strip_prefix("http://").filter(|_| plain_allowed)
            })
            .is_some_and(|rest| rest.eq_ignore_ascii_case(host)),
        _ => false,
    };
    if same {
        OriginCheck::Same
    } else {
        OriginCheck::Foreign
    }
}

/// Whether the browser says another site's page made this request (`Sec-Fetch-Site` is
/// `cross-site`, or `same-site`: another port of the same host). A link the user opens
/// themselves is `none`; a request without the header (another program) is not a page's.
fn from_another_site(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| {
            site.eq_ignore_ascii_case("cross-site") || site.eq_ignore_ascii_case("same-site")
        })
}

/// A browser's state-changing request must be JSON-or-empty from the gateway's own origin.
fn browser_post_refusal(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    match origin_check(shared, headers) {
        OriginCheck::Same => None,
        _ => Some(
            (
                StatusCode::FORBIDDEN,
                "only from the web client's own page\n",
            )
                .into_response(),
        ),
    }
}

/// The session id in this gateway's cookie, if any.
fn cookie<'h>(shared: &Shared, headers: &'h HeaderMap) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == shared.cookie_name)
        .map(|(_, value)| value)
}

fn session_of(shared: &Shared, headers: &HeaderMap) -> Option<WebSession> {
    shared.web.session(cookie(shared, headers)?)
}

fn set_cookie(shared: &Shared, response: &mut Response, session: &str) {
    let secure = if shared.config.secure_cookie || shared.config.tls.is_some() {
        "; Secure"
    } else {
        ""
    };
    let value = format!(
        "{}={session}; Path=/; HttpOnly; SameSite=Strict{secure}",
        shared.cookie_name
    );
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
}

fn refusal(refused: Refused) -> Response {
    match refused {
        Refused::Bad => (
            StatusCode::UNAUTHORIZED,
            "wrong token or sign-in code: use the token in the user's .oxydra/gateway.token\n",
        )
            .into_response(),
        Refused::RateLimited(wait) => {
            let secs = wait.as_secs().max(1);
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, secs.to_string())],
                format!("too many failed sign-in attempts: try again in {secs} s\n"),
            )
                .into_response()
        }
    }
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
