//! Which shared libraries a binary needs, as `ldd` reports them (the ELF interpreter included).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::RunnerError;

/// How a binary is linked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Linkage {
    /// No shared library at all.
    Static,
    /// The absolute paths of its shared libraries and of its interpreter, in `ldd`'s order.
    Dynamic(Vec<PathBuf>),
}

/// Runs `ldd binary` and reads its answer.
pub(crate) fn linkage(binary: &Path) -> Result<Linkage, RunnerError> {
    let output = Command::new("ldd")
        .arg(binary)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .map_err(RunnerError::io("run `ldd` on", binary))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    let problem = |problem: String| RunnerError::Config {
        path: binary.to_owned(),
        problem,
    };
    let linkage = parse_ldd(&text).map_err(problem)?;
    if !output.status.success() && linkage != Linkage::Static {
        return Err(problem(format!("`ldd` failed: {}", text.trim())));
    }
    Ok(linkage)
}

/// Reads `ldd`'s output. `linux-vdso.so.1` (given by the kernel) is left out; a library `ldd`
/// cannot find is an error naming it.
pub(crate) fn parse_ldd(output: &str) -> Result<Linkage, String> {
    let mut libraries: Vec<PathBuf> = Vec::new();
    let mut marked_static = false;
    for line in output.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("not a dynamic executable") || line.contains("statically linked") {
            marked_static = true;
            continue;
        }
        let (name, rest) = match line.split_once("=>") {
            Some((name, rest)) => (name.trim(), rest.trim()),
            None => ("", line),
        };
        if rest.starts_with("not found") {
            return Err(format!(
                "it needs the shared library {name}, which is not found on this host"
            ));
        }
        let path = rest.split(" (0x").next().unwrap_or_default().trim();
        if path.starts_with('/') && !libraries.iter().any(|l| l.as_os_str() == path) {
            libraries.push(PathBuf::from(path));
        }
    }
    match (libraries.is_empty(), marked_static) {
        (false, _) => Ok(Linkage::Dynamic(libraries)),
        (true, true) => Ok(Linkage::Static),
        (true, false) => Err(format!(
            "`ldd` printed no library and did not say it is static: {}",
            output.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(output: &str, expected: Result<Linkage, &str>) {
        assert_eq!(
            parse_ldd(output),
            expected.map_err(str::to_owned),
            "{output}"
        );
    }

    fn dynamic(paths: &[&str]) -> Result<Linkage, &'static str> {
        Ok(Linkage::Dynamic(paths.iter().map(PathBuf::from).collect()))
    }

    #[test]
    fn reads_ldd_output() {
        check(
            "\tlinux-vdso.so.1 (0x00007ffc6a5e8000)\n\
             \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f9f8537d000)\n\
             \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f9f84a1e000)\n\
             \t/lib64/ld-linux-x86-64.so.2 (0x00007f9f853b0000)\n",
            dynamic(&[
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2",
            ]),
        );
        // Older glibc prints the vDSO with an empty arrow.
        check(
            "\tlinux-vdso.so.1 =>  (0x00007fff)\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n",
            dynamic(&["/lib/libc.so.6"]),
        );
        check("\tnot a dynamic executable\n", Ok(Linkage::Static));
        check("\tstatically linked\n", Ok(Linkage::Static));
        check(
            "\tlinux-vdso.so.1 (0x1)\n\tlibfoo.so.3 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x2)\n",
            Err("it needs the shared library libfoo.so.3, which is not found on this host"),
        );
        check(
            "",
            Err("`ldd` printed no library and did not say it is static: "),
        );
    }

    #[test]
    fn the_running_test_binary_is_dynamic_with_an_interpreter() {
        let exe = std::env::current_exe().unwrap();
        match linkage(&exe).unwrap() {
            Linkage::Dynamic(libs) => assert!(
                libs.iter()
                    .any(|l| l.to_string_lossy().contains("ld-linux")),
                "{libs:?}"
            ),
            Linkage::Static => panic!("test binaries are dynamically linked here"),
        }
    }
}
