//! docs/design.md's command contracts against the solver's `--help`, both ways.

use crate::common::{contracts, solver, text};

#[test]
fn the_command_contracts_in_design_md_are_the_solver_s_options() {
    let general = ["--db", "--threads", "--log-every"];
    contracts::check("awari-solver", &general, |args| {
        let o = solver(args);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8(o.stdout).unwrap()
    });
}
