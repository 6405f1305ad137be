//! The derives (crates/nastune-derive/src/argv.rs) on small sample types: the
//! spec they write for clap's attributes, and the values they read back.

use std::path::PathBuf;

use super::spec::{Arg, Kind};
use super::{Args, ErrorKind, Parser, Subcommand, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Sequential reads.
    SeqRead,
    #[value(name = "io_uring")]
    IoUring,
    #[value(hide = true)]
    Secret,
}

fn half(s: &str) -> Result<u32, String> {
    s.parse::<u32>()
        .map(|n| n / 2)
        .map_err(|_| format!("'{s}' is not a number: give one"))
}

#[derive(Debug, Args)]
struct Common {
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Args)]
struct Sample {
    /// Where to look.
    ///
    /// More about where, in a second paragraph.
    #[arg(value_name = "DIR", num_args = 1..)]
    dirs: Vec<PathBuf>,
    #[command(flatten)]
    common: Common,
    /// How to read
    #[arg(long, short, value_enum, default_value_t = Mode::SeqRead, conflicts_with = "tag")]
    mode: Mode,
    /// Half of it
    #[arg(long = "half-rate", value_parser = half, requires = "size")]
    rate: Option<u32>,
    /// Given twice or more
    #[arg(long, value_delimiter = ',')]
    tag: Vec<String>,
    /// Must be there
    #[arg(long)]
    size: u64,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Run the sample
    Run(Sample),
    #[command(hide = true)]
    Quiet,
}

/// A sample program.
#[derive(Debug, Parser)]
#[command(name = "sample", version = "1.0")]
struct Cli {
    #[command(subcommand)]
    sub: Sub,
}

fn arg(id: &str) -> &'static Arg {
    let mut found = None;
    <Sample as Args>::GROUP.each_arg(&mut |a| {
        if a.id == id {
            found = Some(a);
        }
    });
    found.unwrap_or_else(|| panic!("no argument {id}"))
}

#[test]
fn the_spec_follows_clap_s_defaults() {
    let dirs = arg("dirs");
    assert!(dirs.is_positional() && dirs.kind == Kind::Many);
    assert_eq!((dirs.value_name, dirs.num_args), ("DIR", (1, usize::MAX)));
    // The first paragraph without its period is the help; the whole the long help.
    assert_eq!(dirs.help, "Where to look");
    assert_eq!(
        dirs.more.long_help,
        Some("Where to look.\n\nMore about where, in a second paragraph.")
    );
    let mode = arg("mode");
    assert_eq!((mode.long, mode.short), (Some("mode"), Some('m')));
    assert_eq!(mode.value_name, "MODE");
    assert!(!mode.required, "a default makes it optional");
    assert_eq!(
        mode.more.default_shown.map(|f| f()),
        Some("seq-read".into())
    );
    assert_eq!(mode.more.conflicts, ["tag"]);
    let names: Vec<&str> = mode.more.values.iter().map(|v| v.name).collect();
    assert_eq!(names, ["seq-read", "io_uring", "secret"]);
    assert_eq!(mode.more.values[0].help, "Sequential reads");
    assert!(mode.more.values[2].hide);
    let rate = arg("rate");
    assert_eq!((rate.long, rate.kind), (Some("half-rate"), Kind::One));
    assert!(!rate.required && rate.more.requires == ["size"]);
    assert_eq!(arg("tag").more.delimiter, Some(','));
    assert!(
        arg("size").required,
        "a plain field without a default is required"
    );
    assert!(arg("json").global && arg("json").kind == Kind::Flag);
    // The flattened group sits where its field is: after `dirs`.
    let mut order = Vec::new();
    <Sample as Args>::GROUP.each_arg(&mut |a| order.push(a.id));
    assert_eq!(order, ["dirs", "json", "mode", "rate", "tag", "size"]);
    let commands = <Sub as Subcommand>::COMMANDS;
    assert_eq!(
        (commands[0].name, commands[0].about),
        ("run", "Run the sample")
    );
    assert!(commands[1].hide && commands[1].name == "quiet");
    assert_eq!(<Cli as Parser>::COMMAND.version, Some("1.0"));
    assert_eq!(Mode::IoUring.name(), "io_uring");
}

#[test]
fn values_come_back_typed() {
    let cli = Cli::try_parse_from([
        "sample",
        "run",
        "a",
        "b",
        "--half-rate",
        "10",
        "--tag",
        "x,y",
        "--tag",
        "z",
        "--size",
        "7",
        "--json",
    ])
    .unwrap();
    let Sub::Run(s) = cli.sub else {
        panic!("not run")
    };
    assert_eq!(s.dirs, [PathBuf::from("a"), PathBuf::from("b")]);
    assert_eq!((s.mode, s.rate, s.size), (Mode::SeqRead, Some(5), 7));
    assert_eq!(s.tag, ["x", "y", "z"]);
    assert!(s.common.json);
    let cli = Cli::try_parse_from(["sample", "quiet"]).unwrap();
    assert!(matches!(cli.sub, Sub::Quiet));
}

/// Fields are read in their order and the first that fails is the error (the
/// others are still read, so the code has no error path per field).
#[test]
fn the_first_bad_field_is_the_error() {
    let e = Cli::try_parse_from([
        "sample",
        "run",
        "a",
        "--half-rate",
        "x",
        "--mode",
        "nope",
        "--size",
        "1",
    ])
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidValue);
    assert!(
        e.text
            .starts_with("error: invalid value 'nope' for '--mode <MODE>'"),
        "{}",
        e.text
    );
    let e =
        Cli::try_parse_from(["sample", "run", "a", "--half-rate", "x", "--size", "1"]).unwrap_err();
    assert!(
        e.text
            .starts_with("error: invalid value 'x' for '--half-rate <RATE>': 'x' is not a number"),
        "{}",
        e.text
    );
    let e = Cli::try_parse_from(["sample", "run", "a", "--mode", "secret2", "--size", "1"])
        .unwrap_err();
    // Hidden names are accepted but not offered.
    assert!(
        e.text.contains("[possible values: seq-read, io_uring]"),
        "{}",
        e.text
    );
    let e = Cli::try_parse_from(["sample", "run", "a"]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::MissingRequired);
    assert!(e.text.contains("--size <SIZE>"), "{}", e.text);
}
