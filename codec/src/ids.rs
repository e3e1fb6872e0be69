//! The rule for the session and entry ids grove takes in (docs/format.md, "Ids"): 1 to
//! [`MAX_ID_BYTES`] bytes of UTF-8 without control characters. Ids pi makes (8 hex
//! characters, UUIDs) keep it. It is checked where an id enters a store (a created or forked
//! session, an appended entry, an imported line), never on a read, so a store that already
//! holds an id outside it still opens and reads.

/// The longest session or entry id taken, in bytes of UTF-8.
pub const MAX_ID_BYTES: usize = 256;

/// The characters of an id shown in an error, at most.
const SHOWN_CHARS: usize = 40;

/// An id outside the rule: each variant names the id (shortened, escaped) and what breaks it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// The id is the empty string.
    #[error("{what} id must not be empty")]
    Empty {
        /// `"session"` or `"entry"`.
        what: &'static str,
    },
    /// The id is longer than [`MAX_ID_BYTES`].
    #[error("{what} id {shown} is {len} bytes long; ids are at most {MAX_ID_BYTES} bytes")]
    TooLong {
        /// `"session"` or `"entry"`.
        what: &'static str,
        /// The id's start, quoted and escaped ([`show_id`]).
        shown: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The id holds a control character (Unicode category Cc: U+0000 to U+001F, U+007F to
    /// U+009F).
    #[error(
        "{what} id {shown} holds the control character U+{code:04X} at byte {at}; ids are \
         printable text"
    )]
    Control {
        /// `"session"` or `"entry"`.
        what: &'static str,
        /// The id's start, quoted and escaped ([`show_id`]).
        shown: String,
        /// The character's code point.
        code: u32,
        /// Its byte offset in the id.
        at: usize,
    },
}

/// Checks that `id` (a `what` id: `"session"` or `"entry"`) keeps the rule.
pub fn check_id(what: &'static str, id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty { what });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong {
            what,
            shown: show_id(id),
            len: id.len(),
        });
    }
    match id.char_indices().find(|(_, c)| c.is_control()) {
        Some((at, c)) => Err(IdError::Control {
            what,
            shown: show_id(id),
            code: u32::from(c),
            at,
        }),
        None => Ok(()),
    }
}

/// An id as an error names it: quoted, control characters escaped, cut after 40 characters
/// (`…` marks the cut), so that a message stays one short line whatever the id holds.
pub fn show_id(id: &str) -> String {
    let mut shown: String = id.chars().take(SHOWN_CHARS).collect();
    let cut = shown.len() < id.len();
    shown = format!("{shown:?}");
    if cut {
        shown.insert(shown.len() - 1, '…');
    }
    shown
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
