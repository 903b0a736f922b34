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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_800_000_000_123), "2027-01-15T08:00:00.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(display(1_796_121_616_123), "2026-12-01 10:40:16.123Z");
    }
}
