use super::*;

#[test]
fn ids_pi_makes_keep_the_rule() {
    for id in [
        "a1b2c3d4",
        "019a0b7e-6f1d-7c3a-9b2e-0123456789ab",
        "entry-0",
        "1",
        "ünïcödé id",
    ] {
        assert_eq!(check_id("entry", id), Ok(()), "{id}");
    }
    assert_eq!(check_id("entry", &"x".repeat(MAX_ID_BYTES)), Ok(()));
}

#[test]
fn long_empty_and_control_ids_are_refused_by_name() {
    assert!(matches!(
        check_id("session", ""),
        Err(IdError::Empty { what: "session" })
    ));
    let long = "x".repeat(MAX_ID_BYTES + 1);
    let err = check_id("session", &long).unwrap_err();
    assert!(matches!(err, IdError::TooLong { len, .. } if len == MAX_ID_BYTES + 1));
    let text = err.to_string();
    assert!(text.contains("257 bytes") && text.contains("256"), "{text}");
    assert!(
        text.len() < 200,
        "the message names the id shortened: {text}"
    );
    for (id, code, at) in [
        ("a\0b", 0, 1),
        ("\u{1b}[31m", 0x1b, 0),
        ("x\u{7f}", 0x7f, 1),
    ] {
        let err = check_id("entry", id).unwrap_err();
        assert_eq!(
            err,
            IdError::Control {
                what: "entry",
                shown: show_id(id),
                code,
                at
            }
        );
        assert!(
            !err.to_string().contains(['\0', '\u{1b}', '\u{7f}']),
            "{err}"
        );
    }
}
