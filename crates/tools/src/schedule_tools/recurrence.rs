//! The runs of a recurrence (a cron expression read by `croner`) in the user's time zone, and what
//! a DST change does to them.
//!
//! A recurrence whose hour field is every hour (`*/15 * * * *`, `0 * * * *`) keeps its rhythm in
//! real time: a repeated hour on the autumn fall-back is run through twice, and an hour the spring
//! change skips is simply not there. Any other recurrence lists wall-clock times (`0 9 * * *`,
//! `0 */2 * * *`, `30 1,13 * * *`), and each listed time runs once a day: in a repeated hour only
//! on its first pass; a listed time the spring change skips (02:30 when clocks jump from 02:00 to
//! 03:00) runs at the first instant after the gap (03:00), once however many listed times fell in
//! it.

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// Hours of the day; an hour field with all of them keeps a real-time rhythm.
const HOURS_PER_DAY: usize = 24;

/// Most listed times a search steps over: the times of one repeated range that already ran on its
/// first pass (at most one per second of a repeated hour), with room to spare.
const MAX_STEPS: usize = 2 * 3600 + 2;

/// Longest DST gap looked across, in minutes.
const MAX_GAP_MINUTES: i64 = 24 * 60;

/// A cron expression of five fields, or six with seconds first.
pub(crate) fn cron(text: &str) -> Result<Cron, croner::errors::CronError> {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(text)
}

/// The first run of `cron` in `tz` strictly after `after`.
pub(crate) fn next_of(cron: &Cron, tz: Tz, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if cron.pattern.hours.values().len() >= HOURS_PER_DAY {
        return cron
            .find_next_occurrence(&after.with_timezone(&tz), false)
            .ok()
            .map(|t| t.with_timezone(&Utc));
    }
    // Listed wall-clock times: searched on the wall clock, each then placed in real time.
    let mut wall = after.with_timezone(&tz).naive_local();
    for _ in 0..MAX_STEPS {
        wall = cron.find_next_occurrence(&wall, false).ok()?;
        let at = match tz.from_local_datetime(&wall) {
            LocalResult::Single(at) | LocalResult::Ambiguous(at, _) => at,
            LocalResult::None => end_of_gap(tz, wall)?,
        };
        let at = at.with_timezone(&Utc);
        // Not after `after`: the first pass of a repeated time, which has run already.
        if at > after {
            return Some(at);
        }
    }
    None
}

/// The first instant after the DST gap that `wall` (a wall-clock time that does not exist in
/// `tz`) falls in.
fn end_of_gap(tz: Tz, wall: NaiveDateTime) -> Option<DateTime<Tz>> {
    let minute = wall.with_second(0)?.with_nanosecond(0)?;
    (1..=MAX_GAP_MINUTES).find_map(|m| {
        tz.from_local_datetime(&(minute + Duration::minutes(m)))
            .earliest()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    /// The first runs of `recurrence` in `zone` after `from` are `expected` (UTC).
    fn check(recurrence: &str, zone: &str, from: &str, expected: &[&str]) {
        let (cron, tz) = (cron(recurrence).unwrap(), Tz::from_str(zone).unwrap());
        let mut at = utc(from);
        let mut runs = Vec::new();
        for _ in expected {
            at = next_of(&cron, tz, at).unwrap();
            runs.push(at);
        }
        let expected: Vec<DateTime<Utc>> = expected.iter().map(|t| utc(t)).collect();
        assert_eq!(runs, expected, "{recurrence} in {zone} from {from}");
    }

    #[test]
    fn a_repeated_hour_runs_each_listed_time_once() {
        // Berlin falls back on 2026-10-25: 03:00 CEST (+2) becomes 02:00 CET (+1). 02:00 runs on
        // its first pass only; 04:00 CET is three hours later.
        check(
            "0 */2 * * *",
            "Europe/Berlin",
            "2026-10-24T21:00:00Z",
            &[
                "2026-10-24T22:00:00Z",
                "2026-10-25T00:00:00Z",
                "2026-10-25T03:00:00Z",
                "2026-10-25T05:00:00Z",
            ],
        );
        // New York falls back on 2026-11-01: 02:00 EDT (−4) becomes 01:00 EST (−5).
        check(
            "0 1-23/2 * * *",
            "America/New_York",
            "2026-11-01T03:30:00Z",
            &[
                "2026-11-01T05:00:00Z",
                "2026-11-01T08:00:00Z",
                "2026-11-01T10:00:00Z",
            ],
        );
        check(
            "0 */2 * * *",
            "America/New_York",
            "2026-11-01T03:30:00Z",
            &["2026-11-01T04:00:00Z", "2026-11-01T07:00:00Z"],
        );
        // Asked during the second pass, a time of the repeated hour has run already.
        check(
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T06:10:00Z",
            &["2026-11-02T06:30:00Z"],
        );
    }

    #[test]
    fn an_every_hour_rhythm_keeps_real_time_through_a_repeated_hour() {
        check(
            "0 * * * *",
            "Europe/Berlin",
            "2026-10-24T23:30:00Z",
            &[
                "2026-10-25T00:00:00Z",
                "2026-10-25T01:00:00Z",
                "2026-10-25T02:00:00Z",
            ],
        );
    }

    #[test]
    fn a_skipped_time_runs_once_when_the_clocks_jump() {
        // Berlin springs forward on 2026-03-29: 02:00 CET (+1) becomes 03:00 CEST (+2). 02:00
        // does not exist: it runs at 03:00 CEST, and 04:00 on time.
        check(
            "0 */2 * * *",
            "Europe/Berlin",
            "2026-03-28T22:30:00Z",
            &[
                "2026-03-28T23:00:00Z",
                "2026-03-29T01:00:00Z",
                "2026-03-29T02:00:00Z",
                "2026-03-29T04:00:00Z",
            ],
        );
        // 02:00 skipped and 03:00 listed: one run at 03:00, not two at one instant.
        check(
            "0 2,3 * * *",
            "Europe/Berlin",
            "2026-03-28T12:00:00Z",
            &["2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"],
        );
        // Two listed times in the gap: one run at its end.
        check(
            "0,30 2 * * *",
            "America/New_York",
            "2026-03-08T05:00:00Z",
            &["2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"],
        );
        // Every hour: the hour that does not exist is not run.
        check(
            "0 * * * *",
            "Europe/Berlin",
            "2026-03-28T23:30:00Z",
            &["2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z"],
        );
    }
}
