//! What the filters of a search look at, kept per chunk in the in-memory vector index.
//!
//! Every chunk's facets (its note's category, tags and expiry, and the chunk's creation time) travel
//! with its vector in [`crate::IndexChange::Upsert`], through the same paths as the
//! vector itself: the writer after each commit, the catch-up from the `index_changes` log, and the
//! load at open. A note's metadata only changes with an update, which rewrites its chunks, so the
//! facets are as current as the vectors. The vector leg then applies the filters to each row while
//! it scans (before ranking), with the same semantics as the keyword leg's SQL conditions
//! (see the store's keyword SQL): times compare as stored text, conversation chunks have no category
//! and no tags.

use crate::category::Category;
use crate::filters::{Scope, time_text};

/// The filterable facts of one chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkFacets {
    pub category: Option<Category>,
    pub tags: Box<[String]>,
    /// As stored (RFC 3339 text), compared as text like the SQL filters do.
    pub created_at: String,
    pub expires_at: Option<String>,
}

impl ChunkFacets {
    /// From a chunk's `tags` and creation time (as stored) and its note's `category` and
    /// `expires_at` columns; an unknown category reads as none.
    pub fn new(
        category: Option<&str>,
        tags: Vec<String>,
        created_at: String,
        expires_at: Option<String>,
    ) -> Self {
        Self {
            category: category.and_then(|c| c.parse().ok()),
            tags: tags.into_boxed_slice(),
            created_at,
            expires_at,
        }
    }
}

/// A [`time_key`] for a text not of the stored form (compared as text instead).
pub const NO_KEY: i64 = i64::MIN;

/// A time as stored (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, [`time_text`]) as an integer in the same
/// order as the text (its fields packed into 60 bits), so that a filter's time bounds are checked
/// without reaching the text; [`NO_KEY`] for any other text.
pub fn time_key(text: &str) -> i64 {
    let b = text.as_bytes();
    if b.len() != 27 || b[26] != b'Z' {
        return NO_KEY;
    }
    let seps = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
    ];
    if seps.iter().any(|&(at, c)| b[at] != c) {
        return NO_KEY;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        b[from..to].iter().try_fold(0i64, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    let fields = (|| {
        let f = [
            num(0, 4)?,
            num(5, 7)?,
            num(8, 10)?,
            num(11, 13)?,
            num(14, 16)?,
            num(17, 19)?,
            num(20, 26)?,
        ];
        // Bits per field: each must fit its bits for the packing to keep the text's order.
        let ok = (1..=12).contains(&f[1])
            && (1..=31).contains(&f[2])
            && f[3] < 24
            && f[4] < 60
            && f[5] < 61;
        ok.then_some(f)
    })();
    let Some([y, mo, d, h, mi, s, us]) = fields else {
        return NO_KEY;
    };
    (((((y << 4 | mo) << 5 | d) << 5 | h) << 6 | mi) << 6 | s) << 20 | us
}

/// A [`Scope`] prepared for checking many rows: the time bounds rendered once.
/// The [`time_key`]s of a span of time, `low..=high`, and [`NO_KEY`] (no time: the texts decide).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyWindow {
    low: i64,
    high: i64,
}

impl KeyWindow {
    #[cfg(test)]
    pub(crate) fn new(low: i64, high: i64) -> Self {
        Self { low, high }
    }

    /// Whether `key` may be inside. Without a branch (`&` and `|`, not `&&` and `||`): a loop
    /// over a matrix's keys is vectorized where the target compares 64-bit integers.
    #[inline(always)]
    pub fn holds(self, key: i64) -> bool {
        (key == NO_KEY) | ((key >= self.low) & (key <= self.high))
    }
}

#[derive(Debug, Clone)]
pub struct FacetFilter {
    scope: Scope,
    after: Option<String>,
    before: Option<String>,
    /// The bounds as [`time_key`]s.
    after_key: Option<i64>,
    before_key: Option<i64>,
    /// The keys [`Self::may_allow_key`] lets through (an unknown bound is none).
    window: KeyWindow,
    /// Whether the scope asks nothing but the time (no tags, category or expiry): then a row's
    /// facets are never read where its time key decides.
    time_only: bool,
}

impl FacetFilter {
    pub fn new(scope: Scope) -> Self {
        let after = scope.filters.created_after.map(time_text);
        let before = scope.filters.created_before.map(time_text);
        let f = &scope.filters;
        let time_only = f.tags_any.is_empty()
            && f.tags_all.is_empty()
            && f.category.is_none()
            && scope.expired_at.is_none();
        let after_key = after.as_deref().map(time_key);
        let before_key = before.as_deref().map(time_key);
        let known = |bound: Option<i64>| bound.filter(|&b| b != NO_KEY);
        Self {
            window: KeyWindow {
                low: known(after_key).unwrap_or(i64::MIN),
                // A known bound is above `NO_KEY`, the least `i64`: one less does not overflow.
                high: known(before_key).map_or(i64::MAX, |b| b - 1),
            },
            after_key,
            before_key,
            after,
            before,
            time_only,
            scope,
        }
    }

    /// The filter of `scope`; `None` when it filters nothing (every chunk passes).
    pub fn of(scope: Scope) -> Option<Self> {
        (!scope.is_empty()).then(|| Self::new(scope))
    }

    /// [`Self::allows`] for a chunk whose creation time's [`time_key`] is `key`: a chunk outside
    /// the time bounds is refused by the key alone (the same answer, without reading its text).
    pub fn allows_keyed(&self, key: i64, facets: &ChunkFacets) -> bool {
        // Keys on both sides decide the time alone; the texts are compared only without one.
        let keyed =
            key != NO_KEY && self.after_key != Some(NO_KEY) && self.before_key != Some(NO_KEY);
        match keyed {
            true => self.may_allow_key(key) && (self.time_only || self.allows_untimed(facets)),
            false => self.allows(facets),
        }
    }

    /// Whether this filter bounds the creation time (then [`Self::may_allow_key`] refuses rows).
    pub fn bounds_time(&self) -> bool {
        self.after.is_some() || self.before.is_some()
    }

    /// `false` when a chunk created at [`time_key`] `key` is outside the time bounds (a chunk it
    /// lets through may still be refused by [`Self::allows`]).
    #[inline]
    pub fn may_allow_key(&self, key: i64) -> bool {
        self.window.holds(key)
    }

    /// The keys [`Self::may_allow_key`] lets through, for loops over many rows
    /// ([`crate::time_keys`]).
    pub fn key_window(&self) -> KeyWindow {
        self.window
    }

    /// Whether a search with this scope may return the chunk.
    pub fn allows(&self, facets: &ChunkFacets) -> bool {
        let after = self.after.as_ref().is_none_or(|a| facets.created_at >= *a);
        let before = self.before.as_ref().is_none_or(|b| facets.created_at < *b);
        after && before && self.allows_untimed(facets)
    }

    /// [`Self::allows`] but for the time bounds.
    fn allows_untimed(&self, facets: &ChunkFacets) -> bool {
        let f = &self.scope.filters;
        if !f.tags_any.is_empty() && !facets.tags.iter().any(|t| f.tags_any.contains(t)) {
            return false;
        }
        if !f.tags_all.iter().all(|t| facets.tags.contains(t)) {
            return false;
        }
        if f.category.is_some() && facets.category != f.category {
            return false;
        }
        match (&self.scope.expired_at, &facets.expires_at) {
            (Some(now), Some(expires)) => expires > now,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::QueryFilters;
    use chrono::{DateTime, Utc};

    #[test]
    fn time_keys_order_as_the_texts_do() {
        let t = |s: i64| DateTime::<Utc>::from_timestamp_micros(s).expect("time");
        let mut texts: Vec<String> = [
            0,
            1,
            999_999,
            1_000_000,
            86_399_999_999,
            1_700_000_000_123_456,
            1_700_000_060_000_000,
            253_402_300_799_999_999,
        ]
        .into_iter()
        .map(|us| time_text(t(us)))
        .collect();
        texts.push("2024-02-29T23:59:60.000000Z".into());
        for a in &texts {
            assert_ne!(time_key(a), NO_KEY, "{a}");
            for b in &texts {
                assert_eq!(time_key(a).cmp(&time_key(b)), a.cmp(b), "{a} {b}");
            }
        }
        for other in [
            "",
            "2024-01-01T00:00:00Z",
            "2024-13-01T00:00:00.000000Z",
            "2024-01-01T00:00:00.00000xZ",
        ] {
            assert_eq!(time_key(other), NO_KEY, "{other}");
        }
    }

    /// The key check lets through exactly the times the texts' comparison does, on both sides
    /// of each bound, open or not; a key that is no time, and a bound that is none (a year past
    /// 9999 has no key), refuse nothing.
    #[test]
    fn the_key_check_agrees_with_the_texts_at_every_bound() {
        let t = |us: i64| DateTime::<Utc>::from_timestamp_micros(us).expect("time");
        let (a, b) = (1_700_000_000_000_000, 1_700_086_400_000_000);
        let times = [0, a - 1, a, a + 1, b - 1, b, b + 1, 253_402_300_799_999_999];
        for after in [None, Some(t(a))] {
            for before in [None, Some(t(b))] {
                let filter = FacetFilter::new(Scope {
                    filters: QueryFilters {
                        created_after: after,
                        created_before: before,
                        ..QueryFilters::default()
                    },
                    expired_at: None,
                });
                for us in times {
                    let text = time_text(t(us));
                    let facets = ChunkFacets::new(None, Vec::new(), text.clone(), None);
                    let key = time_key(&text);
                    assert_eq!(filter.may_allow_key(key), filter.allows(&facets), "{text}");
                }
                assert!(filter.may_allow_key(NO_KEY));
            }
        }
        let far = DateTime::<Utc>::from_timestamp(400_000_000_000, 0).expect("year 14645");
        let unknown = FacetFilter::new(Scope {
            filters: QueryFilters {
                created_after: Some(far),
                created_before: Some(far),
                ..QueryFilters::default()
            },
            expired_at: None,
        });
        assert!(unknown.may_allow_key(time_key(&time_text(t(a)))));
    }

    /// A filter bounding only the time decides by the key; one that also asks tags, a category
    /// or hides expired notes still reads the row's facets inside the span.
    #[test]
    fn a_keyed_check_reads_the_facets_unless_the_filter_asks_only_the_time() {
        let t = |day: i64| DateTime::<Utc>::from_timestamp(day * 86_400, 0).expect("time");
        let chunk = |tags: &[&str], category: Option<&str>, expires: Option<i64>| {
            ChunkFacets::new(
                category,
                tags.iter().map(|s| s.to_string()).collect(),
                time_text(t(10)),
                expires.map(|d| time_text(t(d))),
            )
        };
        let filter = |filters: QueryFilters, expired_at: Option<i64>| {
            FacetFilter::new(Scope {
                filters: QueryFilters {
                    created_after: Some(t(5)),
                    created_before: Some(t(20)),
                    ..filters
                },
                expired_at: expired_at.map(|d| time_text(t(d))),
            })
        };
        let key = time_key(&time_text(t(10)));
        let outside = time_key(&time_text(t(30)));
        let plain = chunk(&[], None, None);
        let time_only = filter(QueryFilters::default(), None);
        assert!(time_only.allows_keyed(key, &plain));
        assert!(!time_only.allows_keyed(outside, &plain));
        let tagged = filter(
            QueryFilters {
                tags_any: vec!["trip".into()],
                ..QueryFilters::default()
            },
            None,
        );
        assert!(!tagged.allows_keyed(key, &plain));
        assert!(tagged.allows_keyed(key, &chunk(&["trip"], None, None)));
        let all = filter(
            QueryFilters {
                tags_all: vec!["a".into(), "b".into()],
                ..QueryFilters::default()
            },
            None,
        );
        assert!(!all.allows_keyed(key, &chunk(&["a"], None, None)));
        let fact = filter(
            QueryFilters {
                category: Some(Category::Fact),
                ..QueryFilters::default()
            },
            None,
        );
        assert!(!fact.allows_keyed(key, &plain));
        assert!(fact.allows_keyed(key, &chunk(&[], Some("fact"), None)));
        let hiding = filter(QueryFilters::default(), Some(15));
        assert!(!hiding.allows_keyed(key, &chunk(&[], None, Some(12))));
        assert!(hiding.allows_keyed(key, &chunk(&[], None, Some(18))));
    }
}
