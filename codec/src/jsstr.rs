//! JavaScript string semantics over JSON string literals.
//!
//! pi is written in JavaScript: its strings are UTF-16 and may hold lone surrogates, which
//! `JSON.stringify` writes as `\udXXX` escapes and which no Rust `String` can hold. This
//! module decodes a JSON string literal into UTF-16 code units without loss, and offers the
//! few JavaScript operations grove needs (length, trim, ordering, re-serialization).

use serde_json::value::RawValue;

/// A JavaScript string: a sequence of UTF-16 code units, possibly with lone surrogates.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct JsString(pub Vec<u16>);

impl JsString {
    /// Decodes a JSON value that should be a string; `None` if it is not a string literal.
    pub fn from_raw(raw: &RawValue) -> Option<JsString> {
        decode_literal(raw.get())
    }

    /// Builds a string from Rust text.
    pub fn from_text(s: &str) -> JsString {
        JsString(s.encode_utf16().collect())
    }

    /// JavaScript `.length`: the number of UTF-16 code units.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// JavaScript `String.prototype.trim`.
    pub fn trim(&self) -> JsString {
        let units = &self.0;
        let start = units
            .iter()
            .position(|&u| !is_js_whitespace(u))
            .unwrap_or(units.len());
        let end = units
            .iter()
            .rposition(|&u| !is_js_whitespace(u))
            .map_or(start, |p| p + 1);
        JsString(units[start..end.max(start)].to_vec())
    }

    /// The string as Rust text when it holds no lone surrogate.
    pub fn to_rust(&self) -> Option<String> {
        String::from_utf16(&self.0).ok()
    }

    /// The string as Rust text, lone surrogates replaced by U+FFFD (for display only).
    pub fn to_lossy(&self) -> String {
        String::from_utf16_lossy(&self.0)
    }

    /// `JSON.stringify(s)`: the JSON literal with JavaScript's escaping rules.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.0.len() + 2);
        out.push('"');
        for item in char::decode_utf16(self.0.iter().copied()) {
            match item {
                Ok(c) => push_escaped_char(&mut out, c),
                Err(e) => {
                    out.push_str(&format!("\\u{:04x}", e.unpaired_surrogate()));
                }
            }
        }
        out.push('"');
        out
    }
}

/// `JSON.stringify` of Rust text (which has no lone surrogates).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_quoted(&mut out, s);
    out
}

/// Appends `JSON.stringify(s)` to `out`. Text without a quote, backslash or control
/// character (the common case) is copied in one piece.
pub fn push_quoted(out: &mut String, s: &str) {
    out.push('"');
    if s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        for c in s.chars() {
            push_escaped_char(out, c);
        }
    } else {
        out.push_str(s);
    }
    out.push('"');
}

fn push_escaped_char(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push(c),
    }
}

/// JavaScript's `WhiteSpace` and `LineTerminator` code units, as `trim` removes them.
fn is_js_whitespace(u: u16) -> bool {
    matches!(
        u,
        0x09 | 0x0A | 0x0B | 0x0C | 0x0D | 0x20 | 0xA0 | 0x1680 | 0x2000
            ..=0x200A | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000 | 0xFEFF
    )
}

/// Decodes a JSON string literal (with its quotes) into UTF-16 code units.
/// Returns `None` when `lit` is not a well-formed JSON string literal.
pub fn decode_literal(lit: &str) -> Option<JsString> {
    let inner = lit.strip_prefix('"')?.strip_suffix('"')?;
    let mut out: Vec<u16> = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u16; 2];
            out.extend_from_slice(c.encode_utf16(&mut buf));
            continue;
        }
        let unit = match chars.next()? {
            '"' => 0x22,
            '\\' => 0x5C,
            '/' => 0x2F,
            'b' => 0x08,
            'f' => 0x0C,
            'n' => 0x0A,
            'r' => 0x0D,
            't' => 0x09,
            'u' => {
                let mut v: u16 = 0;
                for _ in 0..4 {
                    let d = chars.next()?.to_digit(16)?;
                    v = (v << 4) | d as u16;
                }
                v
            }
            _ => return None,
        };
        out.push(unit);
    }
    Some(JsString(out))
}

/// Decodes a JSON string literal into Rust text. Lone surrogates become U+FFFD, so two
/// strings that differ only in lone surrogates may map to the same text; callers that need
/// exactness keep the [`JsString`].
pub fn decode_lossy(raw: &RawValue) -> Option<String> {
    decode_lossy_cow(raw).map(std::borrow::Cow::into_owned)
}

/// [`decode_lossy`], borrowing the literal's text when it has no escapes (then it is the
/// decoded text: a literal's characters other than escapes stand for themselves).
pub fn decode_lossy_cow(raw: &RawValue) -> Option<std::borrow::Cow<'_, str>> {
    let inner = raw.get().strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(std::borrow::Cow::Borrowed(inner));
    }
    JsString::from_raw(raw).map(|s| s.to_rust().unwrap_or_else(|| s.to_lossy()).into())
}

/// JavaScript truthiness of a JSON value given as text.
pub fn truthy(raw: &RawValue) -> bool {
    let text = raw.get().trim();
    match text {
        "null" | "false" | "\"\"" => false,
        t if t.starts_with('"') => decode_literal(t).is_some_and(|s| !s.is_empty()),
        t if t.starts_with('-') || t.starts_with(|c: char| c.is_ascii_digit()) => t
            .parse::<f64>()
            .map(|n| n != 0.0 && !n.is_nan())
            .unwrap_or(true),
        _ => true,
    }
}

/// Adds `key` with a raw JSON value to an object's fields, when there is one.
pub fn push_raw(fields: &mut Vec<(&'static str, String)>, key: &'static str, v: Option<&RawValue>) {
    if let Some(v) = v {
        fields.push((key, v.get().to_owned()));
    }
}

/// A JSON object of fields whose values are JSON text, in their order.
pub fn object(fields: &[(&str, String)]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{}", quote(k), v))
        .collect();
    format!("{{{}}}", parts.join(","))
}
