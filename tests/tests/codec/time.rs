//! `grove_codec::time`: `Date.parse` of ISO-8601 timestamps and `toISOString` (spec §2.7).

use grove_codec::time::{format_ms, parse_ms};

const DAY: i64 = 86_400_000;

#[test]
fn parses_to_iso_string_form() {
    assert_eq!(parse_ms("1970-01-01T00:00:00.000Z"), Some(0));
    assert_eq!(parse_ms("1970-01-01T00:00:00.001Z"), Some(1));
    // 2030-01-21: 60 years (15 leap days) and 20 days after the epoch.
    assert_eq!(
        parse_ms("2030-01-21T00:00:00.000Z"),
        Some((60 * 365 + 15 + 20) * DAY)
    );
    assert_eq!(
        parse_ms("2030-01-21T00:00:00.000Z"),
        Some(1_895_184_000_000)
    );
    assert_eq!(
        parse_ms("2025-06-01T12:00:01.000Z"),
        Some(1_748_779_201_000)
    );
    assert_eq!(parse_ms("2000-02-29T23:59:59.999Z"), Some(951_868_799_999));
    assert_eq!(parse_ms("1969-12-31T23:59:59.999Z"), Some(-1));
    assert_eq!(
        parse_ms("0000-01-01T00:00:00.000Z"),
        Some(-62_167_219_200_000)
    );
    assert_eq!(
        parse_ms("9999-12-31T23:59:59.999Z"),
        Some(253_402_300_799_999)
    );
}

#[test]
fn parses_the_other_forms_date_parse_accepts() {
    let base = parse_ms("2030-01-21T00:00:00.000Z").unwrap();
    // No fraction, and fractions of other lengths (V8 pads / truncates to ms).
    assert_eq!(parse_ms("2030-01-21T00:00:00Z"), Some(base));
    assert_eq!(parse_ms("2030-01-21T00:00:00.5Z"), Some(base + 500));
    assert_eq!(parse_ms("2030-01-21T00:00:00.12Z"), Some(base + 120));
    assert_eq!(parse_ms("2030-01-21T00:00:00.1239Z"), Some(base + 123));
    // 24:00:00 is the end of the day.
    assert_eq!(parse_ms("2030-01-20T24:00:00.000Z"), Some(base));
}

#[test]
fn applies_numeric_utc_offsets() {
    let base = parse_ms("2030-01-21T00:00:00.000Z").unwrap();
    assert_eq!(parse_ms("2030-01-21T00:00:00.000+00:00"), Some(base));
    assert_eq!(parse_ms("2030-01-21T00:00:00.000-00:00"), Some(base));
    assert_eq!(parse_ms("2030-01-21T02:00:00.000+02:00"), Some(base));
    assert_eq!(parse_ms("2030-01-20T19:00:00.000-05:00"), Some(base));
    assert_eq!(parse_ms("2030-01-21T05:30:00.000+05:30"), Some(base));
    assert_eq!(
        parse_ms("2030-01-21T00:00:00+01:00"),
        Some(base - 3_600_000)
    );
    assert_eq!(
        parse_ms("2030-01-21T00:00:00.250-00:45"),
        Some(base + 45 * 60_000 + 250)
    );
}

#[test]
fn invalid_dates_are_nan() {
    for bad in [
        "",
        "not a date",
        "2030-01-21",
        "2030-01-21T00:00:00",
        "2030-01-21T00:00:00.000",
        "2030-01-21 00:00:00.000Z",
        "2030/01/21T00:00:00.000Z",
        "2030-1-21T00:00:00.000Z",
        "20300-01-21T00:00:00.000Z",
        "2030-00-21T00:00:00.000Z",
        "2030-13-01T00:00:00.000Z",
        "2030-01-00T00:00:00.000Z",
        "2030-01-32T00:00:00.000Z",
        "2030-04-31T00:00:00.000Z",
        "2029-02-29T00:00:00.000Z",
        "1900-02-29T00:00:00.000Z",
        "2030-01-21T25:00:00.000Z",
        "2030-01-21T24:00:01.000Z",
        "2030-01-21T24:01:00.000Z",
        "2030-01-21T00:60:00.000Z",
        "2030-01-21T00:00:60.000Z",
        "2030-01-21T00:00:00.Z",
        "2030-01-21T00:00:00.000ZZ",
        "2030-01-21T00:00:00.000X",
        "2030-01-21T00:00:00.000+0100",
        "2030-01-21T00:00:00.000+1:00",
        "2030-01-21T00:00:00.000+aa:00",
        "+2030-01-21T00:00:00.000Z",
        "-030-01-21T00:00:00.000Z",
        "2030-01-2aT00:00:00.000Z",
        "2030-01-21T00:00:00.000Z ",
    ] {
        assert_eq!(parse_ms(bad), None, "{bad:?} must not parse");
    }
}

#[test]
fn leap_years_follow_the_gregorian_rule() {
    for (year, leap) in [
        (2000, true),
        (2024, true),
        (2100, false),
        (1900, false),
        (2400, true),
        (2023, false),
    ] {
        let feb29 = format!("{year:04}-02-29T00:00:00.000Z");
        assert_eq!(parse_ms(&feb29).is_some(), leap, "{feb29}");
        let mar1 = parse_ms(&format!("{year:04}-03-01T00:00:00.000Z")).unwrap();
        let feb28 = parse_ms(&format!("{year:04}-02-28T00:00:00.000Z")).unwrap();
        assert_eq!(mar1 - feb28, if leap { 2 * DAY } else { DAY }, "{year}");
    }
}

#[test]
fn non_ascii_input_never_panics() {
    // Multi-byte characters placed where the parser slices at fixed byte offsets.
    for odd in [
        "2030-01-21T00:00:00+0é00",
        "2030-01-21T00:00:00+é:00",
        "2030-01-21T00:00:00+00:é",
        "2030-01-21T00:00:00.é",
        "2030-01-21T00:00:00é",
        "2030-01-21T00:00:0é",
        "é030-01-21T00:00:00.000Z",
        "2030-01-21T00:00:00.000+00:0😀",
        "😀😀😀😀😀😀😀😀😀😀",
    ] {
        assert_eq!(parse_ms(odd), None, "{odd:?}");
    }
}

#[test]
fn format_ms_writes_to_iso_string() {
    assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(format_ms(-1), "1969-12-31T23:59:59.999Z");
    assert_eq!(format_ms(1_895_184_000_000), "2030-01-21T00:00:00.000Z");
    assert_eq!(format_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    assert_eq!(format_ms(1_748_779_201_123), "2025-06-01T12:00:01.123Z");
    assert_eq!(format_ms(-62_167_219_200_000), "0000-01-01T00:00:00.000Z");
    assert_eq!(format_ms(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
}

#[test]
fn format_then_parse_is_identity_over_a_range() {
    // Steps that are prime-ish so every field takes many values, across 0000..=9999.
    let lo = parse_ms("0000-01-01T00:00:00.000Z").unwrap();
    let hi = parse_ms("9999-12-31T23:59:59.999Z").unwrap();
    let mut ms = lo;
    let mut n = 0;
    while ms <= hi {
        let text = format_ms(ms);
        assert_eq!(text.len(), 24, "{text}");
        assert_eq!(parse_ms(&text), Some(ms), "{text}");
        ms += 7_919_993_777;
        n += 1;
    }
    assert!(n > 30_000);
    // Every day across several leap cycles, at a non-zero time of day.
    let start = parse_ms("1895-12-30T13:14:15.678Z").unwrap();
    for day in 0..(400 * 366) {
        let ms = start + day * DAY;
        assert_eq!(parse_ms(&format_ms(ms)), Some(ms), "{}", format_ms(ms));
    }
}

#[test]
fn parse_then_format_is_identity_for_every_day_of_a_leap_cycle() {
    let mut count = 0;
    for year in [1600, 1700, 1999, 2000, 2024, 2100] {
        for month in 1..=12 {
            for day in 1..=31 {
                let text = format!("{year:04}-{month:02}-{day:02}T23:59:59.999Z");
                if let Some(ms) = parse_ms(&text) {
                    assert_eq!(format_ms(ms), text);
                    count += 1;
                }
            }
        }
    }
    // 6 years, 3 of them leap (1600, 2000, 2024).
    assert_eq!(count, 6 * 365 + 3);
}
