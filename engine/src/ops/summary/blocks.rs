//! Reading message content the way pi's JavaScript does: string lengths in UTF-16 units,
//! text blocks, tool calls. Used by token estimates, file-operation extraction and prompts.

use grove_codec::entry::present;
use grove_codec::jsstr::JsString;
use grove_codec::writer::compact;
use serde::Deserialize;
use serde_json::value::RawValue;

/// One content block, with the fields grove reads.
#[derive(Deserialize, Default)]
pub(crate) struct Block<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "present")]
    pub ty: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub text: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub thinking: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub name: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub arguments: Option<&'a RawValue>,
}

impl Block<'_> {
    pub fn kind(&self) -> Option<String> {
        self.ty.and_then(grove_codec::entry::string_field)
    }
}

/// The string value of a raw JSON value, if it is a string.
pub(crate) fn js(v: Option<&RawValue>) -> Option<JsString> {
    v.and_then(JsString::from_raw)
}

/// UTF-16 length of a string value (0 when absent or not a string).
pub(crate) fn js_len(v: Option<&RawValue>) -> usize {
    js(v).map_or(0, |s| s.len())
}

/// The blocks of an array content value; empty for strings and anything else.
pub(crate) fn blocks(content: Option<&RawValue>) -> Vec<Block<'_>> {
    let Some(c) = content else {
        return Vec::new();
    };
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(c.get()) else {
        return Vec::new();
    };
    items
        .into_iter()
        .map(|i| serde_json::from_str::<Block<'_>>(i.get()).unwrap_or_default())
        .collect()
}

/// `JSON.stringify(arguments).length`; a missing value counts as `undefined` (9).
pub(crate) fn arguments_len(arguments: Option<&RawValue>) -> usize {
    match arguments {
        None => "undefined".len(),
        Some(a) => JsString::from_text(&compact(a.get())).len(),
    }
}

/// The text of a content value: a string as is, an array's text blocks joined with `sep`.
pub(crate) fn content_text(content: Option<&RawValue>, sep: &str) -> JsString {
    if let Some(s) = js(content) {
        return s;
    }
    let mut out: Vec<u16> = Vec::new();
    let sep: Vec<u16> = sep.encode_utf16().collect();
    let mut first = true;
    for b in blocks(content) {
        if b.kind().as_deref() == Some("text") {
            if !first {
                out.extend_from_slice(&sep);
            }
            first = false;
            out.extend(js(b.text).map(|s| s.0).unwrap_or_default());
        }
    }
    JsString(out)
}
