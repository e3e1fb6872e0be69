//! The summarizer options shared by `grove navigate` and `grove serve` (`--summarizer-cmd`,
//! `--openai-url`, `--openai-model`, `--openai-key-env`) and the one function that builds a
//! summarizer from them. Both commands flatten [`SummarizerArgs`] into their own `Args`, so the
//! option names, help text, and the pairs clap checks (`--openai-url` with `--openai-model`,
//! `--summarizer-cmd` without `--openai-url`) are the same in both.

use std::sync::Arc;

use grove::summary::{CommandSummarizer, OpenAiSummarizer, Summarizer};

/// The environment variable read for the API key when `--openai-key-env` is not given.
const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";

/// Where the summary of a branch left by a navigation comes from: a shell command or an
/// OpenAI-compatible endpoint (at most one; clap refuses both).
#[derive(Debug, clap::Args)]
pub struct SummarizerArgs {
    /// Summarize the branch a navigation leaves with a shell command (`sh -c CMD`): the prompt
    /// on its stdin, the summary on its stdout; the system prompt is in $GROVE_SYSTEM_PROMPT,
    /// the token limit in $GROVE_MAX_TOKENS. A non-zero exit fails the navigation
    /// (BranchSummary).
    #[arg(long, value_name = "CMD", conflicts_with = "openai_url")]
    summarizer_cmd: Option<String>,
    /// Summarize with an OpenAI-compatible endpoint: `POST URL/chat/completions`.
    #[arg(long, value_name = "URL", requires = "openai_model")]
    openai_url: Option<String>,
    /// The model for --openai-url.
    #[arg(long, value_name = "MODEL", requires = "openai_url")]
    openai_model: Option<String>,
    /// The environment variable holding the API key for --openai-url (default:
    /// OPENAI_API_KEY; no key is sent when it is unset).
    #[arg(long, value_name = "VAR", requires = "openai_url")]
    openai_key_env: Option<String>,
}

impl SummarizerArgs {
    /// The summarizer the options name, or `None` when they name none. `--summarizer-cmd`
    /// wins over `--openai-url` (clap already refuses the two together).
    pub fn summarizer(&self) -> Option<Arc<dyn Summarizer>> {
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
