use super::*;

fn nested(prefix: &str, levels: usize) -> String {
    format!(
        "{prefix}{}{}}}",
        r#"{"a":"#.repeat(levels),
        "1".to_owned() + &"}".repeat(levels)
    )
}

#[test]
fn the_limit_counts_the_body_and_names_the_field() {
    // The body's object and 99 more levels: at the limit.
    assert_eq!(check(nested(r#"{"metadata":"#, 99).as_bytes(), 100), Ok(()));
    let err = check(nested(r#"{"metadata":"#, 100).as_bytes(), 100);
    assert_eq!(
        err,
        Err(TooDeep {
            path: "metadata.a.a.a…".into()
        })
    );
    let err = check(br#"{"x":1,"entries":[{},[[[]]]]}"#, 3);
    assert_eq!(
        err,
        Err(TooDeep {
            path: "entries[1][0]".into()
        })
    );
}

#[test]
fn brackets_in_strings_and_escapes_do_not_count() {
    let body = format!(r#"{{"k\"{{[":"{}\\","v":[1]}}"#, "[{".repeat(500));
    assert_eq!(check(body.as_bytes(), 2), Ok(()));
    assert!(check(b"[[[", 2).is_err());
    assert_eq!(check(b"not json {", 5), Ok(()));
}
