//! `ImportOptions::max_line_bytes`: a line past it fails the import with `LineTooLong`
//! (file, line, offset, limit) and nothing is imported, in lenient mode too.

use std::io::{BufReader, Read};
use std::path::Path;

use grove::{GroveError, ImportOptions, Store, Strictness};

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/w"}"#;

#[test]
fn a_line_past_the_limit_fails_the_import_and_names_the_file() {
    let store = Store::in_memory().unwrap();
    let entry = r#"{"type":"message","id":"e1","parentId":null,"timestamp":"2030-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;
    // Line 2 holds the entry, line 3 never ends.
    let prefix = format!("{HEADER}\n{entry}\n");
    for strictness in [Strictness::Strict, Strictness::Lenient] {
        let options = ImportOptions {
            strictness,
            source_path: Some("big.jsonl".into()),
            max_line_bytes: 4096,
            ..ImportOptions::default()
        };
        let endless =
            std::io::Cursor::new(prefix.clone().into_bytes()).chain(std::io::repeat(b'x'));
        let e = store
            .import_reader(BufReader::new(endless), options)
            .unwrap_err();
        assert!(
            matches!(
                &e,
                GroveError::LineTooLong { file: Some(f), line: 3, byte_offset, limit: 4096 }
                    if f == Path::new("big.jsonl") && *byte_offset == prefix.len() as u64
            ),
            "{e:?}"
        );
        assert_eq!(e.code(), "invalid_entry");
        assert_eq!(e.name(), "LineTooLong");
        let text = e.to_string();
        assert!(
            text.contains("big.jsonl") && text.contains("line 3"),
            "{text}"
        );
        assert!(store.sessions().unwrap().is_empty(), "nothing imported");
    }
}

#[test]
fn the_default_accepts_long_lines() {
    assert_eq!(
        ImportOptions::default().max_line_bytes,
        grove::codec::reader::DEFAULT_MAX_LINE_BYTES
    );
    let store = Store::in_memory().unwrap();
    let entry = format!(
        r#"{{"type":"message","id":"e1","parentId":null,"timestamp":"2030-01-01T00:00:01.000Z","message":{{"role":"user","content":"{}","timestamp":1}}}}"#,
        "y".repeat(3 << 20)
    );
    let input = format!("{HEADER}\n{entry}\n");
    let report = store
        .import_reader(input.as_bytes(), ImportOptions::default())
        .unwrap();
    assert_eq!(report.entries, 1);
}
