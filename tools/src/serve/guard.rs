//! What a request must be before any route sees it (docs/api.md, "Requests from browsers").
//! A web page the user opens can make the user's browser send requests to any address, the
//! server's among them; this room keeps such requests away from the store:
//!
//! - On TCP, the `Host` must name the listener itself ([`Hosts`]): its address as bound,
//!   `localhost` on a loopback or any-address listener, or a name given with `--allow-host`.
//!   A page of a name re-pointed at the listener (DNS rebinding) sends its own name, and is
//!   refused before it reads anything.
//! - On TCP, an `Origin`, when given, must be the listener's own origin (`http://` or
//!   `https://` and the request's `Host`): a browser names the page's origin on every
//!   cross-origin request and on every POST, so a page of another site cannot write.
//! - On every listener, a request with a body must say it is of the type its route takes:
//!   `application/json` (a `charset=utf-8` parameter allowed), and for `POST /v1/import` also
//!   pi JSONL (`application/x-ndjson`, `application/jsonl`). The types a browser sends
//!   cross-site without asking first (`text/plain`, forms) are never taken.
//!
//! No answer carries CORS headers, so a browser's preflight for anything else fails too. The
//! bearer token's scheme is read here as well ([`bearer_token`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::Request;
use axum::http::uri::Authority;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::Router;

use super::api::{ApiError, ApiResult};

/// The body types of the JSON routes.
const JSON_TYPES: &[&str] = &["application/json"];

/// The body types of `POST /v1/import` (pi JSONL).
const IMPORT_TYPES: &[&str] = &[
    "application/x-ndjson",
    "application/jsonl",
    "application/json",
];

/// The path whose body is pi JSONL.
const IMPORT_PATH: &str = "/v1/import";

/// The hosts a TCP listener answers to: a request's `Host` must name one of them.
#[derive(Debug, Clone)]
pub struct Hosts {
    /// The listener's address as bound.
    local: SocketAddr,
    /// Names given with `--allow-host` (lowercase), taken with any port.
    allowed: Vec<String>,
}

impl Hosts {
    /// The hosts of a listener bound to `local`, and the names of `allowed` (as
    /// [`allowed_name`] returns them).
    pub fn new(local: SocketAddr, allowed: Vec<String>) -> Hosts {
        Hosts { local, allowed }
    }

    /// Whether `authority` (a `Host` value) names this listener.
    fn allows(&self, authority: &Authority) -> bool {
        let host = authority.host().to_ascii_lowercase();
        if self.allowed.contains(&host) {
            return true;
        }
        // A Host without a port is the scheme's default, 80.
        if authority.port_u16().unwrap_or(80) != self.local.port() {
            return false;
        }
        let ip = self.local.ip();
        let literal = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(&host);
        match literal.parse::<IpAddr>() {
            // An address is no name a page can re-point: any of the listener's own.
            Ok(given) => {
                ip.is_unspecified() || given == ip || (ip.is_loopback() && given.is_loopback())
            }
            Err(_) => host == "localhost" && (ip.is_loopback() || ip.is_unspecified()),
        }
    }
}

/// `name` as `--allow-host` takes it: a host name or address without a port, lowercase.
pub fn allowed_name(name: &str) -> Result<String, String> {
    let authority = name
        .parse::<Authority>()
        .map_err(|e| format!("'{name}' is not a host name: {e}"))?;
    if authority.port().is_some() || authority.as_str().contains('@') {
        return Err(format!(
            "'{name}' is not a bare host name (give it without a port or user)"
        ));
    }
    Ok(authority.host().to_ascii_lowercase())
}

/// `router` as a TCP listener serves it: the `Host` and `Origin` checks, then the body type
/// check, before anything else (the token included).
pub fn tcp(router: Router, hosts: Hosts) -> Router {
    let hosts = Arc::new(hosts);
    router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let hosts = hosts.clone();
            async move {
                let checked = check_host(&hosts, req.uri(), req.headers())
                    .and_then(|host| check_origin(&host, req.headers()))
                    .and_then(|()| check_body_type(&req));
                match checked {
                    Ok(()) => next.run(req).await,
                    Err(e) => e.into_response(),
                }
            }
        },
    ))
}

/// `router` as the unix socket serves it: the body type check (browsers do not reach a unix
/// socket, so its `Host` and `Origin` say nothing).
pub fn unix(router: Router) -> Router {
    router.layer(axum::middleware::from_fn(
        |req: Request, next: Next| async move {
            match check_body_type(&req) {
                Ok(()) => next.run(req).await,
                Err(e) => e.into_response(),
            }
        },
    ))
}

fn forbidden_host(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "forbidden_host", message)
}

/// The request's `Host`, when it names this listener (and so does the request target, when
/// it is absolute).
fn check_host(hosts: &Hosts, uri: &Uri, headers: &HeaderMap) -> ApiResult<Authority> {
    let mut values = headers.get_all(header::HOST).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(forbidden_host("a request needs exactly one Host header"));
    };
    let host = value
        .to_str()
        .ok()
        .and_then(|v| v.parse::<Authority>().ok())
        .ok_or_else(|| forbidden_host("the Host header is not a host"))?;
    for authority in std::iter::once(&host).chain(uri.authority()) {
        if !hosts.allows(authority) {
            return Err(forbidden_host(format!(
                "this server does not answer to the host '{authority}' (a page of another \
                 name re-pointed at it?); use its address, or start it with --allow-host NAME"
            )));
        }
    }
    Ok(host)
}

/// Refuses an `Origin` other than the listener's own: `http://HOST` or `https://HOST` with
/// `host` the request's (checked) `Host`.
fn check_origin(host: &Authority, headers: &HeaderMap) -> ApiResult<()> {
    let mut values = headers.get_all(header::ORIGIN).iter();
    let Some(value) = values.next() else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    let same = values.next().is_none()
        && text.parse::<Uri>().is_ok_and(|origin| {
            matches!(origin.scheme_str(), Some("http" | "https"))
                && origin.path() == "/"
                && origin.query().is_none()
                && origin
                    .authority()
                    .is_some_and(|a| a.as_str().eq_ignore_ascii_case(host.as_str()))
        });
    if same {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden_origin",
        format!(
            "requests from pages of another origin ({text}) are refused: only pages this \
             server serves (http://{host}) may call it from a browser"
        ),
    ))
}

/// Whether the request says it has a body.
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers.get(header::CONTENT_LENGTH).is_some_and(|v| {
            v.to_str()
                .ok()
                .and_then(|n| n.trim().parse::<u64>().ok())
                .is_none_or(|n| n > 0)
        })
}

/// Refuses a body that does not say it is of a type its route takes.
fn check_body_type(req: &Request) -> ApiResult<()> {
    if !has_body(req.headers()) {
        return Ok(());
    }
    let accepted = match req.uri().path() {
        IMPORT_PATH => IMPORT_TYPES,
        _ => JSON_TYPES,
    };
    let given = req.headers().get(header::CONTENT_TYPE);
    let parsed = given
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mime::Mime>().ok());
    let taken = parsed.is_some_and(|m| {
        accepted.contains(&m.essence_str())
            && m.get_param(mime::CHARSET)
                .is_none_or(|c| c.as_str().eq_ignore_ascii_case("utf-8"))
    });
    if taken {
        return Ok(());
    }
    let given = given.map_or_else(
        || "none".to_owned(),
        |v| String::from_utf8_lossy(v.as_bytes()).into_owned(),
    );
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "{} takes a body of content-type {}; this one is {given}",
            req.uri().path(),
            accepted.join(" or ")
        ),
    ))
}

/// The token of an `authorization` value of the bearer scheme, whose name is taken in any
/// letter case (RFC 7235); `None` for another scheme.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start_matches(' '))
}
