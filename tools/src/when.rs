//! Times as the command line and the API take them: now, and a time or how long ago
//! (`grove search --since`, `grove retain --older-than`, their routes). It calls the codec's
//! time parsing.

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

#[cfg(test)]
mod tests {
    use super::since_ms;

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
}
