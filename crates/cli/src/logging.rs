//! `--log-format`: tracing's events on stderr, for people or for log collectors.

use std::io::IsTerminal;

/// The environment variable that carries `--log-format` to the processes a run starts.
pub const LOG_FORMAT_ENV: &str = "XORFLOW_LOG_FORMAT";

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Lines for people (colours on a terminal).
    Text,
    /// One JSON object per line with timestamp, level, target and fields.
    Json,
}

/// The global `--log-format` option of both binaries.
#[derive(clap::Args, Debug)]
pub struct LogArgs {
    /// How log lines on stderr look: text (for people) or json (one JSON object per line with
    /// timestamp, level, target and fields, for log collectors). Which lines appear is RUST_LOG
    /// (default: warn). The processes a run starts inherit it.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = LOG_FORMAT_ENV
    )]
    pub log_format: LogFormat,
}

/// Sends tracing's events to stderr in `format`, filtered by RUST_LOG (default: warn), and
/// passes `format` on to the processes this one starts.
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A closed stderr must never turn a log line into a panic (tracing-subscriber reports
        // its own write errors on stderr, and that write panics).
        .log_internal_errors(false);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().init(),
    }
    // Still one thread: nothing reads the environment concurrently.
    std::env::set_var(
        LOG_FORMAT_ENV,
        match format {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        },
    );
}
