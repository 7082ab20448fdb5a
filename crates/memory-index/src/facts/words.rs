//! The word lists of the fact check: synonyms, short forms of days and months, negations,
//! comparisons, people and framing. General English for notes about a person, not a list of
//! the labelled pairs' words.

/// Words that mean the same in notes about a person, mapped to one of them.
pub(super) fn synonym(lower: &str) -> Option<&'static str> {
    const GROUPS: &[(&str, &[&str])] = &[
        ("child", &["kid", "kids", "children", "child"]),
        ("mother", &["mum", "mom", "mummy", "mommy", "mother"]),
        ("father", &["dad", "daddy", "father"]),
        ("grandmother", &["grandma", "granny", "gran", "grandmother"]),
        (
            "grandfather",
            &["grandpa", "grandad", "granddad", "grandfather"],
        ),
        (
            "learn",
            &["learning", "learns", "studying", "studies", "study"],
        ),
        ("birth", &["born", "birthday", "birth"]),
        ("fear", &["afraid", "scared", "fear", "fears"]),
        ("brief", &["short", "shorter", "brief", "concise"]),
        (
            "reply",
            &[
                "answer",
                "answers",
                "replies",
                "reply",
                "response",
                "responses",
            ],
        ),
        ("before", &["earlier", "before"]),
        ("after", &["later", "after"]),
        (
            "live",
            &["lives", "lived", "living", "home", "based", "resides"],
        ),
        ("fan", &["fan", "fans", "supports", "support"]),
        ("deadline", &["deadline", "deadlines", "due"]),
        ("doctor", &["doctor", "doctors", "physician", "gp"]),
        ("holiday", &["holiday", "holidays", "vacation", "vacations"]),
        ("buy", &["buy", "buys", "bought", "purchase", "purchased"]),
        ("move", &["move", "moved", "moves", "relocate", "relocated"]),
        (
            "cycle",
            &["bike", "bikes", "biking", "cycle", "cycles", "cycling"],
        ),
        ("car", &["car", "cars", "vehicle"]),
        ("film", &["film", "films", "movie", "movies"]),
        (
            "start",
            &["start", "starts", "started", "begin", "begins", "began"],
        ),
        ("flat", &["flat", "apartment"]),
        (
            "roommate",
            &[
                "roommate",
                "roommates",
                "housemate",
                "housemates",
                "flatmate",
                "flatmates",
            ],
        ),
        ("sofa", &["sofa", "couch"]),
        ("lawyer", &["lawyer", "attorney"]),
        ("phone", &["phone", "mobile", "cellphone"]),
        ("minute", &["min", "mins", "minute", "minutes"]),
        ("hour", &["hr", "hrs", "hour", "hours"]),
        (
            "kilometre",
            &[
                "km",
                "kms",
                "kilometre",
                "kilometres",
                "kilometer",
                "kilometers",
            ],
        ),
        (
            "kilogram",
            &["kg", "kgs", "kilo", "kilos", "kilogram", "kilograms"],
        ),
        // A currency however it is written: its sign (a token of its own, see `tokens`), its
        // code or its name.
        ("gbp", &["£", "gbp", "pound", "pounds", "quid"]),
        ("usd", &["$", "usd", "dollar", "dollars", "bucks"]),
        ("eur", &["€", "eur", "euro", "euros"]),
    ];
    GROUPS
        .iter()
        .find(|(_, words)| words.contains(&lower))
        .map(|(to, _)| *to)
}

/// A day or a month however it is written (`Mon`, `Mondays`, `Sept`), as its full name. The
/// short forms that are also words (`sat`, `sun`, `wed`, `mar`, `may`) count only when
/// `capitalised`.
pub(super) fn calendar(lower: &str, capitalised: bool) -> Option<&'static str> {
    const NAMES: &[(&str, &[&str], &[&str])] = &[
        ("monday", &["mon", "mondays"], &[]),
        ("tuesday", &["tue", "tues", "tuesdays"], &[]),
        ("wednesday", &["wednesdays"], &["wed"]),
        ("thursday", &["thu", "thur", "thurs", "thursdays"], &[]),
        ("friday", &["fri", "fridays"], &[]),
        ("saturday", &["saturdays"], &["sat"]),
        ("sunday", &["sundays"], &["sun"]),
        ("january", &["jan"], &[]),
        ("february", &["feb"], &[]),
        ("march", &[], &["mar"]),
        ("april", &["apr"], &[]),
        ("may", &[], &["may"]),
        ("june", &["jun"], &[]),
        ("july", &["jul"], &[]),
        ("august", &["aug"], &[]),
        ("september", &["sep", "sept"], &[]),
        ("october", &["oct"], &[]),
        ("november", &["nov"], &[]),
        ("december", &["dec"], &[]),
    ];
    NAMES
        .iter()
        .find(|(_, short, word_like)| {
            short.contains(&lower) || (capitalised && word_like.contains(&lower))
        })
        .map(|(full, ..)| *full)
}

/// The months' names, in order (the query's time reading in `memory` uses them too).
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The number of a month named by [`calendar`] (`march` → 3).
pub(super) fn month_number(full: &str) -> Option<u32> {
    let at = MONTHS.iter().position(|m| *m == full)?;
    u32::try_from(at + 1).ok()
}

/// Words (or their stems) that turn a statement round.
pub(super) const NEGATIONS: &[&str] = &[
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "least",
    "dislike", "dislik", "hate", "stop", "stopped", "quit", "avoid", "avoids", "avoided",
];

/// Stop words that still make a fact: `before` work is not `after` work.
pub(super) const ORDER: &[&str] = &["before", "after"];

/// Comparisons, where the order of the compared words is the fact.
pub(super) const COMPARISONS: &[&str] = &["over", "than", "instead", "rather", "versus", "vs"];

/// People a note may be about: one named in one note and not the other makes another fact.
pub(super) const PEOPLE: &[&str] = &[
    "mother",
    "father",
    "parent",
    "parents",
    "sister",
    "brother",
    "sibling",
    "son",
    "daughter",
    "child",
    "wife",
    "husband",
    "partner",
    "spouse",
    "boyfriend",
    "girlfriend",
    "fiance",
    "fiancee",
    "friend",
    "boss",
    "colleague",
    "coworker",
    "client",
    "niece",
    "nephew",
    "aunt",
    "uncle",
    "cousin",
    "grandmother",
    "grandfather",
    "grandson",
    "granddaughter",
    "neighbour",
    "neighbor",
    "roommate",
    "manager",
    "landlord",
];

/// Framing: words that say how a fact is put, not what it is (stems and surface forms).
pub(super) const FRAMING: &[&str] = &[
    "user", "s", "like", "love", "enjoy", "prefer", "want", "wish", "favourit", "favorit", "best",
    "call", "name", "known", "use", "us", "go", "goe", "went", "get", "got", "take", "took",
    "keep", "kept", "follow", "make", "made", "work", "play", "give", "realli", "every", "each",
    "alway", "usual", "also", "most", "other", "rather", "would", "will", "happen", "fall", "turn",
    "attend", "out", "up", "among", "over", "instead", "per", "much", "own", "current", "now",
    "one",
];
