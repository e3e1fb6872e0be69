//! Branch summaries (spec §8): which entries a summary covers, how they are prepared under a
//! token budget, the prompt, the summarizers, and the final text.

mod blocks;
pub mod prepare;
pub mod prompt;
pub mod summarizer;

pub use prepare::{
    estimate_tokens, prepare_branch_entries, PathMode, PreparedBranch, SummaryMessage,
    DEFAULT_BUDGET,
};
#[cfg(feature = "summarizer-http")]
pub use summarizer::OpenAiSummarizer;
pub use summarizer::{
    AbortSignal, CommandSummarizer, SummarizeError, Summarizer, SummaryRequest, SummaryResponse,
};

/// A content value's text: a string as is, an array's text blocks joined with "".
pub(crate) fn blocks_text(content: Option<&serde_json::value::RawValue>) -> String {
    blocks::content_text(content, "").to_lossy()
}
