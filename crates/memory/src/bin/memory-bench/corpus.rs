//! Synthetic notes and queries: varied English-like sentences from word lists and a fixed seed.
//!
//! Words are drawn with a skew (frequent words first in each list), and about two thousand
//! generated proper nouns (projects, people, products) widen the vocabulary, so that keyword posting
//! lists and vector neighbourhoods look like those of a real, long-lived memory.

use crate::stats::Rng;

const NAMES: &str = "Alice Bob Carol David Emma Frank Grace Henry Irene Jack Karen Liam Maria Noah Olivia \
    Paul Quinn Rachel Sam Tina Umar Vera Walter Xena Yusuf Zoe Aaron Bella Carlos Diana Ethan Fiona George \
    Hannah Isaac Julia Kevin Laura Martin Nina Oscar Priya Ravi Sofia Thomas Uma Victor Wendy Yara Zack \
    Amir Beatriz Chen Dmitri Elena Farid Greta Hiro Ingrid Jonas Kenji Leila Mateo Nadia Omar Petra Rosa \
    Stefan Tariq Ulla Wei Ximena Yuki Zainab";
const RELATIONS: &str = "sister brother mother father friend colleague manager neighbour cousin aunt uncle \
    partner daughter son boss dentist doctor landlord teacher coach";
const PLACES: &str = "Berlin Paris London Lisbon Madrid Rome Vienna Prague Oslo Dublin Tokyo Seoul Boston \
    Denver Austin Toronto Montreal Sydney Auckland Nairobi Lagos Cairo Mumbai Delhi Singapore Bangkok Hanoi \
    Lima Bogota Santiago office kitchen garage garden library gym park station airport cafe bakery market \
    clinic school warehouse studio lab basement attic beach lake mountain village downtown harbour";
const NOUNS: &str = "meeting project report deadline budget invoice contract presentation email call \
    appointment flight hotel ticket recipe dinner lunch breakfast coffee tea book novel article paper \
    password account server database backup laptop phone charger keyboard monitor printer router camera \
    bicycle car train bus bike scooter apartment house rent mortgage loan salary bonus tax receipt gift \
    birthday anniversary wedding party concert movie series podcast song album guitar piano violin \
    painting sketch photo garden plant tomato basil rose tree dog cat puppy kitten horse bird fish \
    medicine allergy vitamin workout run marathon swim yoga hike trail tent backpack jacket shoes boots \
    sweater shirt dress watch ring necklace wallet key lock door window roof wall floor table chair sofa \
    bed lamp fridge oven stove kettle mug plate spoon knife fork bottle wine beer juice soup pasta pizza \
    salad bread cheese chocolate cake cookie pie sushi curry noodles rice beans coffee bug feature release \
    sprint roadmap review design prototype dashboard metric alert incident outage migration schema query \
    index cache queue worker thread container cluster deployment pipeline test benchmark library crate \
    module function variable config token certificate domain website blog newsletter survey interview \
    candidate offer promotion vacation holiday trip visa passport luggage map guide museum gallery \
    exhibition festival market course lesson exam grade thesis lecture workshop conference talk slide \
    poster grant proposal experiment dataset model paper draft chapter manuscript editor publisher \
    insurance claim repair plumber electrician mechanic battery tire engine garage parking fine permit \
    election vote petition volunteer charity donation fundraiser team league match game score trophy";
const VERBS: &str = "book cancel move review finish start send sign pay fix buy sell call visit plan \
    schedule postpone renew update install upgrade replace return order pick water feed walk clean paint \
    cook bake read write watch listen practise learn teach study share print scan backup restore deploy \
    merge test debug refactor document measure compare migrate archive delete rename organise pack \
    unpack collect deliver ship track check confirm remind email text meet join leave host invite thank";
const ADJECTIVES: &str = "new old big small quick slow early late cheap expensive quiet loud bright dark \
    warm cold spicy sweet sour bitter fresh stale blue red green yellow black white grey purple orange \
    weekly monthly yearly daily urgent important optional private public shared remote local broken \
    stable flaky fast careful tired happy busy calm nervous excited favourite annoying lovely strange \
    simple complex heavy light long short round square wooden metal plastic vintage modern rustic cosy";
const MONTHS: &str =
    "January February March April May June July August September October November December";
const DAYS: &str = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday";
const TIMES: &str = "morning afternoon evening night weekend week month year";
const SYLLABLES: &str = "ka lo mi ver tan sol dor rin bel fas gri hol jun kep lur mab nor pex quo rav \
    sil tor ul vek wim xan yor zel ar en is on us el";

/// The word lists, split once.
#[derive(Debug)]
pub struct Corpus {
    names: Vec<&'static str>,
    relations: Vec<&'static str>,
    places: Vec<&'static str>,
    nouns: Vec<&'static str>,
    verbs: Vec<&'static str>,
    adjectives: Vec<&'static str>,
    months: Vec<&'static str>,
    days: Vec<&'static str>,
    times: Vec<&'static str>,
    /// Generated proper nouns: project, product and shop names.
    coined: Vec<String>,
}

impl Default for Corpus {
    fn default() -> Self {
        let words = |s: &'static str| s.split_whitespace().collect::<Vec<_>>();
        let syllables = words(SYLLABLES);
        let mut rng = Rng::new(0x5EED_C0DE);
        let mut coined = Vec::with_capacity(2000);
        let mut seen = std::collections::HashSet::new();
        while coined.len() < 2000 {
            let parts = 2 + rng.below(2);
            let mut w: String = (0..parts)
                .map(|_| syllables[rng.below(syllables.len())])
                .collect();
            if let Some(first) = w.get(..1) {
                w = first.to_uppercase() + w.get(1..).unwrap_or("");
            }
            if seen.insert(w.clone()) {
                coined.push(w);
            }
        }
        Self {
            names: words(NAMES),
            relations: words(RELATIONS),
            places: words(PLACES),
            nouns: words(NOUNS),
            verbs: words(VERBS),
            adjectives: words(ADJECTIVES),
            months: words(MONTHS),
            days: words(DAYS),
            times: words(TIMES),
            coined,
        }
    }
}

impl Corpus {
    fn coined(&self, rng: &mut Rng) -> &str {
        self.coined
            .get(rng.skewed(self.coined.len()))
            .map_or("", String::as_str)
    }

    /// One note of 8–40 words.
    pub fn note(&self, rng: &mut Rng) -> String {
        let (n, n2, n3) = (
            rng.pick(&self.nouns),
            rng.pick(&self.nouns),
            rng.pick(&self.nouns),
        );
        let (a, a2) = (rng.pick(&self.adjectives), rng.pick(&self.adjectives));
        let (v, v2) = (rng.pick(&self.verbs), rng.pick(&self.verbs));
        let who = rng.pick(&self.names);
        let place = rng.pick(&self.places);
        let rel = rng.pick(&self.relations);
        let project = self.coined(rng).to_owned();
        let when = match rng.below(3) {
            0 => format!("on {}", rng.pick(&self.days)),
            1 => format!("by {} {}", 1 + rng.below(28), rng.pick(&self.months)),
            _ => format!("next {}", rng.pick(&self.times)),
        };
        let mut s = match rng.below(10) {
            0 => format!("{who} prefers the {a} {n} at the {place}, not the {a2} one."),
            1 => format!("Remember to {v} the {n} for {project} {when}."),
            2 => format!("My {rel} {who} wants to {v} a {a} {n} in {place} {when}."),
            3 => format!("The {n} of {project} is {a}; {who} will {v} the {n2} and {v2} the {n3}."),
            4 => format!("{who} said the {a} {n} from {place} was {a2} and asked me to {v} it."),
            5 => format!("Password hint for the {project} {n}: think of the {a} {n2} in {place}."),
            6 => format!(
                "Meeting with {who} about {project}: {v} the {n}, then {v2} the {a} {n2} {when}."
            ),
            7 => format!(
                "I usually {v} my {n} in the {rng_time} and keep the {a} {n2} near the {n3}.",
                rng_time = rng.pick(&self.times)
            ),
            8 => format!("{project} is the name of {who}'s {a} {n}; they bought it in {place}."),
            _ => format!(
                "Don't forget: the {a} {n} at {place} closes {when}, so {v} the {n2} early."
            ),
        };
        // A third of the notes carry a second clause, so lengths vary.
        if rng.below(3) == 0 {
            let extra = match rng.below(3) {
                0 => format!(
                    " Also, {} likes {} {}.",
                    rng.pick(&self.names),
                    rng.pick(&self.adjectives),
                    rng.pick(&self.nouns)
                ),
                1 => format!(
                    " The {} costs {} euros at {}.",
                    rng.pick(&self.nouns),
                    5 + rng.below(500),
                    self.coined(rng)
                ),
                _ => format!(
                    " {} will {} it after the {}.",
                    rng.pick(&self.names),
                    rng.pick(&self.verbs),
                    rng.pick(&self.nouns)
                ),
            };
            s.push_str(&extra);
        }
        s
    }

    /// One search query of 2–9 words, question-like or keyword-like.
    pub fn query(&self, rng: &mut Rng) -> String {
        let (n, n2) = (rng.pick(&self.nouns), rng.pick(&self.nouns));
        let (a, v) = (rng.pick(&self.adjectives), rng.pick(&self.verbs));
        let who = rng.pick(&self.names);
        let place = rng.pick(&self.places);
        match rng.below(7) {
            0 => format!("what does {who} prefer at the {place}"),
            1 => format!("when do I need to {v} the {n}"),
            2 => format!("{a} {n} {place}"),
            3 => format!("{} {n}", self.coined(rng)),
            4 => format!("who wants to {v} a {n2}"),
            5 => format!("password hint {}", self.coined(rng)),
            _ => format!("where did {who} buy the {a} {n}"),
        }
    }
}
