//! The server's error body and request extractors: every failure is `{"code", "message"}`
//! with a stable code (docs/api.md, "Errors"), pi's where pi has one; a body over the limit is
//! 413, one nested deeper than the depth limit or not the JSON a route takes is 400, and
//! none reaches the store. A request's `Grove-Client` header names who its operations are
//! stamped with ([`client_name`]); a field naming one of a few choices is read with
//! [`choice`]. How a request becomes the handlers' state and reads its body within the
//! server's limits is `state/extract.rs`. It calls the engine's error type and `depth`.

use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use grove::GroveError;
use serde::de::DeserializeOwned;

use super::depth::{self, MAX_JSON_DEPTH};

/// An error answer.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn invalid_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    pub fn invalid_argument(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn body(&self) -> String {
        serde_json::json!({ "code": self.code, "message": self.message }).to_string()
    }
}

impl From<GroveError> for ApiError {
    fn from(e: GroveError) -> ApiError {
        let code = e.code();
        let status = match code {
            "not_found" => StatusCode::NOT_FOUND,
            "invalid_session" => StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_entry" | "invalid_argument" | "invalid_fork_target" => StatusCode::BAD_REQUEST,
            "busy" | "export_incompatible" | "invalid_state" => StatusCode::CONFLICT,
            "branch_summary" | "hook" => StatusCode::BAD_GATEWAY,
            "unavailable" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let message = match e {
            // pi's own text (`Entry X not found`): the code already says what kind it is.
            GroveError::InvalidSession { file: None, reason } => reason,
            e => e.to_string(),
        };
        ApiError::new(status, code, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            self.body(),
        )
            .into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            // The database could not be reached: worth asking again in a second.
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        response
    }
}

pub type ApiResult<T> = std::result::Result<T, ApiError>;

/// A JSON body of type `T`, read up to the server's limit.
pub struct Body<T>(pub T);

/// The raw bytes of a JSON body, read up to the server's limit and refused when it nests
/// deeper than [`MAX_JSON_DEPTH`] (every JSON body is read through it, [`Body`] too).
pub struct Raw(pub axum::body::Bytes);

/// `invalid_argument` naming where a body nests too deep, and the limit.
pub(super) fn too_deep(e: depth::TooDeep) -> ApiError {
    let at = match e.path.as_str() {
        "" => "the body".to_owned(),
        path => format!("the field {path}"),
    };
    ApiError::invalid_argument(format!(
        "{at} nests arrays and objects deeper than {MAX_JSON_DEPTH} levels, the limit of a \
         JSON body (the body itself counts as one)"
    ))
}

/// `payload_too_large`: a body over `--max-body`.
pub(super) fn body_too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        "the request body is larger than the server's limit (--max-body)",
    )
}

pub(super) fn bytes_rejection(r: BytesRejection) -> ApiError {
    if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
        body_too_large()
    } else {
        ApiError::invalid_request(format!(
            "reading the request body failed: {}",
            r.body_text()
        ))
    }
}

/// Query parameters of type `T`.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> ApiResult<Query<T>> {
        Query::from_uri(&parts.uri)
    }
}

impl<T: DeserializeOwned> Query<T> {
    /// The query of `uri` (every parameter absent when it has none).
    pub fn from_uri(uri: &axum::http::Uri) -> ApiResult<Query<T>> {
        axum::extract::Query::<T>::try_from_uri(uri)
            .map(|q| Query(q.0))
            .map_err(|r: QueryRejection| ApiError::invalid_argument(r.body_text()))
    }
}

/// Path parameters of type `T`.
pub struct Path<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> ApiResult<Path<T>> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|r| ApiError::invalid_argument(r.body_text()))
    }
}

/// The header naming the client a request comes from: its operations are stamped with it.
pub const CLIENT_HEADER: &str = "grove-client";

/// The longest client name taken.
const MAX_CLIENT_NAME: usize = 64;

/// The client a request names in `Grove-Client` (1 to 64 printable ASCII characters), if any;
/// `invalid_argument` for any other value, or for the header given twice.
pub fn client_name(headers: &axum::http::HeaderMap) -> ApiResult<Option<&str>> {
    let mut values = headers.get_all(CLIENT_HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ApiError::invalid_argument(
            "Grove-Client is given more than once; give one name",
        ));
    }
    let bytes = value.as_bytes();
    let printable = bytes.iter().all(|b| (b' '..=b'~').contains(b));
    if bytes.is_empty() || bytes.len() > MAX_CLIENT_NAME || !printable {
        return Err(ApiError::invalid_argument(format!(
            "Grove-Client must be 1 to {MAX_CLIENT_NAME} printable ASCII characters"
        )));
    }
    // Printable ASCII is UTF-8.
    value
        .to_str()
        .map(Some)
        .map_err(|_| ApiError::invalid_argument("Grove-Client is not ASCII"))
}

/// `value` as one of `choices` (name, meaning), or `invalid_argument` naming `field`.
pub fn choice<T: Copy>(
    field: &str,
    value: Option<&str>,
    choices: &[(&str, T)],
) -> ApiResult<Option<T>> {
    let Some(value) = value else { return Ok(None) };
    choices
        .iter()
        .find(|(name, _)| *name == value)
        .map(|(_, v)| Some(*v))
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            ApiError::invalid_argument(format!(
                "{field} {value:?} is not one of {}",
                names.join(", ")
            ))
        })
}
