//! What `grove search` and `GET /v1/search` share (docs/cli.md, docs/api.md): reading
//! `--since` / `since` (a time, or how long ago), the type filter's list, and the JSON of a
//! search's hits, each snippet also given with its matches marked.
//!
//! It owns those forms and calls the engine's search types and the codec's time parsing.

use grove::{SearchHit, SearchResults};
use serde_json::{json, Value};

/// The most hits one search returns.
pub const MAX_LIMIT: usize = 1000;

pub use crate::when::{now_ms, since_ms};

/// The entry types and roles of a type filter: comma-separated, repeated, or both.
pub fn types(given: &[String]) -> Vec<String> {
    given
        .iter()
        .flat_map(|t| t.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `snippet` with each highlighted byte range wrapped in `open` and `close`; `escape`
/// rewrites the text between them (HTML's `&`, `<`, `>` for the JSON's `marked`).
pub fn marked(hit: &SearchHit, open: &str, close: &str, escape: fn(&str) -> String) -> String {
    let text = hit.snippet.as_str();
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for &(start, end) in &hit.highlights {
        let (Some(before), Some(matched)) = (text.get(at..start), text.get(start..end)) else {
            continue;
        };
        out.push_str(&escape(before));
        out.push_str(open);
        out.push_str(&escape(matched));
        out.push_str(close);
        at = end;
    }
    out.push_str(&escape(text.get(at..).unwrap_or_default()));
    out
}

/// HTML's escapes of `&`, `<` and `>`.
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One hit as JSON.
pub fn hit_value(hit: &SearchHit) -> Value {
    json!({
        "session": hit.session,
        "entry": hit.entry,
        "seq": hit.seq,
        "type": hit.entry_type,
        "role": hit.role,
        "timestamp": hit.timestamp,
        "score": hit.score,
        "active": hit.active,
        "snippet": hit.snippet,
        "marked": marked(hit, "<mark>", "</mark>", html_escape),
        "highlights": hit.highlights.iter().map(|&(s, e)| json!([s, e])).collect::<Vec<_>>(),
    })
}

/// A search's answer: `{"hits": [...], "total", "indexed"}`.
pub fn results_value(results: &SearchResults) -> Value {
    json!({
        "hits": results.hits.iter().map(hit_value).collect::<Vec<_>>(),
        "total": results.total,
        "indexed": results.indexed,
    })
}

#[cfg(test)]
mod tests {
    use super::{marked, types};

    #[test]
    fn types_split_on_commas() {
        let given = vec!["message, compaction".to_owned(), "label".to_owned()];
        assert_eq!(types(&given), ["message", "compaction", "label"]);
    }

    #[test]
    fn matches_are_marked_and_the_rest_escaped() {
        let hit = grove::SearchHit {
            session: "s".into(),
            entry: "e".into(),
            seq: 0,
            entry_type: "message".into(),
            role: None,
            timestamp: None,
            score: 1.0,
            snippet: "a <b> plan & plan".into(),
            highlights: vec![(6, 10), (13, 17)],
            active: true,
        };
        assert_eq!(
            marked(&hit, "<mark>", "</mark>", super::html_escape),
            "a &lt;b&gt; <mark>plan</mark> &amp; <mark>plan</mark>"
        );
        assert_eq!(
            marked(&hit, "[", "]", str::to_owned),
            "a <b> [plan] & [plan]"
        );
    }
}
