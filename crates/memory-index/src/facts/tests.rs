//! Tests of the fact check on the labelled pairs and each kind of difference.

use super::*;
use crate::embedding::BuiltinEmbedder;

/// The labelled pairs: (restatement?, kind, first, second).
pub(crate) fn pairs() -> Vec<(bool, &'static str, &'static str, &'static str)> {
    pairs_of(include_str!("../../data/fact_pairs.tsv"))
}

/// The pairs of a labelled file's text (see [`pairs`]).
fn pairs_of(text: &'static str) -> Vec<(bool, &'static str, &'static str, &'static str)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "four tab-separated fields: {l}");
            assert!(["same", "different"].contains(&f[0]), "label of {l}");
            (f[0] == "same", f[1], f[2], f[3])
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b)).max(f32::EPSILON)
}

/// The duplicate check on `pairs` as the store applies it (the builtin model's cosine at the
/// default threshold, then [`fact_difference`]): restatements caught and different facts refused,
/// as shares, with a line for each pair it gets wrong.
fn check(pairs: &[(bool, &str, &str, &str)]) -> (f64, f64, String) {
    let same = pairs.iter().filter(|p| p.0).count();
    let different = pairs.len() - same;
    let embedder = BuiltinEmbedder::new(64).expect("the builtin model");
    let texts: Vec<String> = pairs
        .iter()
        .flat_map(|(_, _, a, b)| [(*a).to_owned(), (*b).to_owned()])
        .collect();
    let vectors = embedder.embed_blocking(&texts).expect("embedded");
    let threshold = crate::DEFAULT_DUPLICATE_SIMILARITY;
    let (mut caught, mut refused) = (0, 0);
    let mut report = Vec::new();
    for ((restatement, kind, a, b), v) in pairs.iter().zip(vectors.chunks_exact(2)) {
        let similar = cosine(&v[0], &v[1]) >= threshold;
        let difference = fact_difference(a, b);
        assert_eq!(difference, fact_difference(b, a), "symmetric: {a} / {b}");
        let flagged = similar && difference.is_none();
        match (restatement, flagged) {
            (true, true) => caught += 1,
            (false, true) => refused += 1,
            _ => {}
        }
        if *restatement != flagged {
            report.push(format!(
                "{kind}: {a} / {b}: cosine {:.3}, {difference:?}",
                cosine(&v[0], &v[1])
            ));
        }
    }
    let report = format!(
        "caught {caught}/{same} restatements, refused {refused}/{different} different facts\n{}",
        report.join("\n")
    );
    (
        f64::from(caught) / same as f64,
        f64::from(refused) / different as f64,
        report,
    )
}

/// The set the check was written with: at most 2 % of different facts refused, at least 90 % of
/// restatements caught (figures in docs/benchmarks.md).
#[test]
fn the_check_refuses_restatements_and_lets_different_facts_through() {
    let pairs = pairs();
    let same = pairs.iter().filter(|p| p.0).count();
    assert!(
        same >= 60 && pairs.len() - same >= 100,
        "{same} / {}",
        pairs.len()
    );
    let (caught, refused, report) = check(&pairs);
    eprintln!("{report}");
    assert!(caught >= 0.90, "restatements caught {caught:.3}\n{report}");
    assert!(
        refused <= 0.02,
        "different facts refused {refused:.3}\n{report}"
    );
}

/// Three sets written blind (by authors who saw neither the check nor the set above): the check
/// still refuses at most 2 % of their different facts. It catches fewer of their restatements
/// (0.72, 0.63 and 0.57, against the 90 % target: synonyms and rewordings no word list holds);
/// the floor here only keeps that from falling back.
#[test]
fn sets_written_blind_lose_no_different_fact() {
    for (name, text) in [
        (
            "fact_pairs_blind.tsv",
            include_str!("../../data/fact_pairs_blind.tsv"),
        ),
        (
            "fact_pairs_blind2.tsv",
            include_str!("../../data/fact_pairs_blind2.tsv"),
        ),
        (
            "fact_pairs_blind3.tsv",
            include_str!("../../data/fact_pairs_blind3.tsv"),
        ),
    ] {
        let pairs = pairs_of(text);
        let same = pairs.iter().filter(|p| p.0).count();
        assert!(
            same >= 70 && pairs.len() - same >= 100,
            "{name}: {same} / {}",
            pairs.len()
        );
        let (caught, refused, report) = check(&pairs);
        eprintln!("{name}: {report}");
        assert!(
            refused <= 0.02,
            "{name}: different facts refused {refused:.3}\n{report}"
        );
        assert!(
            caught >= 0.55,
            "{name}: restatements caught {caught:.3}\n{report}"
        );
    }
}

#[test]
fn each_kind_of_difference_is_found() {
    for (a, b, why) in [
        (
            "The user has 2 cats",
            "The user has three cats",
            FactDifference::Number,
        ),
        (
            "The user likes tea",
            "The user doesn't like tea",
            FactDifference::Negation,
        ),
        (
            "The user likes tea",
            "The user's son likes tea",
            FactDifference::Person,
        ),
        (
            "The user likes tea",
            "The user likes coffee",
            FactDifference::Word,
        ),
        (
            "Prefers tea over coffee",
            "prefers coffee over tea",
            FactDifference::Order,
        ),
        (
            "The user lives in Berlin",
            "The user lives in Paris",
            FactDifference::Name,
        ),
        (
            "Rent is $900 a month",
            "Rent is €900 a month",
            FactDifference::Word,
        ),
        (
            "Flight on 3 May",
            "Flight on 5 March",
            FactDifference::Number,
        ),
    ] {
        assert_eq!(fact_difference(a, b), Some(why), "{a} / {b}");
    }
    for (a, b) in [
        ("The user likes tea", "User enjoys tea"),
        ("The user's cat is called Mia", "User has a cat named Mia"),
        (
            "Speaks Spanish and Portuguese",
            "speaks Portuguese and Spanish",
        ),
        ("The user doesn't eat pork", "The user does not eat pork"),
        ("User has two kids", "The user has 2 children"),
        ("Lives on the 4th floor", "lives on the fourth floor"),
        (
            "Studied physics in Coimbra",
            "has a physics degree from Coimbra",
        ),
        ("User lives in NYC", "The user lives in New York City"),
        (
            "Gym on Mon and Fri",
            "Goes to the gym on Mondays and Fridays",
        ),
        ("Rent is £1,200 a month", "Monthly rent is £1200"),
        ("Stand-up at 3pm", "Stand-up at 15:00"),
        ("The user is thirty-four", "User is 34"),
        (
            "Daughter attends Riverside Elementary",
            "Daughter attends Riverside Elementary School",
        ),
        ("The user bought a Kindle", "User purchased a Kindle"),
        ("Budget is £800", "The budget is 800 pounds"),
        (
            "Sam's birthday is 22/08",
            "Sam's birthday is on August 22nd",
        ),
        ("", ""),
    ] {
        assert_eq!(fact_difference(a, b), None, "{a} / {b}");
    }
    // Written alike, yet other facts.
    for (a, b, why) in [
        (
            "Medication at 8am",
            "Medication at 8pm",
            FactDifference::Number,
        ),
        ("Gym before work", "Gym after work", FactDifference::Word),
        (
            "User's manager is on leave in May",
            "User is on leave in May",
            FactDifference::Person,
        ),
        ("Lives in Lisbon", "Lives in Porto", FactDifference::Name),
        ("Gym on Mondays", "Gym on Fridays", FactDifference::Name),
        (
            "User has a cat",
            "User has two cats",
            FactDifference::Number,
        ),
    ] {
        assert_eq!(fact_difference(a, b), Some(why), "{a} / {b}");
    }
}
