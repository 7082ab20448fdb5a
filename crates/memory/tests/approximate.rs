//! The behavioural suite once more with the approximate vector leg forced at every size: this test
//! runs this very test binary again (every other test, the sqld ones included) with
//! [`crate::common::APPROXIMATE_ENV`] set, so every fixture store keeps binary codes and
//! searches through them, and fails when any test of that run fails.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use test_support::{Need, need};

#[test]
#[ignore = "needs sqld"]
fn the_suite_passes_with_the_approximate_leg() {
    need(Need::Sqld);
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new(exe)
        .args([
            "--include-ignored",
            "--skip",
            "the_suite_passes_with_the_approximate_leg",
        ])
        .env(crate::common::APPROXIMATE_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the suite failed with the approximate leg:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The run really ran the suite (not an empty filter).
    let passed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("test result: ok. "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    assert!(passed > 50, "only {passed} tests ran:\n{stdout}");
}
