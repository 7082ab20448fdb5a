//! The keyword leg over the in-memory postings: plans, BM25 order, scope and filters before
//! ranking, and the postings following every change.

use super::*;
use crate::terms::{query_index_terms, text_terms};

fn check(counts: &[(usize, &str)], expected: Option<KeywordPlan<'_>>) {
    assert_eq!(plan_from_counts(counts.to_vec()), expected, "{counts:?}");
}

#[test]
fn plans() {
    // Small stores: every term, rarest first.
    check(
        &[(3, "tea"), (1, "oolong")],
        Some(KeywordPlan::Any(vec!["oolong", "tea"])),
    );
    // Terms found nowhere are dropped; none found, no keyword leg.
    check(
        &[(0, "zzz"), (5, "tea")],
        Some(KeywordPlan::Any(vec!["tea"])),
    );
    check(&[(0, "zzz")], None);
    check(&[], None);
    // The commonest terms go once the budget is spent.
    let big = POSTING_BUDGET / 2;
    check(
        &[
            (big, "user"),
            (40, "kyoto"),
            (400, "trip"),
            (big + 1, "likes"),
        ],
        Some(KeywordPlan::Any(vec!["kyoto", "trip", "user"])),
    );
    // Every term common: all of them must match, else the rarest alone.
    let over = POSTING_BUDGET + 1;
    check(
        &[(over + 5, "alice"), (over, "berlin"), (over, "prefer")],
        Some(KeywordPlan::All {
            terms: vec!["berlin", "prefer", "alice"],
            fallback: "berlin",
        }),
    );
    check(&[(over, "user")], Some(KeywordPlan::Any(vec!["user"])));
}

fn index_of(docs: &[(&str, i64, &str)]) -> KeywordIndex {
    let index = KeywordIndex::default();
    for (session, id, text) in docs {
        index.upsert(session, *id, &text_terms(text), None);
    }
    index
}

fn search(index: &KeywordIndex, query: &str, sessions: &[&str], limit: usize) -> Vec<i64> {
    let sessions: Vec<String> = sessions.iter().map(|s| (*s).to_owned()).collect();
    keyword_leg(
        index,
        &query_index_terms(query),
        &sessions,
        limit,
        &|_, _| true,
    )
    .into_iter()
    .map(|(id, _)| id)
    .collect()
}

#[test]
fn bm25_order_scope_and_changes() {
    let index = index_of(&[
        ("s", 1, "green tea in Kyoto"),
        ("s", 2, "the user prefers oolong tea, oolong above all"),
        ("s", 3, "coffee in Berlin"),
        (
            "s",
            4,
            "a long note about many things and also tea somewhere in the middle of it all",
        ),
        ("other", 5, "oolong tea"),
    ]);
    // More and rarer terms first; a short text beats a long one for the same term.
    assert_eq!(search(&index, "oolong tea", &["s"], 10), [2, 1, 4]);
    assert_eq!(search(&index, "Preferred teas?", &["s"], 10)[0], 2);
    // Other sessions are never seen; both are when both are asked for.
    assert_eq!(search(&index, "oolong", &["s"], 10), [2]);
    assert_eq!(search(&index, "oolong", &["other", "s"], 10).len(), 2);
    assert!(search(&index, "oolong", &["nobody"], 10).is_empty());
    assert!(search(&index, "zebra", &["s"], 10).is_empty());
    assert!(search(&index, "the of", &["s"], 10).is_empty());
    assert_eq!(search(&index, "tea", &["s"], 2).len(), 2);
    // An update replaces the chunk's terms; a removal takes them away; a slot is reused.
    index.upsert("s", 2, &text_terms("black coffee"), None);
    assert_eq!(search(&index, "oolong", &["s"], 10), Vec::<i64>::new());
    assert_eq!(search(&index, "coffee", &["s"], 10).len(), 2);
    index.remove("s", 3);
    assert_eq!(search(&index, "coffee", &["s"], 10), [2]);
    index.upsert("s", 6, &text_terms("berlin coffee again"), None);
    assert_eq!(search(&index, "berlin", &["s"], 10), [6]);
    index.remove("s", 99);
    index.remove("nobody", 1);
}

#[test]
fn filters_apply_before_ranking() {
    let mut docs = Vec::new();
    let texts: Vec<String> = (0..200).map(|i| format!("tea note {i}")).collect();
    for (i, t) in texts.iter().enumerate() {
        docs.push(("s", i as i64, t.as_str()));
    }
    let index = index_of(&docs);
    let terms = query_index_terms("tea");
    let sessions = vec!["s".to_owned()];
    // Only ids divisible by 50 pass: the top 3 are those, never fewer because better ones failed.
    let found = keyword_leg(&index, &terms, &sessions, 3, &|_, id| id % 50 == 0);
    assert_eq!(found.len(), 3);
    assert!(found.iter().all(|(id, _)| id % 50 == 0), "{found:?}");
    let none = keyword_leg(&index, &terms, &sessions, 3, &|_, _| false);
    assert!(none.is_empty());
}

#[test]
fn several_filters_in_one_walk_answer_as_each_alone() {
    // A plan of every term (Any), one of all terms (All), and one whose terms no chunk holds
    // together (the rarest alone).
    let n = POSTING_BUDGET + 10;
    let texts: Vec<String> = (0..n)
        .map(|i| match i % 4 {
            0 => format!("tea berlin note {i}"),
            1 => format!("tea note {i} oolong"),
            _ => format!("berlin trip {i} tea"),
        })
        .collect();
    let docs: Vec<(&str, i64, &str)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (if i % 3 == 0 { "a" } else { "b" }, i as i64, t.as_str()))
        .collect();
    let index = index_of(&docs);
    let sessions = vec!["a".to_owned(), "b".to_owned()];
    let searched = index.searched(&sessions);
    let filters: [Allows<'_>; 4] = [
        &|_, _| true,
        &|_, id| id % 7 == 0,
        &|session, _| session == "a",
        &|_, _| false,
    ];
    for query in ["oolong trip", "tea berlin", "oolong trip tea berlin"] {
        let terms = query_index_terms(query);
        let together = keyword_legs_in(&index, &searched, &terms, &[], 20, &filters);
        assert_eq!(together.len(), filters.len());
        for (got, allows) in together.iter().zip(filters) {
            let alone = keyword_leg_in(&index, &searched, &terms, 20, allows);
            assert_eq!(got, &alone, "{query}");
        }
        assert!(!together[0].is_empty() && together[3].is_empty(), "{query}");
    }
}

/// `n` texts, chunk 7's `seventh`, every other `filler` and its number.
fn past_the_budget(n: usize, seventh: &str, filler: &str) -> Vec<String> {
    (0..n)
        .map(|i| match i {
            7 => seventh.to_owned(),
            _ => format!("{filler}{i}"),
        })
        .collect()
}

/// The texts as chunks of session `s`, numbered from 0.
fn numbered(texts: &[String]) -> Vec<(&str, i64, &str)> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| ("s", i as i64, t.as_str()))
        .collect()
}

#[test]
fn common_terms_switch_to_all_then_to_the_rarest() {
    let n = POSTING_BUDGET + 10;
    let texts = past_the_budget(n, "alpha beta gamma", "alpha beta filler");
    let mut docs = numbered(&texts);
    // "gamma" is common too, but not in the same chunks as alpha and beta, except chunk 7.
    let gammas: Vec<String> = (0..n).map(|i| format!("gamma delta {i}")).collect();
    docs.extend(
        gammas
            .iter()
            .enumerate()
            .map(|(i, t)| ("s", (n + i) as i64, t.as_str())),
    );
    let index = index_of(&docs);
    // Every term exceeds the budget: the chunks holding all of them.
    assert_eq!(search(&index, "alpha beta gamma", &["s"], 10), [7]);
    // No chunk holds all: the rarest term alone ("alpha" and "beta" tie; query order wins).
    let rare = search(&index, "alpha delta", &["s"], 5);
    assert_eq!(rare.len(), 5);
    let holds_alpha = |id: &i64| (*id as usize) < n;
    assert!(rare.iter().all(holds_alpha), "{rare:?}");
}

#[test]
fn expiry_is_tracked() {
    let index = KeywordIndex::default();
    let sessions = vec!["s".to_owned()];
    index.upsert("s", 1, &text_terms("a"), Some("2030-01-01T00:00:00Z"));
    index.upsert("s", 2, &text_terms("b"), Some("2020-01-01T00:00:00Z"));
    assert!(index.any_expired(&sessions, "2025-01-01T00:00:00Z"));
    index.remove("s", 2);
    assert!(!index.any_expired(&sessions, "2025-01-01T00:00:00Z"));
    assert!(index.any_expired(&sessions, "2031-01-01T00:00:00Z"));
    // Re-upserting without expiry forgets the old one.
    index.upsert("s", 1, &text_terms("a"), None);
    assert!(!index.any_expired(&sessions, "2031-01-01T00:00:00Z"));
}

#[test]
fn galloping_finds_the_first_slot_not_below_the_target() {
    let slots: Vec<Posting> = (0..1000)
        .map(|i| Posting {
            slot: i * 3,
            count: 1,
        })
        .collect();
    for from in [0, 1, 5, 100, 999, 1000] {
        for target in [0, 1, 3, 4, 300, 2997, 2998, 5000] {
            let expected = from.max(slots.partition_point(|p| p.slot < target));
            assert_eq!(gallop(&slots, from, target), expected, "{from} {target}");
        }
    }
    assert_eq!(gallop(&[], 0, 7), 0);
}

#[test]
fn a_removal_leaves_every_list_before_and_after_the_lists_grow_into_a_map() {
    let index = KeywordIndex::default();
    // 5,000 distinct terms: the session's lists leave the sorted vector on the way.
    for i in 0..5000 {
        index.upsert("big", i, &text_terms(&format!("common tok{i}")), None);
    }
    index.upsert("small", 1, &text_terms("common tok10"), None);
    assert_eq!(search(&index, "tok10", &["big"], 10), [10]);
    // Chunks indexed before and after the change of form leave all their lists.
    index.remove("big", 10);
    index.remove("big", 4500);
    assert!(search(&index, "tok10", &["big"], 10).is_empty());
    assert!(search(&index, "tok4500", &["big"], 10).is_empty());
    assert_eq!(search(&index, "common", &["big"], 5000).len(), 4998);
    index.upsert("big", 11, &text_terms("other words"), None);
    assert!(search(&index, "tok11", &["big"], 10).is_empty());
    assert_eq!(search(&index, "common", &["big"], 5000).len(), 4997);
    // A small session's removal looks in each of its lists.
    assert_eq!(search(&index, "tok10", &["small"], 10), [1]);
    index.remove("small", 1);
    assert!(search(&index, "common", &["small"], 10).is_empty());
    index.upsert("small", 2, &text_terms("tok10 again"), None);
    assert_eq!(search(&index, "tok10", &["small", "big"], 10), [2]);
}

fn search_related(
    index: &KeywordIndex,
    query: &str,
    related: &[(&str, f64)],
    limit: usize,
) -> Vec<(i64, f64)> {
    let sessions = ["s".to_owned()];
    let related: Vec<(String, f64)> = related.iter().map(|(t, w)| ((*t).to_owned(), *w)).collect();
    keyword_legs_in(
        index,
        &index.searched(&sessions),
        &query_index_terms(query),
        &related,
        limit,
        &[&|_, _| true],
    )
    .pop()
    .unwrap_or_default()
}

#[test]
fn related_terms_score_at_their_share_below_the_querys_own() {
    let index = index_of(&[
        ("s", 1, "we adopted a puppy last spring"),
        ("s", 2, "our dog loves the beach"),
        ("s", 3, "the weather was fine"),
        ("s", 4, "a puppy and a dog at the park"),
    ]);
    let plain = search_related(&index, "dog", &[], 10);
    // The shorter chunk first.
    assert_eq!(plain.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [2, 4]);
    let with = search_related(&index, "dog", &[("puppi", 0.3)], 10);
    let ids: Vec<i64> = with.iter().map(|(id, _)| *id).collect();
    // Both words first, then the exact match, then the related one alone.
    assert_eq!(ids, [4, 2, 1], "{with:?}");
    let exact = with[1].1;
    let related = with[2].1;
    assert!(related < exact * 0.5, "{with:?}");
    // The related term alone weighs its share of what it weighs as a query term.
    let as_term = search_related(&index, "puppy", &[], 10);
    let own = as_term.iter().find(|(id, _)| *id == 1).unwrap().1;
    assert!((related - 0.3 * own).abs() < 1e-5, "{related} vs {own}");
    // A query word found nowhere: the related terms are the plan.
    let alone = search_related(&index, "hound", &[("puppi", 0.3)], 10);
    assert_eq!(alone.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [1, 4]);
    // A related term found nowhere changes nothing.
    assert_eq!(search_related(&index, "dog", &[("wolf", 0.3)], 10), plain);
}

#[test]
fn related_terms_fit_the_budget_and_never_join_an_all_plan() {
    let n = POSTING_BUDGET + 10;
    let texts = past_the_budget(n, "alpha beta", "alpha beta common filler");
    let mut docs = numbered(&texts);
    docs.push(("s", n as i64, "rare words here"));
    // More postings than the related terms' share of the budget, and fewer.
    let many: Vec<String> = (0..=RELATED_BUDGET).map(|i| format!("zeta {i}")).collect();
    let few: Vec<String> = (0..3).map(|i| format!("kappa {i}")).collect();
    let from = n as i64 + 1;
    docs.extend(
        many.iter()
            .chain(&few)
            .enumerate()
            .map(|(i, t)| ("s", from + i as i64, t.as_str())),
    );
    let index = index_of(&docs);
    // Every query term is common (an All plan): the related term does not widen it.
    let all = search_related(&index, "alpha beta", &[("rare", 0.3)], 10);
    assert!(all.iter().all(|(id, _)| (*id as usize) < n), "{all:?}");
    // A rare query term leaves room for a rare related term, not for a common one.
    let any = search_related(&index, "words", &[("common", 0.3), ("rare", 0.3)], 10);
    assert_eq!(any.len(), 1, "{any:?}");
    assert_eq!(any[0].0, n as i64);
    // Related terms take at most their share of the budget, rarest first.
    let shared = search_related(&index, "words", &[("zeta", 0.3), ("kappa", 0.3)], 10);
    let kappas = (from + many.len() as i64..).take(3).collect::<Vec<_>>();
    let mut got: Vec<i64> = shared.iter().map(|(id, _)| *id).collect();
    got.sort_unstable();
    assert_eq!(got, [&[n as i64][..], &kappas].concat(), "{shared:?}");
}

/// A term is a name when every chunk that capitalises it does so inside a sentence and none
/// writes it in lowercase; a sentence's first word tells nothing, and a mark once made stays.
#[test]
fn names_are_the_terms_the_text_only_writes_as_names() {
    let index = index_of(&[
        (
            "a",
            1,
            "Yesterday I met Caroline and Jon at the Rose Garden.",
        ),
        ("a", 2, "Caroline: the rose was red. Pottery is fun"),
        ("b", 3, "We asked jon about pottery"),
    ]);
    let asked: Vec<String> = [
        "carolin",
        "jon",
        "rose",
        "garden",
        "potteri",
        "yesterday",
        "unknown",
    ]
    .iter()
    .map(|t| (*t).to_owned())
    .collect();
    assert_eq!(index.names_among(&asked), ["carolin", "garden"]);
    // A later chunk writing a name in lowercase makes it a word; removing it changes nothing.
    index.upsert("b", 4, &text_terms("the garden was green"), None);
    index.remove("b", 4);
    assert_eq!(index.names_among(&asked), ["carolin"]);
}
