//! Timestamps: pi writes `toISOString` form (`YYYY-MM-DDTHH:MM:SS.mmmZ`) and reads them with
//! JavaScript's `Date.parse`. grove parses that form exactly, plus a numeric UTC offset,
//! and formats only that form.

/// `Date.parse(t)` for the ISO-8601 forms grove supports; `None` stands for NaN.
pub fn parse_ms(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = t.get(r)?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 24 || minute > 59 || second > 59 || (hour == 24 && (minute | second) != 0) {
        return None;
    }
    let mut rest = &t[19..];
    let mut millis = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded: String = frac[..digits]
            .chars()
            .chain("000".chars())
            .take(3)
            .collect();
        millis = padded.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" => 0,
        r if (r.starts_with('+') || r.starts_with('-'))
            && r.len() == 6
            && r.as_bytes()[3] == b':' =>
        {
            let sign = if r.starts_with('-') { -1 } else { 1 };
            let h: i64 = num_in(r, 1..3)?;
            let m: i64 = num_in(r, 4..6)?;
            sign * (h * 60 + m)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_min * 60;
    Some(secs * 1000 + millis)
}

fn num_in(s: &str, r: std::ops::Range<usize>) -> Option<i64> {
    let part = s.get(r)?;
    if part.bytes().all(|c| c.is_ascii_digit()) {
        part.parse().ok()
    } else {
        None
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `new Date(ms).toISOString()` for years 0000-9999.
pub fn format_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (hh, mm, ss, mss) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    if !(0..=9999).contains(&y) {
        return format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{mss:03}Z");
    }
    // Every append formats a timestamp: the digits are written directly.
    let mut out = String::with_capacity(24);
    let fields = [
        (y, 4, '-'),
        (m, 2, '-'),
        (d, 2, 'T'),
        (hh, 2, ':'),
        (mm, 2, ':'),
    ];
    for (value, width, separator) in fields {
        push_digits(&mut out, value, width);
        out.push(separator);
    }
    push_digits(&mut out, ss, 2);
    out.push('.');
    push_digits(&mut out, mss, 3);
    out.push('Z');
    out
}

/// `value` (in `0 .. 10^width`) as `width` decimal digits.
fn push_digits(out: &mut String, value: i64, width: u32) {
    let mut div = 10i64.pow(width - 1);
    while div > 0 {
        let digit = (value / div % 10) as u8;
        out.push(char::from(b'0' + digit));
        div /= 10;
    }
}
