//! The crate map of docs/ARCHITECTURE.md, enforced: dependency arrows point down only, `types`
//! depends on no outside crate but those its "may depend on" cell names, and the outside crates a
//! "must never" cell bans are out of reach (through every normal dependency).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::collections::{BTreeMap, BTreeSet};

/// For each workspace crate, the workspace crates it may depend on (normal dependencies).
fn allowed() -> BTreeMap<&'static str, &'static [&'static str]> {
    BTreeMap::from([
        ("types", &[][..]),
        // The indexes, fusion, chunking and embedders: plain data in and out, no store.
        ("memory-index", &["types"][..]),
        ("memory", &["types", "memory-index"][..]),
        ("tools", &["types", "memory"][..]),
        ("provider", &["types"][..]),
        ("runtime", &["types", "memory", "tools", "provider"][..]),
        // The gateway reaches memory, tools and providers only through `runtime`; `oxydra-vm`
        // (runner) composes each user's agent.
        // ... and serves `/mcp` through `mcp`, which gets the user's registry from `oxydra-vm`.
        ("gateway", &["types", "runtime", "mcp"][..]),
        ("mcp", &["types", "tools"][..]),
        (
            "runner",
            &[
                "types", "memory", "tools", "provider", "runtime", "gateway", "mcp", "sandbox",
            ][..],
        ),
        ("sandbox", &["types"][..]),
        ("shell-daemon", &["types", "sandbox"][..]),
        ("tui", &["types"][..]),
        ("test-support", &["types"][..]),
        ("oxydra-e2e", &[][..]),
    ])
}

/// The only outside crates `types` may depend on directly (the vocabulary is pure data).
const TYPES_OUTSIDE: &[&str] = &["serde", "serde_json", "thiserror"];

/// Third-party crates that must never appear among a crate's normal dependencies, direct or not.
fn forbidden_external() -> BTreeMap<&'static str, &'static [&'static str]> {
    BTreeMap::from([
        (
            "types",
            &["tokio", "reqwest", "libsql", "axum", "hyper"][..],
        ),
        ("tui", &["libsql"][..]),
        // The indexes never read or write a database: the store hands them changes.
        ("memory-index", &["libsql"][..]),
        // "provider: know about tools or memory": not even the store's engine.
        ("provider", &["libsql"][..]),
    ])
}

fn metadata() -> serde_json::Value {
    oxydra_e2e::cargo_metadata(&[]).unwrap()
}

#[test]
fn workspace_dependency_edges_point_down() {
    let meta = metadata();
    let allowed = allowed();
    let members: BTreeSet<&str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| {
            let id = p["id"].as_str()?;
            meta["workspace_members"]
                .as_array()?
                .iter()
                .any(|m| m == id)
                .then(|| p["name"].as_str())?
        })
        .collect();
    for name in &members {
        assert!(
            allowed.contains_key(name),
            "crate `{name}` is missing from the crate map"
        );
    }
    for pkg in meta["packages"].as_array().unwrap() {
        let name = pkg["name"].as_str().unwrap();
        if !members.contains(name) {
            continue;
        }
        for dep in pkg["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            let is_normal = dep["kind"].is_null();
            if is_normal && members.contains(dep_name) {
                assert!(
                    allowed[name].contains(&dep_name),
                    "`{name}` must not depend on `{dep_name}` (see docs/ARCHITECTURE.md)"
                );
            }
        }
    }
}

#[test]
fn types_depends_only_on_its_allowed_outside_crates() {
    let meta = metadata();
    let types = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "types" && p["source"].is_null())
        .expect("the types crate");
    let outside: Vec<&str> = types["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"].is_null())
        .map(|d| d["name"].as_str().unwrap())
        .filter(|name| !TYPES_OUTSIDE.contains(name))
        .collect();
    assert!(
        outside.is_empty(),
        "`types` depends on {outside:?}: it may depend only on {TYPES_OUTSIDE:?} (docs/ARCHITECTURE.md)"
    );
}

#[test]
fn forbidden_crates_are_unreachable() {
    let meta = metadata();
    let packages: BTreeMap<&str, &serde_json::Value> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    let nodes: BTreeMap<&str, &serde_json::Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    for (krate, banned) in forbidden_external() {
        let root = packages
            .iter()
            .find(|(_, p)| p["name"] == krate && p["source"].is_null())
            .map(|(id, _)| *id)
            .unwrap();
        // Walk normal (non-dev, non-build) dependencies transitively.
        let mut seen = BTreeSet::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            for dep in nodes[id]["deps"].as_array().unwrap() {
                let normal = dep["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null());
                if normal {
                    stack.push(dep["pkg"].as_str().unwrap());
                }
            }
        }
        for id in seen {
            let name = packages[id]["name"].as_str().unwrap();
            assert!(
                !banned.contains(&name),
                "`{krate}` reaches `{name}`, which it must never do"
            );
        }
    }
}
