//! `runner.toml` parsing: defaults, mistakes that say what to fix, the example file, provider
//! examples, container settings, backoff.

use super::*;

fn parse(text: &str) -> Result<RunnerConfig, String> {
    RunnerConfig::parse(text, Path::new("/etc/oxydra/runner.toml")).map_err(|e| e.to_string())
}

#[test]
fn defaults_resolve_against_the_file() {
    let c = parse("[users.alice]\n[users.bob]\ngateway_port = 9000\n").unwrap();
    assert_eq!(c.workspace_root, PathBuf::from("/etc/oxydra/workspaces"));
    assert_eq!(c.tier, Tier::Container);
    assert_eq!(c.container, ContainerSettings::default());
    assert_eq!(c.supervision, Supervision::default());
    let ports: Vec<(&str, u16)> = c
        .users
        .iter()
        .map(|u| (u.id.as_str(), u.gateway_port))
        .collect();
    assert_eq!(ports, vec![("alice", 0), ("bob", 9000)]);
    assert_eq!(c.select(Some("bob")).unwrap()[0].gateway_port, 9000);
    assert_eq!(c.select(None).unwrap().len(), 2);
}

#[test]
fn a_user_may_run_in_another_tier_than_the_default() {
    let c =
        parse("tier = \"process\"\n[users.alice]\n[users.bob]\ntier = \"container\"\n").unwrap();
    let tiers: Vec<(&str, Tier)> = c.users.iter().map(|u| (u.id.as_str(), u.tier)).collect();
    assert_eq!(
        tiers,
        vec![("alice", Tier::Process), ("bob", Tier::Container)]
    );
    assert_eq!(c.tier, Tier::Process);
    let c = parse("[users.carol]\ntier = \"process\"\n").unwrap();
    assert_eq!((c.tier, c.users[0].tier), (Tier::Container, Tier::Process));
    let err = parse("[users.dan]\ntier = \"vm\"\n").unwrap_err();
    assert!(err.contains("unknown variant `vm`"), "{err}");
}

#[test]
fn mistakes_say_what_to_fix() {
    let check = |text: &str, needle: &str| {
        let err = parse(text).unwrap_err();
        assert!(err.contains(needle), "{text}: {err}");
    };
    check("workspace_rot = \"x\"", "unknown field `workspace_rot`");
    check("tier = \"vm\"", "unknown variant `vm`");
    check("[users.\"a/b\"]", "[users.a/b]");
    check(
        "[supervision]\nrestart = \"sometimes\"",
        "unknown variant `sometimes`",
    );
    check(
        "agent_config = \"nope.toml\"",
        "agent_config /etc/oxydra/nope.toml does not exist",
    );
    let c = parse("[users.alice]\n[users.bob]").unwrap();
    let unknown = |name: &str| c.select(Some(name)).unwrap_err().to_string();
    assert!(
        unknown("carol").contains(
            "no user `carol` (configured: alice, bob); add carol with `runner --user carol init`"
        ),
        "{}",
        unknown("carol")
    );
    assert!(unknown("alcie").contains("did you mean `alice`?"));
    assert!(unknown("bbo").contains("did you mean `bob`?"));
    assert!(!unknown("zed").contains("did you mean"));
}

#[test]
fn an_empty_api_key_env_means_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.toml");
    std::fs::write(
        &path,
        "[provider]\nbase_url = \"http://127.0.0.1:11434/v1\"\napi_key_env = \"\"\n",
    )
    .unwrap();
    assert_eq!(
        load_agent_config(Some(&path)).unwrap().provider.api_key_env,
        None
    );
    std::fs::write(&path, "[provider]\nmodel = \"x\"\n").unwrap();
    assert_eq!(
        load_agent_config(Some(&path))
            .unwrap()
            .provider
            .api_key_env
            .as_deref(),
        Some("OPENAI_API_KEY")
    );
    std::fs::write(&path, "[provider]\nmodle = \"x\"\n").unwrap();
    assert!(
        load_agent_config(Some(&path))
            .unwrap_err()
            .to_string()
            .contains("unknown field `modle`")
    );
}

/// An unknown `[user] timezone` is refused with the file, whether or not schedules are on (the
/// memory search reads "yesterday" in it too); a known one loads.
#[test]
fn an_unknown_time_zone_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.toml");
    for schedules in ["", "[schedules]\nenabled = false\n"] {
        std::fs::write(
            &path,
            format!("{schedules}[user]\ntimezone = \"Europe/Pariss\"\n"),
        )
        .unwrap();
        let error = load_agent_config(Some(&path)).unwrap_err().to_string();
        assert!(
            error.contains("invalid setting `user.timezone`: unknown time zone `Europe/Pariss`")
                && error.contains("Europe/Paris"),
            "{error}"
        );
    }
    std::fs::write(&path, "[user]\ntimezone = \"Pacific/Auckland\"\n").unwrap();
    let config = load_agent_config(Some(&path)).unwrap();
    assert_eq!(config.user.timezone.as_deref(), Some("Pacific/Auckland"));
}

/// A malformed `[gateway] allow_hosts` entry stops the load with the setting, the entry and what
/// is wrong with it; good entries load as the gateway reads them.
#[test]
fn a_malformed_allowed_host_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.toml");
    std::fs::write(
        &path,
        "[gateway]\nallow_hosts = [\"alice.lan\", \"https://alice.lan:8101\"]\n",
    )
    .unwrap();
    let error = load_agent_config(Some(&path)).unwrap_err().to_string();
    let expected = "invalid setting `gateway.allow_hosts`: \"https://alice.lan:8101\" is not bare";
    assert!(error.contains(expected), "{error}");
    std::fs::write(&path, "[gateway]\nallow_hosts = [\"Alice.LAN\"]\n").unwrap();
    let config = load_agent_config(Some(&path)).unwrap();
    assert_eq!(
        config.gateway.listed_hosts(),
        Ok(vec![types::Host::Name("alice.lan".into())])
    );
}

/// Each provider example in README.md, under `[provider]`, is a valid agent.toml whose
/// `base_url` has the form its wire format needs (the Anthropic client appends /v1/messages,
/// the OpenAI-compatible one /chat/completions).
#[test]
fn the_readme_provider_examples_are_valid() {
    let readme = include_str!("../../../README.md");
    let block = readme
        .split("```toml\n")
        .map(|rest| rest.split("```").next().unwrap_or_default())
        .find(|b| b.contains("# Anthropic"))
        .expect("a toml block with the Anthropic example");
    let mut kinds = Vec::new();
    for example in block.split("\n\n") {
        let name = example.lines().next().unwrap_or_default().to_owned();
        let config: AgentConfig = toml::from_str(&format!("[provider]\n{example}"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        config.validate().unwrap();
        let p = &config.provider;
        let v1 = p.base_url.trim_end_matches('/').ends_with("/v1");
        assert_eq!(
            v1,
            p.kind == types::ProviderKind::Openai,
            "{name}: {}",
            p.base_url
        );
        kinds.push((name, p.kind));
    }
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert!(
        kinds
            .iter()
            .any(|(n, k)| n.starts_with("# Anthropic") && *k == types::ProviderKind::Anthropic)
    );
}

#[test]
fn the_example_file_states_the_defaults() {
    let c = parse(include_str!("../../../runner.toml.example")).unwrap();
    assert_eq!(c.tier, Tier::Container);
    assert_eq!(c.container, ContainerSettings::default());
    assert_eq!(c.supervision, Supervision::default());
    assert_eq!(c.users[0].shell_network, ShellNetwork::None);
    assert_eq!(c.memory_encryption, crate::MemoryEncryption::default());
}

#[test]
fn container_settings_are_checked() {
    let c = parse(
        "[container]\nshell_network = \"host\"\n[container.shell_vm]\ncpus = 0.5\n\
         [users.a]\n[users.b]\nshell_network = \"none\"\n",
    )
    .unwrap();
    assert_eq!(c.container.shell_vm.nano_cpus, 500_000_000);
    let nets: Vec<ShellNetwork> = c.users.iter().map(|u| u.shell_network).collect();
    assert_eq!(nets, vec![ShellNetwork::Host, ShellNetwork::None]);
    for (text, needle) in [
        (
            "[container]\nshell_network = \"bridge\"",
            "unknown variant `bridge`",
        ),
        (
            "[container.oxydra_vm]\nmemory_mb = 8",
            "memory_mb = 8 is too small",
        ),
        (
            "[container.shell_vm]\ncpus = -1.0",
            "cpus = -1 is out of range",
        ),
        ("[container.shell_vm]\npids = 2", "pids = 2 is too small"),
        (
            "[container]\noxydra_vm_image = \"a b\"",
            "must be an image reference",
        ),
        ("[container]\nimage = \"x\"", "unknown field `image`"),
    ] {
        let err = parse(text).unwrap_err();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn backoff_doubles_up_to_the_cap() {
    let s = Supervision::default();
    let waits: Vec<u64> = (1..=7).map(|n| s.backoff(n).as_millis() as u64).collect();
    assert_eq!(waits, vec![500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
}

#[test]
fn a_user_names_the_model_their_sessions_start_on() {
    let c = parse("[users.alice]\nmodel = \"fast\"\n[users.bob]\n").unwrap();
    assert_eq!(c.users[0].model.as_deref(), Some("fast"));
    assert_eq!(c.users[1].model, None);
    let err = parse("[users.alice]\nmodel = \"two words\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not a model name"), "{err}");
}
