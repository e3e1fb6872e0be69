//! What `grove ls` and `GET /v1/sessions` share (docs/cli.md, docs/api.md): the session
//! filter, made from the text a person or a client gives (times as `crate::when` reads them).

use grove::SessionFilter;

/// The filter's parts as given: each time a time (`2026-12-01`) or how long ago (`7d`).
#[derive(Debug, Default, Clone)]
pub struct FilterText<'a> {
    pub cwd: Option<&'a str>,
    pub name: Option<&'a str>,
    pub label: Option<&'a str>,
    pub created_after: Option<&'a str>,
    pub created_before: Option<&'a str>,
    pub updated_after: Option<&'a str>,
    pub updated_before: Option<&'a str>,
}

/// The filter `text` describes, times measured back from `now_ms`; an error names the part
/// that does not read.
pub fn filter(text: &FilterText<'_>, now_ms: i64) -> Result<SessionFilter, String> {
    let time = |name: &str, t: Option<&str>| {
        t.map(|t| crate::when::since_ms(t, now_ms).map_err(|e| format!("{name}: {e}")))
            .transpose()
    };
    Ok(SessionFilter {
        cwd: text.cwd.map(str::to_owned),
        name: text.name.map(str::to_owned),
        label: text.label.map(str::to_owned),
        created_from: time("createdAfter", text.created_after)?,
        created_until: time("createdBefore", text.created_before)?,
        updated_from: time("updatedAfter", text.updated_after)?,
        updated_until: time("updatedBefore", text.updated_before)?,
    })
}
