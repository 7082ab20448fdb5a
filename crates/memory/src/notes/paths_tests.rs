//! Tests of the `/memories` path rules: canonical paths, ancestors and ranges below a directory.

use super::*;

#[test]
fn ancestors_and_bounds() {
    assert_eq!(
        ancestors("/memories/a/b/c.md"),
        vec!["/memories/a", "/memories/a/b"]
    );
    assert!(ancestors("/memories/a.md").is_empty());
    assert_eq!(
        below("/memories/a"),
        ("/memories/a/".to_owned(), "/memories/a0".to_owned())
    );
    assert!(check_canonical("/memories/a/../b").is_err());
    assert!(check_canonical("/memoriesx").is_err());
    assert!(check_canonical("/memories").is_ok());
}
