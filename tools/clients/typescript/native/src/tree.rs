//! A large JSON answer made JS values here, without a JSON text in JS.
//!
//! A whole answer usually crosses to JS as text for one `JSON.parse` (`answer_text` in
//! lib.rs): for small answers nothing is cheaper. A large answer made mostly of long strings
//! (a context of file reads and tool results, a branch of images) pays twice that way: V8
//! copies the text into a string of its own, then `JSON.parse` scans every character of it
//! again to find where each string ends. Here the answer is parsed off node's thread
//! ([`Tree::parse`], on the thread of node's pool that ran the request) into a tree whose
//! strings point into the answer's bytes, and node's thread only makes the values
//! ([`Tree::into_js`]): one V8 string per JSON string, copied once from the answer.
//!
//! The values are those `JSON.parse` makes of the same text, with one exception it never
//! meets here: an answer with a key `__proto__` is left to `JSON.parse` (setting such a key
//! on an object made here would change its prototype instead), as is an answer whose values
//! are small on average (many small objects: V8's parser makes those faster than calls
//! through Node-API do). Numbers are read as `JSON.parse` reads them (the nearest double;
//! serde_json's `float_roundtrip`), except that `-0` becomes `0`.
//!
//! It owns no state and calls only serde_json and napi-rs's serde support.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use napi::bindgen_prelude::{JsObjectValue, Null, Object, ToNapiValue, Unknown};
use napi::{Env, JsStringLatin1};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;

/// Answers shorter than this are always parsed by `JSON.parse`.
pub const LEAST_BYTES: usize = 1 << 20;

/// The fewest bytes of answer per JSON value (on average) for it to be made here.
const BYTES_PER_VALUE: usize = 512;

/// An ASCII string at least this long is handed to V8 as an external string (Node-API 10): its
/// bytes stay where they are, outside V8's heap, which neither copies them again nor moves
/// them in its collections (a young string is copied by each of the first collections it
/// lives through).
const EXTERNAL_BYTES: usize = 1024;

/// How many answers were made JS values here.
static MADE: AtomicU64 = AtomicU64::new(0);

/// How many answers this process made JS values here.
pub fn made() -> u64 {
    MADE.load(Ordering::Relaxed)
}

/// One JSON value of the answer; a string is where it lies in the answer when it has no
/// escapes, or its unescaped text.
enum Node {
    Null,
    Bool(bool),
    Number(f64),
    Text(Range<usize>),
    Unescaped(Box<str>),
    Array(Vec<Node>),
    Object(Vec<(Node, Node)>),
}

/// A parsed answer: its text and the tree of its values.
pub struct Tree {
    text: String,
    root: Node,
}

/// Why an answer is left to `JSON.parse`.
#[derive(Debug)]
struct Declined(String);

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Declined {}

impl de::Error for Declined {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Declined(msg.to_string())
    }
}

impl Tree {
    /// The tree of `body` (JSON; JSON lines made one array when `lines`), or the body back
    /// when it is better left to `JSON.parse`: not valid UTF-8 or JSON, a key `__proto__`, a
    /// root that is neither an array nor an object, or values too small on average.
    pub fn parse(body: Vec<u8>, lines: bool) -> Result<Tree, Vec<u8>> {
        let text = match String::from_utf8(body) {
            Ok(text) => text,
            Err(e) => return Err(e.into_bytes()),
        };
        let mut count = 0usize;
        let parsed = if lines {
            let mut items = Vec::new();
            let mut failed = false;
            for line in text.split('\n').filter(|line| !line.trim().is_empty()) {
                match parse_one(&text, line, &mut count) {
                    Ok(node) => items.push(node),
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            (!failed).then_some(Node::Array(items))
        } else {
            parse_one(&text, &text, &mut count).ok()
        };
        match parsed {
            Some(root @ (Node::Array(_) | Node::Object(_)))
                if text.len() / count.max(1) >= BYTES_PER_VALUE =>
            {
                Ok(Tree { text, root })
            }
            _ => Err(text.into_bytes()),
        }
    }

    /// The JS values of the tree, made on node's thread.
    pub fn into_js(self, env: &Env) -> napi::Result<Unknown<'_>> {
        MADE.fetch_add(1, Ordering::Relaxed);
        make(env, &self.text, self.root)
    }
}

/// Parses `part` (a slice of `text`) whole, counting its values into `count`.
fn parse_one(text: &str, part: &str, count: &mut usize) -> Result<Node, Declined> {
    let mut de = serde_json::Deserializer::from_str(part);
    let node = Seed { text, count }
        .deserialize(&mut de)
        .map_err(|e| Declined(e.to_string()))?;
    de.end().map_err(|e| Declined(e.to_string()))?;
    Ok(node)
}

/// Reads one value of the answer's `text`: a string borrowed from it is kept as its place.
struct Seed<'t, 'c> {
    text: &'t str,
    count: &'c mut usize,
}

impl Seed<'_, '_> {
    fn next(&mut self) -> Seed<'_, '_> {
        Seed {
            text: self.text,
            count: &mut *self.count,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_, '_> {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        *self.count += 1;
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_, '_> {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v as f64))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v as f64))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Number(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Node, E> {
        let start = (v.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        Ok(Node::Text(start..start + v.len()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Unescaped(v.into()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Unescaped(v.into_boxed_str()))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self.next())? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Node, A::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(key) = map.next_key_seed(self.next())? {
            let proto = match &key {
                Node::Text(range) => self.text.get(range.clone()) == Some("__proto__"),
                Node::Unescaped(text) => &**text == "__proto__",
                _ => false,
            };
            if proto {
                return Err(de::Error::custom("a key __proto__"));
            }
            let value = map.next_value_seed(self.next())?;
            fields.push((key, value));
        }
        Ok(Node::Object(fields))
    }
}

/// The JS value of `node`, whose strings lie in `text`.
fn make<'e>(env: &'e Env, text: &str, node: Node) -> napi::Result<Unknown<'e>> {
    match node {
        Node::Null => Null.into_unknown(env),
        Node::Bool(v) => v.into_unknown(env),
        Node::Number(v) => v.into_unknown(env),
        Node::Text(range) => match text.get(range) {
            Some(slice) => string(env, slice, None),
            None => Err(napi::Error::from_reason(
                "a string outside the answer's text",
            )),
        },
        Node::Unescaped(owned) => {
            let owned = String::from(owned);
            string(env, &owned.clone(), Some(owned))
        }
        Node::Array(items) => {
            let length = u32::try_from(items.len())
                .map_err(|_| napi::Error::from_reason("an array too long for JS"))?;
            let mut array = env.create_array(length)?;
            for (index, item) in (0..length).zip(items) {
                array.set(index, make(env, text, item)?)?;
            }
            array.into_unknown(env)
        }
        Node::Object(fields) => {
            let mut object = Object::new(env)?;
            for (key, value) in fields {
                let key = make(env, text, key)?;
                let value = make(env, text, value)?;
                object.set_property(key, value)?;
            }
            object.into_unknown(env)
        }
    }
}

/// A JS string of `slice` (the text of `owned` when given): external when long and ASCII.
fn string<'e>(env: &'e Env, slice: &str, owned: Option<String>) -> napi::Result<Unknown<'e>> {
    if slice.len() >= EXTERNAL_BYTES && slice.is_ascii() {
        let bytes = owned.map_or_else(|| slice.as_bytes().to_vec(), String::into_bytes);
        return JsStringLatin1::from_data(env, bytes)?.into_unknown(env);
    }
    env.create_string(slice)?.into_unknown(env)
}
