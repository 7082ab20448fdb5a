//! `agent.toml.example` is the documentation of every setting: it must parse, validate and equal the
//! defaults it claims to show.

#[test]
fn agent_toml_example_is_the_default_config() {
    let text = std::fs::read_to_string(oxydra_e2e::workspace_root().join("agent.toml.example"))
        .expect("agent.toml.example exists");
    let parsed: types::AgentConfig = toml::from_str(&text).expect("agent.toml.example parses");
    parsed.validate().expect("agent.toml.example validates");
    assert_eq!(parsed, types::AgentConfig::default());
}
