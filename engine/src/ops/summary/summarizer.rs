//! Summarizers: what turns a branch-summary prompt into text. Two real implementations: a
//! command (prompt on stdin, summary on stdout) and an OpenAI-compatible chat-completions
//! client over HTTP (feature `summarizer-http`, on by default; without it the trait and the
//! command summarizer remain).

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A request to a summarizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRequest {
    /// The system prompt.
    pub system: String,
    /// The user prompt (conversation and instructions).
    pub prompt: String,
    /// Output token limit.
    pub max_tokens: u32,
}

/// What a summarizer returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryResponse {
    /// The model's text.
    pub text: String,
    /// pi `Usage` JSON, when the summarizer reports usage.
    pub usage: Option<String>,
}

/// Why a summarizer produced nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// The summarizer failed; the message says why.
    #[error("{0}")]
    Failed(String),
    /// The call was aborted through its [`AbortSignal`].
    #[error("aborted")]
    Aborted,
}

/// A flag that aborts a running summarizer call. Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct AbortSignal(Arc<AtomicBool>);

impl AbortSignal {
    /// A signal that is not raised.
    pub fn new() -> AbortSignal {
        AbortSignal::default()
    }

    /// Raises the signal.
    pub fn abort(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the signal was raised.
    pub fn is_aborted(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Something that writes summaries.
pub trait Summarizer: Send + Sync {
    /// Produces the summary text for `request`; checks `abort` while it runs.
    fn summarize(
        &self,
        request: &SummaryRequest,
        abort: &AbortSignal,
    ) -> Result<SummaryResponse, SummarizeError>;
}

/// Runs a shell command: the prompt on stdin, the summary on stdout. The system prompt is
/// in the environment variable `GROVE_SYSTEM_PROMPT`, the token limit in
/// `GROVE_MAX_TOKENS`. A non-zero exit is a failure carrying the command's stderr.
#[derive(Debug, Clone)]
pub struct CommandSummarizer {
    /// The command line, run with `sh -c`.
    pub command: String,
}

impl Summarizer for CommandSummarizer {
    fn summarize(
        &self,
        request: &SummaryRequest,
        abort: &AbortSignal,
    ) -> Result<SummaryResponse, SummarizeError> {
        let failed = |what: &str, e: std::io::Error| {
            SummarizeError::Failed(format!("{what} `{}`: {e}", self.command))
        };
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .env("GROVE_SYSTEM_PROMPT", &request.system)
            .env("GROVE_MAX_TOKENS", request.max_tokens.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed("cannot run", e))?;
        let stdin = child.stdin.take();
        let prompt = request.prompt.clone();
        let writer = std::thread::spawn(move || {
            if let Some(mut s) = stdin {
                // A command that exits without reading its input is not an error here.
                let _ = s.write_all(prompt.as_bytes());
            }
        });
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let out_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut buf);
            }
            buf
        });
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut buf);
            }
            buf
        });
        let status = loop {
            if abort.is_aborted() {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SummarizeError::Aborted);
            }
            match child.try_wait().map_err(|e| failed("waiting for", e))? {
                Some(status) => break status,
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        let _ = writer.join();
        let out = out_reader.join().unwrap_or_default();
        let err = err_reader.join().unwrap_or_default();
        if !status.success() {
            return Err(SummarizeError::Failed(format!(
                "`{}` exited with {}: {}",
                self.command,
                status,
                String::from_utf8_lossy(&err).trim()
            )));
        }
        let text = String::from_utf8(out).map_err(|_| {
            SummarizeError::Failed(format!("`{}` wrote output that is not UTF-8", self.command))
        })?;
        Ok(SummaryResponse {
            text: text.trim_end_matches('\n').to_owned(),
            usage: None,
        })
    }
}

/// An OpenAI-compatible `POST {base_url}/chat/completions` client (feature `summarizer-http`).
#[cfg(feature = "summarizer-http")]
#[derive(Debug, Clone)]
pub struct OpenAiSummarizer {
    /// Base URL, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Name of the environment variable holding the API key (none sent when unset).
    pub api_key_env: String,
    /// Request timeout.
    pub timeout: Duration,
}

#[cfg(feature = "summarizer-http")]
impl OpenAiSummarizer {
    /// A client with a 120 s timeout.
    pub fn new(base_url: &str, model: &str, api_key_env: &str) -> OpenAiSummarizer {
        OpenAiSummarizer {
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            api_key_env: api_key_env.to_owned(),
            timeout: Duration::from_secs(120),
        }
    }
}

#[cfg(feature = "summarizer-http")]
impl Summarizer for OpenAiSummarizer {
    fn summarize(
        &self,
        request: &SummaryRequest,
        abort: &AbortSignal,
    ) -> Result<SummaryResponse, SummarizeError> {
        if abort.is_aborted() {
            return Err(SummarizeError::Aborted);
        }
        let url = format!("{}/chat/completions", self.base_url);
        let body = serde_json::json!({
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.prompt},
            ],
        });
        let mut req = ureq::post(&url).timeout(self.timeout);
        if let Ok(key) = std::env::var(&self.api_key_env) {
            req = req.set("Authorization", &format!("Bearer {key}"));
        }
        let response = match req.send_json(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(code, r)) => {
                let text = r.into_string().unwrap_or_default();
                return Err(SummarizeError::Failed(format!(
                    "{url} answered {code}: {}",
                    text.trim()
                )));
            }
            Err(e) => return Err(SummarizeError::Failed(format!("{url}: {e}"))),
        };
        if abort.is_aborted() {
            return Err(SummarizeError::Aborted);
        }
        let value: serde_json::Value = response
            .into_json()
            .map_err(|e| SummarizeError::Failed(format!("{url}: response is not JSON: {e}")))?;
        let text = value["choices"][0]["message"]["content"]
            .as_str()
            .ok_or_else(|| {
                SummarizeError::Failed(format!("{url}: response has no choices[0].message.content"))
            })?
            .to_owned();
        let usage = value.get("usage").map(|u| {
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            let (input, output) = (n("prompt_tokens"), n("completion_tokens"));
            let total = u["total_tokens"].as_u64().unwrap_or(input + output);
            format!(
                "{{\"input\":{input},\"output\":{output},\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":{total},\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}}"
            )
        });
        Ok(SummaryResponse { text, usage })
    }
}
