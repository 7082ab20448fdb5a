//! `memory-bench`: retrieval quality on LoCoMo and latency/size on synthetic notes.
//!
//! ```text
//! memory-bench locomo <locomo.json> [--embedder builtin|hash] [--load import|save|conversations] [--vector-leg auto|exact|approximate] [--sweep on|off] [--save FILE] [--baseline FILE]
//! memory-bench latency [--notes 1000,10000,100000] [--embedder builtin|hash] [--busy-cores 1]
//! memory-bench conversations <locomo.json> [--rows 20000,100000] [--embedder builtin|hash]
//! memory-bench probe [--embedder builtin|hash]
//! memory-bench duplicates [--notes 10000] [--checks 300] [--embedder builtin|hash]
//! memory-bench stores --sqld <path> [--notes 10000] [--embedder builtin|hash]
//! memory-bench vectors <locomo.json> [--rows 100000] [--out DIR] [--embedder builtin|hash]
//! memory-bench open --dir DIR [--notes 1000000] [--reopens 3] [--queries 300] [--busy-cores N]
//! memory-bench kernels [--rows 1000000] [--passes 50] [--busy-cores N]
//! memory-bench scopes <locomo.json> [--notes 10000] [--messages 100000] [--queries 300] [--busy-cores 0,1] [--dir DIR]
//! ```
//! See `docs/benchmarks.md` for the protocol and the figures.

mod breakdown;
mod conversations;
mod corpus;
mod duplicates;
mod latency;
mod locomo;
mod locomo_compare;
mod locomo_load;
mod open;
mod organised;
mod probe;
mod scopes;
mod scopes_leg;
mod stats;
mod stores;
mod vectors;

use std::error::Error;
use std::sync::Arc;

use memory::Embedder;
use types::{EmbeddingBackend, EmbeddingConfig};

pub type BenchResult<T> = Result<T, Box<dyn Error>>;

const USAGE: &str = "usage:
  memory-bench locomo <locomo.json> [--embedder builtin|hash] [--load import|save|conversations] [--vector-leg auto|exact|approximate] [--sweep on|off] [--save FILE] [--baseline FILE]
  memory-bench latency [--notes 1000,10000,100000] [--embedder builtin|hash] [--busy-cores N]
  memory-bench conversations <locomo.json> [--rows 20000,100000] [--embedder builtin|hash]
  memory-bench probe [--embedder builtin|hash]
  memory-bench duplicates [--notes 10000] [--checks 300] [--embedder builtin|hash]
  memory-bench organised [--notes 100000] [--queries 200] [--embedder builtin|hash]
  memory-bench stores --sqld <path> [--notes 10000] [--embedder builtin|hash] [--queries 300] [--saves 200]
  memory-bench vectors <locomo.json> [--rows 100000] [--out DIR] [--embedder builtin|hash]
  memory-bench open --dir DIR [--notes 1000000] [--reopens 3] [--queries 300] [--busy-cores N] [--embedder builtin|hash]
  memory-bench kernels [--rows 1000000] [--passes 50] [--busy-cores N]
  memory-bench scopes <locomo.json> [--notes 10000] [--messages 100000] [--queries 300] [--busy-cores 0,1] [--dir DIR] [--embedder builtin|hash]";

/// Which embedding backend a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderKind {
    Builtin,
    Hash,
}

impl EmbedderKind {
    fn parse(s: &str) -> BenchResult<Self> {
        match s {
            "builtin" => Ok(Self::Builtin),
            "hash" => Ok(Self::Hash),
            other => Err(format!("unknown embedder {other:?} (builtin or hash)").into()),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Hash => "hash",
        }
    }

    pub fn build(self) -> BenchResult<Arc<dyn Embedder>> {
        let backend = match self {
            Self::Builtin => EmbeddingBackend::Builtin,
            Self::Hash => EmbeddingBackend::Hash,
        };
        Ok(memory::embedding::from_config(&EmbeddingConfig {
            backend,
            ..Default::default()
        })?)
    }
}

/// Flags after the subcommand: `--name value` pairs and positional arguments.
#[derive(Debug, Default)]
struct Args {
    positional: Vec<String>,
    flags: Vec<(String, String)>,
}

impl Args {
    fn parse(raw: impl Iterator<Item = String>) -> BenchResult<Self> {
        let mut args = Self::default();
        let mut raw = raw.peekable();
        while let Some(arg) = raw.next() {
            match arg.strip_prefix("--") {
                Some(name) => {
                    let value = raw
                        .next()
                        .ok_or_else(|| format!("--{name} needs a value"))?;
                    args.flags.push((name.to_owned(), value));
                }
                None => args.positional.push(arg),
            }
        }
        Ok(args)
    }

    fn flag(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn check_known(&self, known: &[&str]) -> BenchResult<()> {
        match self
            .flags
            .iter()
            .find(|(n, _)| !known.contains(&n.as_str()))
        {
            Some((n, _)) => Err(format!("unknown flag --{n}\n{USAGE}").into()),
            None => Ok(()),
        }
    }

    fn embedder(&self) -> BenchResult<EmbedderKind> {
        EmbedderKind::parse(self.flag("embedder").unwrap_or("builtin"))
    }
}

/// The unit vectors of `texts` (queries), in order, one embedding call each as a search makes.
pub(crate) async fn unit_vectors<T: AsRef<str>>(
    embedder: &dyn Embedder,
    texts: &[T],
) -> BenchResult<Vec<Vec<f32>>> {
    let mut vectors = Vec::with_capacity(texts.len());
    for text in texts {
        let mut v = embedder.embed(&[text.as_ref().to_owned()]).await?.remove(0);
        memory::embedding::normalize(&mut v);
        vectors.push(v);
    }
    Ok(vectors)
}

/// `--vector-leg`: how the vector leg finds its candidates.
fn parse_leg(s: &str) -> BenchResult<memory::VectorLeg> {
    match s {
        "auto" => Ok(memory::VectorLeg::Auto),
        "exact" => Ok(memory::VectorLeg::Exact),
        "approximate" => Ok(memory::VectorLeg::Approximate),
        other => Err(format!("unknown --vector-leg {other:?} (auto, exact or approximate)").into()),
    }
}

fn main() -> BenchResult<()> {
    let mut raw = std::env::args().skip(1);
    let command = raw.next().unwrap_or_default();
    let args = Args::parse(raw)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match command.as_str() {
        "locomo" => {
            args.check_known(&[
                "embedder",
                "load",
                "vector-leg",
                "sweep",
                "save",
                "baseline",
            ])?;
            let file = args.positional.first().ok_or(USAGE)?;
            let load = locomo::Load::parse(args.flag("load").unwrap_or("import"))?;
            let leg = parse_leg(args.flag("vector-leg").unwrap_or("auto"))?;
            let options = locomo::Options {
                sweep: args.flag("sweep") != Some("off"),
                save: args.flag("save").map(Into::into),
                baseline: args.flag("baseline").map(Into::into),
            };
            runtime.block_on(locomo::run(
                file.as_ref(),
                args.embedder()?,
                load,
                leg,
                &options,
            ))
        }
        "conversations" => {
            args.check_known(&["embedder", "rows"])?;
            let file = args.positional.first().ok_or(USAGE)?;
            let sizes = args
                .flag("rows")
                .unwrap_or("20000,100000")
                .split(',')
                .map(|s| s.trim().replace('_', "").parse::<usize>())
                .collect::<Result<Vec<_>, _>>()?;
            runtime.block_on(conversations::run(file.as_ref(), &sizes, args.embedder()?))
        }
        "latency" => {
            args.check_known(&["embedder", "notes", "queries", "saves", "busy-cores"])?;
            let sizes = args
                .flag("notes")
                .unwrap_or("1000,10000,100000")
                .split(',')
                .map(|s| s.trim().replace('_', "").parse::<usize>())
                .collect::<Result<Vec<_>, _>>()?;
            let counts = latency::Counts {
                queries: args.flag("queries").map_or(Ok(300), str::parse)?,
                saves: args.flag("saves").map_or(Ok(200), str::parse)?,
                busy_cores: args.flag("busy-cores").map_or(Ok(0), str::parse)?,
            };
            runtime.block_on(latency::run(&sizes, args.embedder()?, counts))
        }
        "organised" => {
            args.check_known(&["embedder", "notes", "queries"])?;
            let n = args.flag("notes").map_or(Ok(100_000), str::parse)?;
            let queries = args.flag("queries").map_or(Ok(200), str::parse)?;
            runtime.block_on(organised::run(n, args.embedder()?, queries))
        }
        "stores" => {
            args.check_known(&["embedder", "notes", "queries", "saves", "sqld"])?;
            let sqld = args.flag("sqld").ok_or(USAGE)?;
            let notes = args.flag("notes").map_or(Ok(10_000), str::parse)?;
            let queries = args.flag("queries").map_or(Ok(300), str::parse)?;
            let saves = args.flag("saves").map_or(Ok(200), str::parse)?;
            runtime.block_on(stores::run(
                sqld.as_ref(),
                notes,
                args.embedder()?,
                queries,
                saves,
            ))
        }
        "duplicates" => {
            args.check_known(&["embedder", "notes", "checks"])?;
            let n = args.flag("notes").map_or(Ok(10_000), str::parse)?;
            let checks = args.flag("checks").map_or(Ok(300), str::parse)?;
            runtime.block_on(duplicates::run(n, args.embedder()?, checks))
        }
        "vectors" => {
            args.check_known(&["embedder", "rows", "out"])?;
            let file = args.positional.first().ok_or(USAGE)?;
            let rows = args.flag("rows").map_or(Ok(100_000), str::parse)?;
            let out = args.flag("out").unwrap_or("target/bench-vectors");
            runtime.block_on(vectors::run(
                file.as_ref(),
                rows,
                out.as_ref(),
                args.embedder()?,
            ))
        }
        "open" => {
            args.check_known(&[
                "embedder",
                "dir",
                "notes",
                "reopens",
                "queries",
                "busy-cores",
            ])?;
            let dir = args.flag("dir").ok_or(USAGE)?;
            let run = open::OpenRun {
                notes: args.flag("notes").map_or(Ok(1_000_000), str::parse)?,
                reopens: args.flag("reopens").map_or(Ok(3), str::parse)?,
                queries: args.flag("queries").map_or(Ok(300), str::parse)?,
                busy_cores: args.flag("busy-cores").map_or(Ok(0), str::parse)?,
            };
            runtime.block_on(open::run(dir.as_ref(), args.embedder()?, run))
        }
        "kernels" => {
            args.check_known(&["rows", "passes", "busy-cores"])?;
            open::kernels(
                args.flag("rows").map_or(Ok(1_000_000), str::parse)?,
                args.flag("passes").map_or(Ok(50), str::parse)?,
                args.flag("busy-cores").map_or(Ok(0), str::parse)?,
            )
        }
        "scopes" => {
            args.check_known(&[
                "embedder",
                "notes",
                "messages",
                "queries",
                "busy-cores",
                "dir",
            ])?;
            let file = args.positional.first().ok_or(USAGE)?;
            let run = scopes::ScopesRun {
                notes: args.flag("notes").map_or(Ok(10_000), str::parse)?,
                messages: args.flag("messages").map_or(Ok(100_000), str::parse)?,
                queries: args.flag("queries").map_or(Ok(300), str::parse)?,
                busy_cores: args
                    .flag("busy-cores")
                    .unwrap_or("0,1")
                    .split(',')
                    .map(|s| s.trim().parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()?,
                dir: args.flag("dir").map(Into::into),
            };
            runtime.block_on(scopes::run(file.as_ref(), args.embedder()?, run))
        }
        "open-rss" => {
            args.check_known(&["embedder", "db"])?;
            let db = args.flag("db").ok_or(USAGE)?;
            runtime.block_on(scopes::open_rss_child(db.as_ref(), args.embedder()?))
        }
        "probe" => {
            args.check_known(&["embedder"])?;
            runtime.block_on(probe::run(args.embedder()?))
        }
        _ => Err(USAGE.into()),
    }
}
