//! What a schedule's `when` means: an RFC 3339 time (or a local `YYYY-MM-DD HH:MM` in the user's
//! time zone), a delay (`in 20 minutes`), or a recurrence — a cron expression (`0 9 * * 1-5`,
//! read by `croner`) or a phrase (`every day at 09:00`, `every monday at 8:30`,
//! `every weekday at 7:00`, `every 15 minutes`, `every hour`), which becomes one. Recurrences
//! are read in the user's IANA time zone (`chrono-tz`), so a daily 09:00 stays 09:00 local
//! across a DST change.

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// A parsed `when`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct When {
    pub first_run: DateTime<Utc>,
    /// The cron expression of a recurrence; `None` for a one-off.
    pub recurrence: Option<String>,
}

/// The hint every refusal ends with.
const FORMS: &str = "use an RFC 3339 time (2026-12-04T09:00:00+01:00), a delay (in 20 minutes), \
                     or a recurrence (every day at 09:00, or a cron expression like 0 9 * * 1-5)";

/// The user's time zone: `configured` (an IANA name) if set, else the host's, else UTC.
pub fn resolve_timezone(configured: Option<&str>) -> Result<Tz, String> {
    match configured {
        Some(name) => Tz::from_str(name).map_err(|_| {
            format!("unknown time zone `{name}`: use an IANA name such as Europe/Paris")
        }),
        None => Ok(iana_time_zone::get_timezone()
            .ok()
            .and_then(|name| Tz::from_str(&name).ok())
            .unwrap_or(Tz::UTC)),
    }
}

/// Reads `text` at `now` in `tz`. A one-off must be in the future; a recurrence's runs must be
/// at least `min_interval` apart.
pub fn parse_when(
    text: &str,
    now: DateTime<Utc>,
    tz: Tz,
    min_interval: Duration,
) -> Result<When, String> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    if let Some(delay) = lower.strip_prefix("in ") {
        let after = delay_of(delay)?;
        return Ok(When {
            first_run: now + after,
            recurrence: None,
        });
    }
    if let Some(at) = absolute(text, tz) {
        if at <= now {
            return Err(format!(
                "{text} is in the past: give a time in the future ({FORMS})"
            ));
        }
        return Ok(When {
            first_run: at,
            recurrence: None,
        });
    }
    let cron_text = match lower.strip_prefix("every ") {
        Some(phrase) => phrase_to_cron(phrase)?,
        None => text.to_owned(),
    };
    let cron =
        cron(&cron_text).map_err(|_| format!("`{text}` is not a time I can read: {FORMS}"))?;
    let first = next_of(&cron, tz, now).ok_or_else(|| format!("`{text}` never runs: {FORMS}"))?;
    let second = next_of(&cron, tz, first).unwrap_or(first + min_interval);
    if second - first < min_interval {
        return Err(format!(
            "`{text}` would run every {} seconds; the shortest interval allowed is {} seconds \
             ([schedules] min_interval_secs)",
            (second - first).num_seconds(),
            min_interval.num_seconds()
        ));
    }
    Ok(When {
        first_run: first,
        recurrence: Some(cron_text),
    })
}

/// The first run of `recurrence` (a cron expression read in `timezone`) after `after`.
pub fn next_run(recurrence: &str, timezone: &str, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let tz = Tz::from_str(timezone).ok()?;
    next_of(&cron(recurrence).ok()?, tz, after)
}

fn cron(text: &str) -> Result<Cron, croner::errors::CronError> {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(text)
}

fn next_of(cron: &Cron, tz: Tz, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    cron.find_next_occurrence(&after.with_timezone(&tz), false)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `2026-12-04T09:00:00+01:00`, or a local `2026-12-04 09:00` / `2026-12-04T09:00` in `tz`.
fn absolute(text: &str, tz: Tz) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    let naive = [
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())?;
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Some(t.with_timezone(&Utc)),
        // A local time a DST change skips: the same wall time an hour on.
        LocalResult::None => tz
            .from_local_datetime(&(naive + Duration::hours(1)))
            .earliest()
            .map(|t| t.with_timezone(&Utc)),
    }
}

/// `20 minutes`, `2h`, `90 seconds`, `1 day`, `3 s`.
fn delay_of(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: i64 = number
        .parse()
        .map_err(|_| format!("`in {text}` needs a whole number and a unit: {FORMS}"))?;
    let seconds = match unit.trim() {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 604_800,
        _ => {
            return Err(format!(
                "`in {text}`: the unit must be seconds, minutes, hours, days or weeks"
            ));
        }
    };
    if n <= 0 || n > 3650 * 86_400 / seconds {
        return Err(format!(
            "`in {text}`: give a delay between 1 second and 10 years"
        ));
    }
    Ok(Duration::seconds(n * seconds))
}

/// `day at 09:00` → `0 9 * * *`; `monday at 8:30`, `weekday at 7:00`, `15 minutes`, `hour`.
fn phrase_to_cron(phrase: &str) -> Result<String, String> {
    let words: Vec<&str> = phrase.split_whitespace().collect();
    let unreadable = || format!("`every {phrase}` is not a recurrence I can read: {FORMS}");
    match words.as_slice() {
        ["minute"] => Ok("* * * * *".to_owned()),
        ["hour"] => Ok("0 * * * *".to_owned()),
        [n, "minutes" | "mins"] => Ok(format!("*/{} * * * *", step(n, 59).ok_or_else(unreadable)?)),
        [n, "hours"] => Ok(format!("0 */{} * * *", step(n, 23).ok_or_else(unreadable)?)),
        [days, "at", time] => {
            let dow = day_field(days).ok_or_else(unreadable)?;
            let (h, m) = clock_time(time).ok_or_else(unreadable)?;
            Ok(format!("{m} {h} * * {dow}"))
        }
        _ => Err(unreadable()),
    }
}

fn step(n: &str, max: u32) -> Option<u32> {
    n.parse().ok().filter(|n| (1..=max).contains(n))
}

fn day_field(days: &str) -> Option<&'static str> {
    Some(match days {
        "day" => "*",
        "weekday" => "1-5",
        "monday" => "1",
        "tuesday" => "2",
        "wednesday" => "3",
        "thursday" => "4",
        "friday" => "5",
        "saturday" => "6",
        "sunday" => "0",
        _ => return None,
    })
}

/// `09:00`, `9:30` → (hour, minute).
fn clock_time(text: &str) -> Option<(u32, u32)> {
    let (h, m) = text.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some((h, m))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    const NOW: &str = "2026-11-28T08:00:00Z";

    /// `when` read at [`NOW`] in Paris: (first run, cron) or the error.
    fn check(when: &str, expected: Result<(&str, Option<&str>), &str>) {
        let got = parse_when(
            when,
            utc(NOW),
            chrono_tz::Europe::Paris,
            Duration::seconds(60),
        );
        match (got, expected) {
            (Ok(w), Ok((first, cron))) => {
                assert_eq!(
                    (w.first_run, w.recurrence.as_deref()),
                    (utc(first), cron),
                    "{when}"
                );
            }
            (Err(e), Err(part)) => assert!(e.contains(part), "{when}: {e}"),
            (got, expected) => panic!("{when}: got {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn every_form_of_when() {
        check("in 20 minutes", Ok(("2026-11-28T08:20:00Z", None)));
        check("in 3 s", Ok(("2026-11-28T08:00:03Z", None)));
        check("In 2 hours", Ok(("2026-11-28T10:00:00Z", None)));
        check(
            "2026-12-04T09:00:00+01:00",
            Ok(("2026-12-04T08:00:00Z", None)),
        );
        check("2026-12-04 09:00", Ok(("2026-12-04T08:00:00Z", None)));
        // 09:00 Paris is 08:00 UTC, exactly NOW: the first run is the next day's.
        check(
            "every day at 09:00",
            Ok(("2026-11-29T08:00:00Z", Some("0 9 * * *"))),
        );
        check(
            "every weekday at 7:30",
            Ok(("2026-11-30T06:30:00Z", Some("30 7 * * 1-5"))),
        );
        check(
            "0 18 * * *",
            Ok(("2026-11-28T17:00:00Z", Some("0 18 * * *"))),
        );
        check(
            "every 15 minutes",
            Ok(("2026-11-28T08:15:00Z", Some("*/15 * * * *"))),
        );
        check("in 0 minutes", Err("between 1 second"));
        check("in 5 fortnights", Err("the unit must be"));
        check("2020-01-01T00:00:00Z", Err("in the past"));
        check("every full moon", Err("not a recurrence"));
        check("tomorrowish", Err("not a time I can read"));
        check("* * * * * *", Err("shortest interval allowed is 60"));
    }

    #[test]
    fn a_daily_run_stays_at_nine_local_across_dst() {
        // New York springs forward on 2026-03-08 (EST −5 → EDT −4).
        let tz = "America/New_York";
        let mut at = utc("2026-03-06T15:00:00Z");
        let mut runs = Vec::new();
        for _ in 0..4 {
            at = next_run("0 9 * * *", tz, at).unwrap();
            runs.push(at);
        }
        let expected = [
            "2026-03-07T14:00:00Z",
            "2026-03-08T13:00:00Z",
            "2026-03-09T13:00:00Z",
            "2026-03-10T13:00:00Z",
        ];
        assert_eq!(runs, expected.map(utc).to_vec());
    }

    #[test]
    fn time_zones_resolve_or_say_what_to_fix() {
        assert_eq!(
            resolve_timezone(Some("Europe/Paris")),
            Ok(chrono_tz::Europe::Paris)
        );
        let err = resolve_timezone(Some("Mars/Olympus")).unwrap_err();
        assert!(err.contains("IANA"), "{err}");
        assert!(resolve_timezone(None).is_ok());
    }
}
