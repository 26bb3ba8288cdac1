//! The command contracts of docs/design.md ("`awari-solver`:" and "`awari-probe`:", a bullet a
//! command), read for the tests that hold each binary's `--help` to them, both ways: every
//! option a contract names is one its command takes, and every option a command takes is in
//! its contract or is one of the options the docs give for every command. The probe's tests
//! include this file with `#[path]`.

use std::collections::BTreeSet;

/// docs/design.md, as this checkout has it.
fn design() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/design.md");
    std::fs::read_to_string(path).unwrap()
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
/// of the bullet that starts with an option (those "every command that has it" takes).
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

/// Hold `binary`'s contracts to its commands' `--help` (`help(command)`), both ways. `general`:
/// the options docs/design.md gives for every command before the contracts (`--db`).
pub fn check(binary: &str, general: &[&str], help: impl Fn(&str) -> String) {
    let (commands, every) = contracts(binary);
    let mut taken = BTreeSet::new();
    let mut wrong = Vec::new();
    for (command, named) in &commands {
        let defined = defined_in_help(&help(command));
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
            let known = o == "--help" || every.contains(o) || general.contains(&o.as_str());
            if !known {
                wrong.push(format!(
                    "{command}: {o} is in its --help but not in its contract"
                ));
            }
        }
        taken.extend(defined);
    }
    for o in every.difference(&taken) {
        wrong.push(format!(
            "{o} is given for every command that has it, and none has it"
        ));
    }
    assert!(
        wrong.is_empty(),
        "docs/design.md against {binary}:\n{}",
        wrong.join("\n")
    );
}
