//! The help a newcomer reads: `--help` (and `-h`) is short, the options a job needs under their
//! headings and a few examples; `--help-all` is everything, the engine's tuning and the
//! experiments' knobs included (`crates/runtime/src/args.rs` marks those `hide_short_help`).
//! clap's own `-h`/`--help` pair shows the long help on `--help`, so each command gets this pair
//! instead.

use clap::{Arg, ArgAction, Command};

/// `cmd` and every subcommand below it with `-h`/`--help` (the short help) and `--help-all`
/// (the long help) instead of clap's pair. A command that has disabled its help flag (one that
/// takes any argument to say where it moved) is left so.
pub fn short_and_all(cmd: Command) -> Command {
    if cmd.is_disable_help_flag_set() {
        return cmd;
    }
    cmd.disable_help_flag(true)
        .arg(
            Arg::new("help")
                .short('h')
                .long("help")
                .action(ArgAction::HelpShort)
                .help("Print help (--help-all: every option, the engine's tuning included)"),
        )
        .arg(
            Arg::new("help-all")
                .long("help-all")
                .action(ArgAction::HelpLong)
                .help("Print help with every option"),
        )
        .mut_subcommands(short_and_all)
}

/// One line per visible subcommand of `cmd` (`NAME  ABOUT`), under `title`: what a command that
/// only dispatches lists in its own help (`xorflow --help` lists the jobs `xorflow run` runs).
pub fn list_subcommands(title: &str, prefix: &str, cmd: &Command) -> String {
    let visible: Vec<&Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    let width = (visible.iter())
        .map(|c| prefix.len() + c.get_name().len())
        .max()
        .unwrap_or(0);
    let mut text = format!("{title}:\n");
    for c in visible {
        let about = c.get_about().map(ToString::to_string).unwrap_or_default();
        // The about's first sentence: one line per job.
        let first = about.split(". ").next().unwrap_or("").trim_end_matches('.');
        let name = format!("{prefix}{}", c.get_name());
        text.push_str(&format!("  {name:width$}  {first}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli() -> Command {
        Command::new("x")
            .subcommand(
                Command::new("run")
                    .subcommand(Command::new("a").about("Does A. Then more."))
                    .subcommand(Command::new("hidden").hide(true))
                    .subcommand(
                        Command::new("b")
                            .about("Does B")
                            .arg(Arg::new("knob").long("knob").hide_short_help(true))
                            .arg(Arg::new("input").long("input")),
                    ),
            )
            .no_binary_name(false)
    }

    /// Catches: `--help` printing the tuning knobs (the long help), `--help-all` missing them,
    /// and a subcommand keeping clap's own pair.
    #[test]
    fn help_is_short_and_help_all_is_everything_at_every_level() {
        let render = |args: &[&str]| {
            let e = short_and_all(cli()).try_get_matches_from(args).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp);
            e.to_string()
        };
        let short = render(&["x", "run", "b", "--help"]);
        assert!(
            short.contains("--input") && !short.contains("--knob"),
            "{short}"
        );
        assert!(short.contains("--help-all"), "{short}");
        let all = render(&["x", "run", "b", "--help-all"]);
        assert!(all.contains("--input") && all.contains("--knob"), "{all}");
        assert_eq!(render(&["x", "run", "b", "-h"]), short);
    }

    #[test]
    fn lists_visible_subcommands_one_line_each() {
        let c = cli();
        let run = c.find_subcommand("run").unwrap();
        let text = list_subcommands("Jobs", "run ", run);
        assert_eq!(text, "Jobs:\n  run a  Does A\n  run b  Does B\n");
    }
}
