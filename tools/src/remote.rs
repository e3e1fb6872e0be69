//! The CLI as a client of `grove serve`: a command that must see another process's writes
//! (`grove replay --follow`) reads a served store over HTTP instead of opening it, since a
//! store is held by one process.
//!
//! This room owns the connection (`unix:/path` or `http://host:port`, like the clients'
//! `GROVE_URL`), the bearer token and the mapping of the server's error answers to
//! [`CommandError::Server`]. It calls hyper's HTTP/1.1 client and nothing of the engine.

use std::io::Write;

use axum::body::Body;
use axum::http::{header, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio_stream::StreamExt;

use crate::error::{CmdResult, CommandError};

/// A server address as the clients take it.
pub struct Server {
    url: String,
    token: Option<String>,
}

impl Server {
    /// `url` is `unix:/path/to/socket` or `http://host:port`.
    pub fn new(url: &str, token: Option<String>) -> CmdResult<Server> {
        let ok = url.strip_prefix("unix:").is_some_and(|p| !p.is_empty())
            || url
                .parse::<Uri>()
                .is_ok_and(|u| u.scheme_str() == Some("http") && u.authority().is_some());
        if !ok {
            return Err(CommandError::invalid(
                format!("'{url}' is not a server address"),
                "give unix:/path/to/grove.sock or http://host:port (what `grove serve` prints)",
            ));
        }
        Ok(Server {
            url: url.trim_end_matches('/').to_owned(),
            token,
        })
    }

    /// GETs `path_and_query` and copies the answer's body to `out` as it arrives, flushing
    /// after every chunk. An error answer is [`CommandError::Server`].
    pub fn stream_to(&self, path_and_query: &str, out: &mut dyn Write) -> CmdResult {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CommandError::io("starting the client's runtime", e))?;
        runtime.block_on(self.get(path_and_query, out))
    }

    async fn get(&self, path_and_query: &str, out: &mut dyn Write) -> CmdResult {
        let connect_err =
            |e: std::io::Error| CommandError::io(format!("connecting to {}", self.url), e);
        let response = match self.url.strip_prefix("unix:") {
            Some(path) => {
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(connect_err)?;
                self.send(stream, "localhost", path_and_query).await?
            }
            None => {
                let uri: Uri = self.url.parse().map_err(|_| {
                    CommandError::invalid(format!("'{}' is not a server address", self.url), "")
                })?;
                let authority = uri
                    .authority()
                    .map(|a| a.as_str().to_owned())
                    .unwrap_or_default();
                let stream = tokio::net::TcpStream::connect(&authority)
                    .await
                    .map_err(connect_err)?;
                self.send(stream, &authority, path_and_query).await?
            }
        };
        let status = response.status();
        let mut body = Body::new(response.into_body()).into_data_stream();
        if status != StatusCode::OK {
            let mut text = Vec::new();
            while let Some(chunk) = body.next().await {
                match chunk {
                    Ok(c) => text.extend_from_slice(&c),
                    Err(_) => break,
                }
            }
            // docs/api.md, "Errors": {"code", "message"}.
            let answer: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
            return Err(CommandError::Server {
                url: self.url.clone(),
                status: status.as_u16(),
                code: answer["code"].as_str().unwrap_or("unknown").to_owned(),
                message: answer["message"].as_str().map_or_else(
                    || String::from_utf8_lossy(&text).into_owned(),
                    str::to_owned,
                ),
            });
        }
        // An idle followed replay sends empty lines to keep the connection alive (docs/api.md):
        // they are not printed.
        let mut line_start = true;
        let mut lines = Vec::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| {
                CommandError::io(
                    format!("reading the answer of {}", self.url),
                    std::io::Error::other(e.to_string()),
                )
            })?;
            lines.clear();
            for &byte in chunk.iter() {
                if !(byte == b'\n' && line_start) {
                    lines.push(byte);
                }
                line_start = byte == b'\n';
            }
            out.write_all(&lines)?;
            out.flush()?;
        }
        Ok(())
    }

    async fn send<S>(
        &self,
        stream: S,
        host: &str,
        path_and_query: &str,
    ) -> CmdResult<hyper::Response<hyper::body::Incoming>>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let http_err = |what: &str, e: hyper::Error| {
            CommandError::io(
                format!("{what} {}", self.url),
                std::io::Error::other(e.to_string()),
            )
        };
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| http_err("talking to", e))?;
        tokio::spawn(conn);
        let mut request = Request::get(path_and_query)
            .header(header::HOST, host)
            .header("grove-client", "grove-cli");
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Body::empty())
            .map_err(|e| CommandError::invalid(format!("a request to {}: {e}", self.url), ""))?;
        sender
            .send_request(request)
            .await
            .map_err(|e| http_err("requesting from", e))
    }
}

/// `text` as one path segment, percent-encoded.
pub fn segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}
