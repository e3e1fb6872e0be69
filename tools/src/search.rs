//! What `grove search` and `GET /v1/search` share (docs/cli.md, docs/api.md): reading
//! `--since` / `since` (a time, or how long ago), the type filter's list, and the JSON of a
//! search's hits, each snippet also given with its matches marked.
//!
//! It owns those forms and calls the engine's search types and the codec's time parsing.

use grove::{SearchHit, SearchResults};
use serde_json::{json, Value};

/// The most hits one search returns.
pub const MAX_LIMIT: usize = 1000;

/// Now, in ms since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `since` as ms since the Unix epoch: an ISO 8601 time (`2026-12-01`, `2026-12-01T10:00:00Z`)
/// or how long before `now_ms` (`90s`, `30m`, `12h`, `7d`, `2w`).
pub fn since_ms(text: &str, now_ms: i64) -> Result<i64, String> {
    let text = text.trim();
    let unit = |c: char| match c {
        's' => Some(1_000),
        'm' => Some(60_000),
        'h' => Some(3_600_000),
        'd' => Some(86_400_000),
        'w' => Some(604_800_000),
        _ => None,
    };
    if let Some((count, last)) = text
        .char_indices()
        .last()
        .and_then(|(at, c)| Some((text[..at].parse::<i64>().ok()?, unit(c)?)))
    {
        return Ok(now_ms.saturating_sub(count.saturating_mul(last)));
    }
    let full = if text.len() == 10 {
        format!("{text}T00:00:00.000Z")
    } else {
        text.to_owned()
    };
    grove::codec::time::parse_ms(&full).ok_or_else(|| {
        format!(
            "since {text:?} is neither a time (2026-12-01, 2026-12-01T10:00:00Z) nor a duration \
             before now (90s, 30m, 12h, 7d, 2w)"
        )
    })
}

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
    use super::{marked, since_ms, types};

    #[test]
    fn since_reads_times_and_durations_and_refuses_the_rest() {
        let now = 1_000_000_000_000;
        assert_eq!(since_ms("90s", now), Ok(now - 90_000));
        assert_eq!(since_ms("7d", now), Ok(now - 7 * 86_400_000));
        assert_eq!(since_ms("2026-01-01", now), Ok(1_767_225_600_000));
        assert_eq!(since_ms("2026-01-01T00:00:01Z", now), Ok(1_767_225_601_000));
        assert!(since_ms("yesterday", now).is_err());
        assert!(since_ms("7y", now).is_err());
        assert!(since_ms("", now).is_err());
    }

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
