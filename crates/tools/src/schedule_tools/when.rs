//! What a schedule's `when` means: an RFC 3339 time (or a local `YYYY-MM-DD HH:MM` in the user's
//! time zone), a delay (`in 20 minutes`), or a recurrence — a cron expression (`0 9 * * 1-5`,
//! read by `croner`) or a phrase (`every day at 09:00`, `every monday at 8:30`,
//! `every weekday at 7:00`, `every 15 minutes`, `every hour`), which becomes one. Recurrences
//! are read in the user's IANA time zone (`chrono-tz`), so a daily 09:00 stays 09:00 local
//! across a DST change (`recurrence.rs` says what a repeated or skipped hour does).

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;

use super::recurrence::{cron, next_of};

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
        // As far ahead as a delay may reach (`in …`, 10 years).
        if at - now > Duration::seconds(MAX_AHEAD_SECONDS) {
            return Err(format!(
                "{text} is more than 10 years ahead: give a time within 10 years"
            ));
        }
        return Ok(When {
            first_run: at,
            recurrence: None,
        });
    }
    let cron_text = match lower.strip_prefix("every ") {
        Some(phrase) => phrase_to_cron(phrase)?,
        // Fields with one space between them, as it is stored and shown.
        None => text.split_whitespace().collect::<Vec<_>>().join(" "),
    };
    let cron =
        cron(&cron_text).map_err(|_| format!("`{text}` is not a time I can read: {FORMS}"))?;
    let first = next_of(&cron, tz, now).ok_or_else(|| format!("`{text}` never runs: {FORMS}"))?;
    if let Some(gap) = shortest_gap(&cron, tz, first).filter(|gap| *gap < min_interval) {
        return Err(format!(
            "`{text}` would run every {} seconds; the shortest interval allowed is {} seconds \
             ([schedules] min_interval_secs)",
            gap.num_seconds(),
            min_interval.num_seconds()
        ));
    }
    Ok(When {
        first_run: first,
        recurrence: Some(cron_text),
    })
}

/// Runs of a recurrence looked at for its shortest gap.
const RUNS_CHECKED: usize = 512;

/// The shortest time between two of the runs of `cron` from `first` on (its first
/// [`RUNS_CHECKED`], over at most nine years). Not only the first two: an irregular recurrence
/// made between its runs (`* 9 * * *` at 09:59, `0,30 9 * * *` at 09:15) has its first two runs
/// a day apart and the next ones a minute or half an hour apart.
fn shortest_gap(cron: &Cron, tz: Tz, first: DateTime<Utc>) -> Option<Duration> {
    let horizon = first + Duration::days(9 * 366);
    let (mut at, mut shortest) = (first, None::<Duration>);
    for _ in 0..RUNS_CHECKED {
        let Some(next) = next_of(cron, tz, at).filter(|next| *next <= horizon) else {
            break;
        };
        let gap = next - at;
        shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
        at = next;
    }
    shortest
}

/// The first run of `recurrence` (a cron expression read in `timezone`) after `after`.
pub fn next_run(recurrence: &str, timezone: &str, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let tz = Tz::from_str(timezone).ok()?;
    next_of(&cron(recurrence).ok()?, tz, after)
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

/// How far ahead a one-off may be, as a delay or a time: 10 years.
const MAX_AHEAD_SECONDS: i64 = 3650 * 86_400;

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
    if n <= 0 || n > MAX_AHEAD_SECONDS / seconds {
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
        ["minute" | "min"] => Ok("* * * * *".to_owned()),
        ["hour" | "hr"] => Ok("0 * * * *".to_owned()),
        // The units `in …` takes: `every 30 min` as well as `in 30 min`.
        ["60", "m" | "min" | "mins" | "minute" | "minutes"] => Ok("0 * * * *".to_owned()),
        [n, "m" | "min" | "mins" | "minute" | "minutes"] => {
            Ok(format!("*/{} * * * *", step(phrase, n, 60)?))
        }
        [n, "h" | "hr" | "hrs" | "hour" | "hours"] => {
            Ok(format!("0 */{} * * *", step(phrase, n, 24)?))
        }
        [days, "at", time] => {
            let dow = day_field(days).ok_or_else(unreadable)?;
            let (h, m) = clock_time(time).ok_or_else(unreadable)?;
            Ok(format!("{m} {h} * * {dow}"))
        }
        _ => Err(unreadable()),
    }
}

/// `n` of `every n minutes` (`per` 60) or `every n hours` (`per` 24). A cron step restarts at
/// each hour (day), so only a divisor of it repeats evenly: `*/45` runs at :00 and :45, 15
/// minutes apart, so `every 45 minutes` is refused rather than run unevenly.
fn step(phrase: &str, n: &str, per: u32) -> Result<u32, String> {
    let unit = if per == 60 { "minutes" } else { "hours" };
    let whole = if per == 60 { "an hour" } else { "a day" };
    let n: u32 = n
        .parse()
        .ok()
        .filter(|n| (1..per).contains(n))
        .ok_or_else(|| {
            format!(
                "`every {phrase}`: give a number of {unit} from 1 to {}",
                per - 1
            )
        })?;
    if !per.is_multiple_of(n) {
        let divisors: Vec<String> = (1..per)
            .filter(|d| per.is_multiple_of(*d))
            .map(|d| d.to_string())
            .collect();
        return Err(format!(
            "`every {phrase}` cannot repeat evenly: the number of {unit} must divide {whole} \
             ({}); for another rhythm use a cron expression",
            divisors.join(", ")
        ));
    }
    Ok(n)
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

    #[test]
    fn the_shortest_interval_holds_whenever_the_schedule_is_made() {
        let hour = Duration::seconds(3600);
        let paris = chrono_tz::Europe::Paris;
        // Every minute of the 09:00 hour: made before that hour or in its last minutes, the
        // runs are a minute apart either way.
        for now in ["2026-11-28T06:00:00Z", "2026-11-28T08:58:30Z"] {
            let got = parse_when("* 9 * * *", utc(now), paris, hour);
            assert!(
                got.as_ref()
                    .is_err_and(|e| e.contains("would run every 60 seconds")),
                "made at {now}: {got:?}"
            );
        }
        // 09:00 and 09:30, made at 09:15: the first two runs are a day apart, the next two 30
        // minutes.
        let got = parse_when("0,30 9 * * *", utc("2026-11-28T08:15:00Z"), paris, hour);
        assert!(
            got.as_ref()
                .is_err_and(|e| e.contains("would run every 1800 seconds")),
            "{got:?}"
        );
        // Every minute of 29 February, made in its last minute: the next runs are four years on.
        let got = parse_when("* * 29 2 *", utc("2028-02-29T22:58:30Z"), paris, hour);
        assert!(got.is_err(), "{got:?}");
        // Regular recurrences are untouched.
        for ok in [
            "0 9 * * *",
            "0 */2 * * *",
            "every weekday at 7:30",
            "@yearly",
        ] {
            let got = parse_when(ok, utc(NOW), paris, hour);
            assert!(got.is_ok(), "{ok}: {got:?}");
        }
    }

    #[test]
    fn a_cron_expression_is_kept_with_single_spaces() {
        let wide = format!("0{}18 *\t* *", " ".repeat(5000));
        check(&wide, Ok(("2026-11-28T17:00:00Z", Some("0 18 * * *"))));
    }

    #[test]
    fn every_n_minutes_or_hours_is_regular_or_refused() {
        // `*/45` runs at :00 and :45, 15 minutes apart: `every 45 minutes` is not what it says.
        for refused in [
            "every 45 minutes",
            "every 7 minutes",
            "every 25 mins",
            "every 5 hours",
        ] {
            check(refused, Err("divide"));
        }
        check(
            "every 20 minutes",
            Ok(("2026-11-28T08:20:00Z", Some("*/20 * * * *"))),
        );
        check(
            "every 6 hours",
            Ok(("2026-11-28T11:00:00Z", Some("0 */6 * * *"))),
        );
        check(
            "every 60 minutes",
            Ok(("2026-11-28T09:00:00Z", Some("0 * * * *"))),
        );
        // The units a delay takes, in a recurrence too.
        check(
            "every 30 min",
            Ok(("2026-11-28T08:30:00Z", Some("*/30 * * * *"))),
        );
        check(
            "every 2 hrs",
            Ok(("2026-11-28T09:00:00Z", Some("0 */2 * * *"))),
        );
    }
}
