//! A large JSON answer made JS values here, without a JSON text in JS.
//!
//! A whole answer usually crosses to JS as text for one `JSON.parse` (`answer_text` in
//! lib.rs): for small answers nothing is cheaper. A large answer made mostly of long strings
//! (a context of file reads and tool results, a branch of images) pays twice that way: V8
//! copies the text into a string of its own, then `JSON.parse` scans every character of it
//! again to find where each string ends. Here the answer is parsed ([`Tree::parse`]) into a
//! tree whose strings point into the answer's bytes, and the values are made from it
//! ([`Tree::into_js`]): one JS string per JSON string, copied once from the answer.
//!
//! A context comes in pieces (`grove_tools::embed::Pieces`): each long message a piece of its
//! own, the rest around them. The pieces are parsed each on its own, the rest with a marker
//! string in the place of each (the marker must occur exactly once per piece, or the answer is
//! joined and parsed whole), and each piece is let go as soon as its values are made, so the
//! memory it held is where the next piece's strings go: the answer is never copied into one
//! buffer, and the process holds about the result and the pieces not yet made.
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

use grove_tools::embed::Pieces;
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

/// How many answers were made JS values here: parsed whole, and in pieces.
static MADE: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// How many answers this process made JS values here: parsed whole, and in pieces.
pub fn made() -> [u64; 2] {
    [
        MADE[0].load(Ordering::Relaxed),
        MADE[1].load(Ordering::Relaxed),
    ]
}

/// What stands for a piece in the rest of the answer: a string no answer of grove's holds (a
/// NUL first); were one to hold it, there would be more of them than pieces, and the answer is
/// then parsed whole.
const MARKER: &str = r"\u0000grove-piece";
const MARKER_VALUE: &str = "\0grove-piece";

/// One JSON value of the answer; a string is where it lies in one of the answer's texts when
/// it has no escapes, or its unescaped text.
enum Node {
    Null,
    Bool(bool),
    Number(f64),
    Text(usize, Range<usize>),
    Unescaped(Box<str>),
    Array(Vec<Node>),
    Object(Vec<(Node, Node)>),
    /// The value of a piece (of the text of that index), let go once made.
    Piece(usize, Box<Node>),
}

/// A parsed answer: its texts (the answer, or the rest and its pieces) and the tree of its
/// values.
pub struct Tree {
    texts: Vec<Vec<u8>>,
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
    /// The tree of an answer (JSON; JSON lines made one array when `lines`), or its bytes in
    /// one buffer when it is better left to `JSON.parse`: not valid UTF-8 or JSON, a key
    /// `__proto__`, a root that is neither an array nor an object, or values too small on
    /// average.
    pub fn parse(answer: Pieces, lines: bool) -> Result<Tree, Vec<u8>> {
        if lines || !answer.values.contains(&true) {
            return Self::whole(answer.joined(), lines);
        }
        match Self::piecewise(&answer) {
            Some((rest, root)) => {
                let mut texts = vec![rest];
                texts.extend(
                    answer
                        .pieces
                        .into_iter()
                        .zip(answer.values)
                        .filter_map(|(piece, value)| value.then_some(piece)),
                );
                Ok(Tree { texts, root })
            }
            None => Self::whole(answer.joined(), lines),
        }
    }

    fn whole(body: Vec<u8>, lines: bool) -> Result<Tree, Vec<u8>> {
        let Ok(text) = std::str::from_utf8(&body) else {
            return Err(body);
        };
        let mut count = 0usize;
        let mut none = Vec::new();
        let mut reader = Reader {
            index: 0,
            count: &mut count,
            pieces: &mut none,
            taken: 0,
        };
        let parsed = if lines {
            let mut items = Vec::new();
            let mut failed = false;
            for line in text.split('\n').filter(|line| !line.trim().is_empty()) {
                match reader.parse(text, line) {
                    Ok(node) => items.push(node),
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            (!failed).then_some(Node::Array(items))
        } else {
            reader.parse(text, text).ok()
        };
        match parsed {
            Some(root) if fit(&root, body.len(), count) => Ok(Tree {
                texts: vec![body],
                root,
            }),
            _ => Err(body),
        }
    }

    /// The rest (its pieces marked) and the tree of an answer in pieces, or None.
    fn piecewise(answer: &Pieces) -> Option<(Vec<u8>, Node)> {
        let mut rest = Vec::new();
        let mut count = 0usize;
        let mut pieces = Vec::new();
        let mut index = 0;
        for (piece, &value) in answer.pieces.iter().zip(&answer.values) {
            if !value {
                rest.extend_from_slice(piece);
                continue;
            }
            index += 1;
            let text = std::str::from_utf8(piece).ok()?;
            let mut none = Vec::new();
            let mut reader = Reader {
                index,
                count: &mut count,
                pieces: &mut none,
                taken: 0,
            };
            pieces.push(Some(reader.parse(text, text).ok()?));
            rest.push(b'"');
            rest.extend_from_slice(MARKER.as_bytes());
            rest.push(b'"');
        }
        let text = std::str::from_utf8(&rest).ok()?;
        let mut reader = Reader {
            index: 0,
            count: &mut count,
            pieces: &mut pieces,
            taken: 0,
        };
        let root = reader.parse(text, text).ok()?;
        let total = answer.pieces.iter().map(Vec::len).sum();
        (reader.taken == index && fit(&root, total, count)).then_some((rest, root))
    }

    /// The JS values of the tree, made on node's thread.
    pub fn into_js(mut self, env: &Env) -> napi::Result<Unknown<'_>> {
        MADE[usize::from(self.texts.len() > 1)].fetch_add(1, Ordering::Relaxed);
        make(env, &mut self.texts, self.root)
    }
}

/// Whether a tree is one to make here: an array or an object of `bytes` in `count` values,
/// large enough on average.
fn fit(root: &Node, bytes: usize, count: usize) -> bool {
    matches!(root, Node::Array(_) | Node::Object(_)) && bytes / count.max(1) >= BYTES_PER_VALUE
}

/// What a parse of one text needs: the text's index, the count of values read so far, and the
/// trees of the pieces its markers stand for (the rest's parse only), taken in order.
struct Reader<'r> {
    index: usize,
    count: &'r mut usize,
    pieces: &'r mut Vec<Option<Node>>,
    taken: usize,
}

impl Reader<'_> {
    /// Parses `part` (a slice of `text`) whole.
    fn parse(&mut self, text: &str, part: &str) -> Result<Node, Declined> {
        let mut de = serde_json::Deserializer::from_str(part);
        let node = Seed { text, reader: self }
            .deserialize(&mut de)
            .map_err(|e| Declined(e.to_string()))?;
        de.end().map_err(|e| Declined(e.to_string()))?;
        Ok(node)
    }

    /// The node of a string: a marked piece's tree, or the string.
    fn string(&mut self, node: Node) -> Result<Node, Declined> {
        if self.pieces.is_empty() {
            return Ok(node);
        }
        let marker = match &node {
            Node::Unescaped(value) => &**value == MARKER_VALUE,
            _ => false,
        };
        if !marker {
            return Ok(node);
        }
        let taken = self.taken;
        let piece = self
            .pieces
            .get_mut(taken)
            .and_then(Option::take)
            .ok_or_else(|| Declined("more markers than pieces".into()))?;
        self.taken += 1;
        Ok(Node::Piece(taken + 1, Box::new(piece)))
    }
}

/// Reads one value of `text` (one of the answer's texts): a string borrowed from it is kept as
/// its place.
struct Seed<'t, 'r, 'x> {
    text: &'t str,
    reader: &'r mut Reader<'x>,
}

impl<'x> Seed<'_, '_, 'x> {
    fn next(&mut self) -> Seed<'_, '_, 'x> {
        Seed {
            text: self.text,
            reader: &mut *self.reader,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_, '_, '_> {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        *self.reader.count += 1;
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_, '_, '_> {
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
        Ok(Node::Text(self.reader.index, start..start + v.len()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        self.reader
            .string(Node::Unescaped(v.into()))
            .map_err(E::custom)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        self.reader
            .string(Node::Unescaped(v.into_boxed_str()))
            .map_err(E::custom)
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
                Node::Text(_, range) => self.text.get(range.clone()) == Some("__proto__"),
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

/// The JS value of `node`, whose strings lie in `texts`; a piece's text is let go once its
/// values are made.
fn make<'e>(env: &'e Env, texts: &mut [Vec<u8>], node: Node) -> napi::Result<Unknown<'e>> {
    match node {
        Node::Null => Null.into_unknown(env),
        Node::Bool(v) => v.into_unknown(env),
        Node::Number(v) => v.into_unknown(env),
        Node::Text(index, range) => {
            let slice = texts
                .get(index)
                .and_then(|text| text.get(range))
                .and_then(|bytes| std::str::from_utf8(bytes).ok())
                .ok_or_else(|| napi::Error::from_reason("a string outside the answer's text"))?;
            match external(slice) {
                true => {
                    JsStringLatin1::from_data(env, slice.as_bytes().to_vec())?.into_unknown(env)
                }
                false => env.create_string(slice)?.into_unknown(env),
            }
        }
        Node::Unescaped(owned) => match external(&owned) {
            true => JsStringLatin1::from_data(env, owned.into_boxed_bytes().into_vec())?
                .into_unknown(env),
            false => env.create_string(&owned)?.into_unknown(env),
        },
        Node::Array(items) => {
            let length = u32::try_from(items.len())
                .map_err(|_| napi::Error::from_reason("an array too long for JS"))?;
            let mut array = env.create_array(length)?;
            for (index, item) in (0..length).zip(items) {
                array.set(index, make(env, texts, item)?)?;
            }
            array.into_unknown(env)
        }
        Node::Object(fields) => {
            let mut object = Object::new(env)?;
            for (key, value) in fields {
                let key = make(env, texts, key)?;
                let value = make(env, texts, value)?;
                object.set_property(key, value)?;
            }
            object.into_unknown(env)
        }
        Node::Piece(index, root) => {
            let value = make(env, texts, *root)?;
            if let Some(text) = texts.get_mut(index) {
                *text = Vec::new();
            }
            Ok(value)
        }
    }
}

/// Whether a string is made an external one: long and ASCII.
fn external(text: &str) -> bool {
    text.len() >= EXTERNAL_BYTES && text.is_ascii()
}
