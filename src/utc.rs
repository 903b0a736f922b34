//! UTC calendar arithmetic for display, shared by the CLI, the review page and the fixture platform, so there
//! is one implementation and no time-zone data to ship.

/// A UTC date and time of day, to the millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcParts {
    /// Year.
    pub year: i64,
    /// Month, 1-12.
    pub month: i64,
    /// Day of the month, 1-31.
    pub day: i64,
    /// Hour, 0-23.
    pub hour: i64,
    /// Minute, 0-59.
    pub minute: i64,
    /// Second, 0-59.
    pub second: i64,
    /// Millisecond, 0-999.
    pub millis: i64,
}

/// Split milliseconds since the Unix epoch into UTC calendar parts (civil-from-days, Howard Hinnant's
/// algorithm; valid for every i64 day count that fits).
pub fn parts(ms: i64) -> UtcParts {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    UtcParts {
        year: yoe + era * 400 + i64::from(month <= 2),
        month,
        day,
        hour: rem / 3600,
        minute: rem % 3600 / 60,
        second: rem % 60,
        millis: ms.rem_euclid(1000),
    }
}

/// RFC 3339 with milliseconds, e.g. `2026-11-30T15:20:11.123Z`.
pub fn rfc3339(ms: i64) -> String {
    let p = parts(ms);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        p.year, p.month, p.day, p.hour, p.minute, p.second, p.millis
    )
}

/// For people: RFC 3339 with a space for the `T`, e.g. `2026-12-01 10:40:16.123Z` (human timelines; JSON keeps
/// the milliseconds).
pub fn display(ms: i64) -> String {
    rfc3339(ms).replacen('T', " ", 1)
}

/// Milliseconds since the Unix epoch of a UTC date and time written `YYYY-MM-DDTHH:MM:SS[.mmm]Z` (or with a
/// space for the `T`): what [`rfc3339`] and [`display`] print. Anything else (another offset, a field out of
/// range) is `None`; days-from-civil, the inverse of [`parts`].
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' || !matches!(b[b.len() - 1], b'Z' | b'z') {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let millis = match &s[19..s.len() - 1] {
        "" => 0,
        frac if frac.len() == 4 && frac.starts_with('.') => num(20..23)?,
        _ => return None,
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month)
        || day < 1
        || day > month_days[(month - 1) as usize]
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + hour * 3600 + minute * 60 + second) * 1000) + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_is_the_inverse_of_print() {
        for ms in [
            0,
            1,
            951_782_400_123,
            1_764_000_000_999,
            4_102_444_799_000,
            -86_400_000,
        ] {
            assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms), "{}", rfc3339(ms));
            assert_eq!(parse_rfc3339(&display(ms)), Some(ms));
        }
        assert_eq!(
            parse_rfc3339("2026-12-03T14:00:00Z"),
            Some(1_796_306_400_000)
        );
        for bad in [
            "2026-02-29T00:00:00Z",
            "2026-12-03T24:00:00Z",
            "2026-12-03T14:00:00+01:00",
            "tomorrow",
            "2026-12-03T14:00:00.5Z",
            "2026-13-01T00:00:00Z",
            "２026-12-03T14:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_800_000_000_123), "2027-01-15T08:00:00.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(display(1_796_121_616_123), "2026-12-01 10:40:16.123Z");
    }
}
