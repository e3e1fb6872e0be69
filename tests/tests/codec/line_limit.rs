//! The reader's line limit: an endless or huge line stops the read with `LineTooLong` (line,
//! byte offset, limit) before more than the limit is read into memory. (Issue 16 §5: `grove
//! import /dev/zero` grew to 6.2 GB in 9 s.)

use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use grove_codec::reader::{JsonlReader, Strictness, DEFAULT_MAX_LINE_BYTES};
use grove_codec::CodecError;

use super::support::{counter_ids, entry, HEADER};

/// An endless stream of `b'0'` (no newline ever), counting the bytes it hands out.
struct Zeros {
    given: Arc<AtomicU64>,
}

impl Read for Zeros {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        buf.iter_mut().for_each(|b| *b = b'0');
        self.given.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
}

/// `prefix` and then endless zeros.
fn endless_after(prefix: &[u8]) -> (impl Read, Arc<AtomicU64>) {
    let given = Arc::new(AtomicU64::new(0));
    let zeros = Zeros {
        given: Arc::clone(&given),
    };
    (std::io::Cursor::new(prefix.to_vec()).chain(zeros), given)
}

fn too_long<T: std::fmt::Debug>(r: Result<T, CodecError>) -> (u64, u64, usize) {
    match r {
        Err(CodecError::LineTooLong {
            line,
            byte_offset,
            limit,
        }) => (line, byte_offset, limit),
        other => panic!("expected LineTooLong, got {other:?}"),
    }
}

const LIMIT: usize = 1 << 20;
/// The input's buffer: the reader takes what the buffer holds, one buffer at a time.
const BUF: usize = 64 * 1024;

#[test]
fn an_endless_first_line_stops_at_the_limit() {
    for strictness in [Strictness::Strict, Strictness::Lenient] {
        let (input, given) = endless_after(b"");
        let input = BufReader::with_capacity(BUF, input);
        let r = JsonlReader::with_max_line_bytes(input, strictness, counter_ids("x"), LIMIT);
        assert_eq!(too_long(r.map(|_| ())), (1, 0, LIMIT));
        // At most the limit and one buffer were read: nothing more can have been held.
        let read = given.load(Ordering::Relaxed);
        assert!(
            read <= (LIMIT + BUF) as u64,
            "{read} bytes read for a {LIMIT}-byte limit"
        );
    }
}

#[test]
fn an_endless_later_line_names_its_line_and_offset() {
    let e1 = entry("e1", None);
    let prefix = format!("{HEADER}\n{e1}\n\n");
    let (input, given) = endless_after(prefix.as_bytes());
    let input = BufReader::with_capacity(BUF, input);
    let mut r =
        JsonlReader::with_max_line_bytes(input, Strictness::Lenient, counter_ids("x"), LIMIT)
            .unwrap();
    assert_eq!(r.next_line().unwrap().unwrap().envelope.id, "e1");
    // Line 3 is blank; line 4 never ends.
    assert_eq!(too_long(r.next_line()), (4, prefix.len() as u64, LIMIT));
    assert!(given.load(Ordering::Relaxed) <= (LIMIT + BUF) as u64);
}

#[test]
fn a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_not() {
    let e1 = entry("e1", None);
    let e2 = entry("e2", Some("e1"));
    let input = format!("{HEADER}\n{e1}\n{e2}\n");
    // The longest line, its LF not counted, is the limit: accepted, with or without a CR.
    let limit = HEADER.len().max(e1.len()).max(e2.len());
    let mut r = JsonlReader::with_max_line_bytes(
        input.as_bytes(),
        Strictness::Strict,
        counter_ids("x"),
        limit,
    )
    .unwrap();
    let mut ids = Vec::new();
    while let Some(line) = r.next_line().unwrap() {
        ids.push(line.envelope.id);
    }
    assert_eq!(ids, ["e1", "e2"]);

    // e2 one byte longer (a space inside the object) is refused, naming line 3 and where it
    // starts; e1 before it was read.
    let long = e2.replacen('{', "{ ", 1);
    let input = format!("{HEADER}\n{e1}\n{long}\n");
    let mut r = JsonlReader::with_max_line_bytes(
        input.as_bytes(),
        Strictness::Lenient,
        counter_ids("x"),
        long.len() - 1,
    )
    .unwrap();
    assert_eq!(r.next_line().unwrap().unwrap().envelope.id, "e1");
    let offset = (HEADER.len() + e1.len() + 2) as u64;
    assert_eq!(too_long(r.next_line()), (3, offset, long.len() - 1));

    // A final line without LF counts the same.
    let input = format!("{HEADER}\n{long}");
    let mut r = JsonlReader::with_max_line_bytes(
        input.as_bytes(),
        Strictness::Strict,
        counter_ids("x"),
        long.len() - 1,
    )
    .unwrap();
    assert_eq!(too_long(r.next_line()).0, 2);
}

#[test]
fn the_default_limit_is_far_above_real_lines() {
    assert_eq!(DEFAULT_MAX_LINE_BYTES, 256 << 20);
    // `new` uses it: a 2 MB line (a large tool result) reads.
    let big = format!(
        r#"{{"type":"message","id":"e1","parentId":null,"timestamp":"2030-01-01T00:00:01.000Z","message":{{"role":"user","content":"{}","timestamp":1}}}}"#,
        "a".repeat(2 << 20)
    );
    let input = format!("{HEADER}\n{big}\n");
    let mut r = JsonlReader::new(input.as_bytes(), Strictness::Strict, counter_ids("x")).unwrap();
    assert_eq!(r.next_line().unwrap().unwrap().text.len(), big.len());
}
