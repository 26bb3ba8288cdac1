//! The command contracts of docs/design.md ("`awari-solver`:" and "`awari-probe`:", a bullet a
//! command), read for the tests that hold each binary's `--help` to them, both ways: every
//! option a contract names is one its command takes, and every option a command takes is in
//! its contract or is one of the options the docs give for every command. The probe's tests
//! include this file with `#[path]`.

use std::collections::BTreeSet;

/// A file of this checkout by its path from the repository's root (`docs/cli.md`), as the
/// tests that hold the docs to the binaries read it: both crates sit one level below the root.
pub fn repo_file(path: &str) -> String {
    let full = format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// docs/design.md, as this checkout has it.
fn design() -> String {
    repo_file("docs/design.md")
}

/// The `--options` a text names (`--depth` in `--depth-form` is not one).
fn options_in(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let name: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            found.insert(format!("--{name}"));
        }
        rest = &rest[at + 2 + name.len()..];
    }
    found
}

/// The contracts of `binary`: each command with the options its bullet names, and the options
/// of the bullet that starts with an option (what `--threads`, sizes and the like mean for
/// every command that has them).
pub fn contracts(binary: &str) -> (Vec<(String, BTreeSet<String>)>, BTreeSet<String>) {
    let text = design();
    let head = format!("`{binary}`:");
    let mut lines = text.lines().skip_while(|l| *l != head).skip(1);
    let mut bullets: Vec<String> = Vec::new();
    for line in &mut lines {
        if line.starts_with("### ") || (line.starts_with('`') && line.ends_with("`:")) {
            break;
        }
        if let Some(b) = line.strip_prefix("- ") {
            bullets.push(b.to_string());
        } else if let (Some(last), true) = (bullets.last_mut(), line.starts_with("  ")) {
            last.push(' ');
            last.push_str(line.trim());
        }
    }
    assert!(
        !bullets.is_empty(),
        "docs/design.md has no contracts of {binary}"
    );
    let (mut commands, mut every) = (Vec::new(), BTreeSet::new());
    for b in bullets {
        let first = b.trim_start_matches('`');
        let name: String = first
            .chars()
            .take_while(|c| *c != ' ' && *c != '`')
            .collect();
        if name.starts_with("--") {
            every.extend(options_in(&b));
        } else {
            commands.push((name, options_in(&b)));
        }
    }
    (commands, every)
}

/// The options a `--help` text defines: its lines `  -x, --name …` and `      --name …` (a
/// description's lines are indented further).
pub fn defined_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter(|l| {
            let indent = l.len() - l.trim_start().len();
            (2..=6).contains(&indent) && l.trim_start().starts_with('-')
        })
        .flat_map(|l| options_in(l.split("  ").find(|s| !s.is_empty()).unwrap_or("")))
        .collect()
}

/// The commands a top-level `--help` lists (its `Commands:` section, `help` aside).
pub fn commands_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// Hold `binary`'s contracts to its `--help` (`help(args)`: the binary's output for `args`),
/// both ways: the commands, and each command's options. `general`: the options every command
/// may take without its contract naming them, as the docs give them apart (`--db`,
/// `--threads`, `--log-every`).
pub fn check(binary: &str, general: &[&str], help: impl Fn(&[&str]) -> String) {
    let (commands, every) = contracts(binary);
    let mut wrong = Vec::new();
    let listed = commands_in_help(&help(&["--help"]));
    let documented: BTreeSet<String> = commands.iter().map(|(c, _)| c.clone()).collect();
    for c in listed.difference(&documented) {
        wrong.push(format!("{c}: a command of its --help without a contract"));
    }
    for c in documented.difference(&listed) {
        wrong.push(format!("{c}: a contract of no command its --help lists"));
    }
    let mut taken = BTreeSet::new();
    for (command, named) in commands.iter().filter(|(c, _)| listed.contains(c)) {
        let defined = defined_in_help(&help(&[command, "--help"]));
        assert!(
            !defined.is_empty(),
            "{binary} {command} --help defines no option"
        );
        for o in named.difference(&defined) {
            wrong.push(format!(
                "{command}: {o} is in its contract but not in its --help"
            ));
        }
        for o in defined.difference(named) {
            if o != "--help" && !general.contains(&o.as_str()) {
                wrong.push(format!(
                    "{command}: {o} is in its --help but not in its contract"
                ));
            }
        }
        taken.extend(defined);
    }
    for o in every.difference(&taken) {
        wrong.push(format!(
            "{o}: the docs give it for the commands that have it, and none has it"
        ));
    }
    assert!(
        wrong.is_empty(),
        "docs/design.md against {binary}:\n{}",
        wrong.join("\n")
    );
}
