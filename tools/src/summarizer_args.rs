//! The summarizer options shared by `grove navigate` and `grove serve` (`--summarizer-cmd`,
//! `--openai-url`, `--openai-model`, `--openai-key-env`) and the one function that builds a
//! summarizer from them. Both commands flatten [`SummarizerArgs`] into their own `Args`, so the
//! option names, help text, and the pairs clap checks (`--openai-url` with `--openai-model`,
//! `--summarizer-cmd` without `--openai-url`) are the same in both.

use std::sync::Arc;

#[cfg(feature = "summarizer-http")]
use grove::summary::OpenAiSummarizer;
use grove::summary::{CommandSummarizer, Summarizer};

/// The environment variable read for the API key when `--openai-key-env` is not given.
#[cfg(feature = "summarizer-http")]
const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";

/// Where the summary of a branch left by a navigation comes from: a shell command or an
/// OpenAI-compatible endpoint (at most one; clap refuses both; the endpoint is the
/// `summarizer-http` feature).
///
/// Its options form the clap group `summarizer`, which `grove navigate --summary` conflicts with.
#[derive(Debug, clap::Args)]
#[group(id = "summarizer")]
pub struct SummarizerArgs {
    /// Summarize the branch a navigation leaves with a shell command (`sh -c CMD`): the prompt
    /// on its stdin, the summary on its stdout; the system prompt is in $GROVE_SYSTEM_PROMPT,
    /// the token limit in $GROVE_MAX_TOKENS. A non-zero exit fails the navigation
    /// (BranchSummary).
    #[arg(long, value_name = "CMD")]
    summarizer_cmd: Option<String>,
    /// Summarize with an OpenAI-compatible endpoint: `POST URL/chat/completions`.
    #[cfg(feature = "summarizer-http")]
    #[arg(
        long,
        value_name = "URL",
        requires = "openai_model",
        conflicts_with = "summarizer_cmd"
    )]
    openai_url: Option<String>,
    /// The model for --openai-url.
    #[cfg(feature = "summarizer-http")]
    #[arg(long, value_name = "MODEL", requires = "openai_url")]
    openai_model: Option<String>,
    /// The environment variable holding the API key for --openai-url (default:
    /// OPENAI_API_KEY; no key is sent when it is unset).
    #[cfg(feature = "summarizer-http")]
    #[arg(long, value_name = "VAR", requires = "openai_url")]
    openai_key_env: Option<String>,
}

impl SummarizerArgs {
    /// The summarizer the options name, or `None` when they name none. `--summarizer-cmd`
    /// wins over `--openai-url` (clap already refuses the two together).
    pub fn summarizer(&self) -> Option<Arc<dyn Summarizer>> {
        #[cfg(not(feature = "summarizer-http"))]
        return self.summarizer_cmd.as_ref().map(|command| {
            Arc::new(CommandSummarizer {
                command: command.clone(),
            }) as Arc<dyn Summarizer>
        });
        #[cfg(feature = "summarizer-http")]
        match (&self.summarizer_cmd, &self.openai_url) {
            (Some(command), _) => Some(Arc::new(CommandSummarizer {
                command: command.clone(),
            })),
            (None, Some(url)) => Some(Arc::new(OpenAiSummarizer::new(
                url,
                // clap requires --openai-model with --openai-url.
                self.openai_model.as_deref().unwrap_or_default(),
                self.openai_key_env.as_deref().unwrap_or(DEFAULT_KEY_ENV),
            ))),
            (None, None) => None,
        }
    }
}
