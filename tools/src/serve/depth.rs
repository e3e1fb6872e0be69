//! The nesting limit of JSON bodies (docs/api.md, "Input limits"): every JSON body the server
//! takes is scanned once, before it is parsed, and one that nests arrays and objects deeper
//! than [`MAX_JSON_DEPTH`] is refused naming where. The scan reads bytes only (strings and
//! their escapes are stepped over), so it costs a pass over the body and memory in the
//! limit's order; the parse that follows never meets serde_json's own recursion limit (128).

/// The deepest nesting of arrays and objects a JSON body may have, the body's own object
/// counting as 1.
pub const MAX_JSON_DEPTH: usize = 100;

/// Where a body nests too deep: the path to the value that passes the limit, as
/// `metadata.a.b[0]` (at most [`SHOWN_SEGMENTS`] segments, then `…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// The path from the body's root (empty: the body itself is the array nested too deep).
    pub path: String,
}

/// The path segments shown, at most.
const SHOWN_SEGMENTS: usize = 4;

/// One open array or object: for an object, the key of its current member (a byte range of
/// the body); for an array, the index of its current item.
#[derive(Debug, Clone, Copy)]
enum Open {
    Object(Option<(usize, usize)>),
    Array(usize),
}

/// Checks that `body` nests at most `limit` arrays and objects. Bytes that are not valid JSON
/// are left to the parse that follows: the scan only counts.
pub fn check(body: &[u8], limit: usize) -> Result<(), TooDeep> {
    let mut open: Vec<Open> = Vec::new();
    // In an object, whether the next string is a key.
    let mut key_next = false;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let start = i + 1;
                i = string_end(body, start);
                if key_next {
                    if let Some(Open::Object(key)) = open.last_mut() {
                        *key = Some((start, i.min(body.len())));
                    }
                    key_next = false;
                }
            }
            b'{' | b'[' => {
                if open.len() == limit {
                    return Err(TooDeep {
                        path: path(body, &open),
                    });
                }
                let object = body[i] == b'{';
                open.push(if object {
                    Open::Object(None)
                } else {
                    Open::Array(0)
                });
                key_next = object;
            }
            b'}' | b']' => {
                open.pop();
                key_next = false;
            }
            b',' => match open.last_mut() {
                Some(Open::Array(n)) => *n += 1,
                Some(Open::Object(_)) => key_next = true,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The index of the quote closing the string whose content starts at `start` (the body's
/// length when it is not closed).
fn string_end(body: &[u8], mut i: usize) -> usize {
    while i < body.len() {
        match body[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    body.len()
}

/// The path of the open values, as `a.b[0]`.
fn path(body: &[u8], open: &[Open]) -> String {
    let mut out = String::new();
    for (n, o) in open.iter().enumerate() {
        if n == SHOWN_SEGMENTS {
            out.push('…');
            break;
        }
        match o {
            Open::Object(Some((start, end))) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&String::from_utf8_lossy(&body[*start..*end]));
            }
            Open::Object(None) => {}
            Open::Array(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

#[cfg(test)]
mod tests;
