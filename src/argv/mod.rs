//! nastune's own command-line parser, in place of clap (issue 22: clap and the
//! code its derive generated were about 250 KiB of a 4 MiB budget).
//!
//! The derives (crates/nastune-derive/src/argv.rs) read clap's attribute
//! syntax (`#[arg(long, value_name = "N", requires = "rw")]`, `#[command(..)]`,
//! `#[value(..)]`) and write two things per type: a static description
//! (spec.rs) and a function that moves the parsed values into the struct. The
//! parser (parse.rs) and the help (help.rs) are plain code over that data;
//! nastune-gen turns the same data into man pages and completions.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;

pub mod help;
pub mod parse;
pub mod spec;

// The derives are not in nastune-derive yet (crates/nastune-derive/src/argv.rs
// is being written); this re-export comes back with them.
// pub use nastune_derive::{Args, Parser, Subcommand, ValueEnum};

/// A struct of arguments (`#[derive(Args)]`), maybe flattened into another.
pub trait Args: Sized {
    const GROUP: spec::Group;
    /// Moves this struct's values out of `m` and parses them.
    fn from_matches(m: &mut Matches) -> Result<Self, Error>;
}

/// An enum of subcommands (`#[derive(Subcommand)]`).
pub trait Subcommand: Sized {
    const COMMANDS: &'static [spec::Command];
    /// Builds the variant named `name` (one of COMMANDS) from its matches.
    fn from_matches(name: &str, m: &mut Matches) -> Result<Self, Error>;
}

/// The top-level struct (`#[derive(Parser)]`).
pub trait Parser: Args {
    const COMMAND: spec::Command;

    /// Parses the process's arguments; prints help, the version or the error
    /// and exits (0 for help and version, 2 for a usage error) when it must.
    fn parse() -> Self {
        Self::try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// `args` includes the program name first, as `std::env::args_os()` does.
    fn try_parse_from<I, T>(args: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let args: Vec<OsString> = args.into_iter().skip(1).map(Into::into).collect();
        let mut m = parse::parse(&Self::COMMAND, args)?;
        Self::from_matches(&mut m)
    }
}

/// An enum whose variants are the values of an option (`#[derive(ValueEnum)]`).
pub trait ValueEnum: Sized + Copy + 'static {
    /// One per variant, in declaration order.
    const VALUES: &'static [spec::Value];
    /// The variants, in the same order.
    const ALL: &'static [Self];
    /// The variant at `VALUES[i]`.
    fn from_index(i: usize) -> Self {
        Self::ALL[i]
    }
    /// This variant's index in `VALUES`.
    fn index(self) -> usize;
    /// The name a user types for this variant.
    fn name(self) -> &'static str {
        Self::VALUES[self.index()].name
    }
}

/// The value parser `value_enum` fields get: the exact name of a variant.
pub fn value_enum<T: ValueEnum>(s: &OsStr) -> Result<T, String> {
    let names = T::VALUES.iter().position(|v| s == v.name);
    names.map(T::from_index).ok_or_else(|| {
        let shown: Vec<&str> = T::VALUES
            .iter()
            .filter(|v| !v.hide)
            .map(|v| v.name)
            .collect();
        format!("\n  [possible values: {}]", shown.join(", "))
    })
}

/// Adapts a `value_parser = f` (`fn(&str) -> Result<T, String>`) to the raw
/// argument, refusing text that is not UTF-8.
pub fn text<T>(f: impl Fn(&str) -> Result<T, String>) -> impl Fn(&OsStr) -> Result<T, String> {
    move |s: &OsStr| match s.to_str() {
        Some(s) => f(s),
        None => Err("the value is not valid UTF-8".to_string()),
    }
}

/// The value parser of a field without `value_parser` or `value_enum`.
pub trait FromArg: Sized {
    fn from_arg(s: &OsStr) -> Result<Self, String>;
}

impl FromArg for PathBuf {
    fn from_arg(s: &OsStr) -> Result<Self, String> {
        Ok(PathBuf::from(s))
    }
}

impl FromArg for OsString {
    fn from_arg(s: &OsStr) -> Result<Self, String> {
        Ok(s.to_owned())
    }
}

impl FromArg for String {
    fn from_arg(s: &OsStr) -> Result<Self, String> {
        text(|s| Ok(s.to_string()))(s)
    }
}

macro_rules! from_str_args {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            fn from_arg(s: &OsStr) -> Result<Self, String> {
                text(|s| s.parse::<$t>().map_err(|e| e.to_string()))(s)
            }
        }
    )*};
}
from_str_args!(u8, u16, u32, u64, usize, i32, i64, f64);

/// What one command level of the command line gave: each argument's values
/// (from the command line or its `default_value`) and the chosen subcommand.
/// The derived `from_matches` takes values out by id.
#[derive(Debug, Default)]
pub struct Matches {
    pub(crate) entries: Vec<Entry>,
    pub(crate) sub: Option<(&'static str, Box<Matches>)>,
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub arg: &'static spec::Arg,
    /// Every value, in order, delimiters split; empty for a flag.
    pub values: Vec<OsString>,
    /// How often it was given on the command line (0: only a default).
    pub occurrences: usize,
}

impl Matches {
    fn take(&mut self, id: &str) -> Option<Entry> {
        let i = self.entries.iter().position(|e| e.arg.id == id)?;
        Some(self.entries.swap_remove(i))
    }

    /// A `bool` field: whether the flag was given.
    pub fn flag(&mut self, id: &str) -> bool {
        self.take(id).is_some_and(|e| e.occurrences > 0)
    }

    /// A one-value field: the last value given (or the default), parsed.
    pub fn one<T>(
        &mut self,
        id: &str,
        parse: &dyn Fn(&OsStr) -> Result<T, String>,
    ) -> Result<Option<T>, Error> {
        match self.take(id) {
            Some(e) => match e.values.last() {
                Some(v) => parse(v)
                    .map(Some)
                    .map_err(|m| Error::invalid_value(e.arg, v, &m)),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    /// A `Vec` field: every value given (or the default), parsed in order.
    pub fn many<T>(
        &mut self,
        id: &str,
        parse: &dyn Fn(&OsStr) -> Result<T, String>,
    ) -> Result<Vec<T>, Error> {
        let Some(e) = self.take(id) else {
            return Ok(Vec::new());
        };
        e.values
            .iter()
            .map(|v| parse(v).map_err(|m| Error::invalid_value(e.arg, v, &m)))
            .collect()
    }

    /// A field without a default that the parser made sure was given.
    pub fn required<T>(
        &mut self,
        id: &str,
        parse: &dyn Fn(&OsStr) -> Result<T, String>,
    ) -> Result<T, Error> {
        self.one(id, parse)?.ok_or_else(|| Error::missing(id))
    }

    /// The subcommand given at this level, with its own matches.
    pub fn subcommand(&mut self) -> Option<(&'static str, Matches)> {
        self.sub.take().map(|(name, m)| (name, *m))
    }

    /// A `#[command(subcommand)]` field of type `Option<T>`.
    pub fn optional_subcommand<T: Subcommand>(&mut self) -> Result<Option<T>, Error> {
        match self.subcommand() {
            Some((name, mut m)) => T::from_matches(name, &mut m).map(Some),
            None => Ok(None),
        }
    }

    /// A `#[command(subcommand)]` field of type `T` (the parser made sure one was given).
    pub fn required_subcommand<T: Subcommand>(&mut self) -> Result<T, Error> {
        self.optional_subcommand()?
            .ok_or_else(|| Error::missing("a subcommand"))
    }
}

/// Why parsing stopped. Help and version are "errors" too: they end parsing
/// and print to stdout with exit code 0.
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    /// The whole text to print, already rendered (help, version, or
    /// `error: …` with the usage line and the `--help` hint).
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    DisplayHelp,
    DisplayVersion,
    /// A command that needs a subcommand got none: its help goes to stderr.
    MissingSubcommand,
    UnknownArgument,
    UnknownSubcommand,
    InvalidValue,
    MissingRequired,
    Conflict,
    /// A value where none is taken, or too few or too many values.
    WrongValueCount,
}

impl Error {
    /// `error: invalid value 'x' for '--rw <RW>': message`.
    pub fn invalid_value(arg: &spec::Arg, value: &OsStr, message: &str) -> Error {
        let sep = if message.starts_with('\n') { "" } else { ": " };
        Error {
            kind: ErrorKind::InvalidValue,
            text: format!(
                "error: invalid value '{}' for '{}'{sep}{message}\n\nFor more information, try '--help'.\n",
                value.to_string_lossy(),
                help::arg_display(arg),
            ),
        }
    }

    /// What the parser's checks should have caught: a required value or
    /// subcommand missing when the derived code reads it.
    pub fn missing(what: &str) -> Error {
        Error {
            kind: ErrorKind::MissingRequired,
            text: format!("error: the following required arguments were not provided:\n  {what}\n"),
        }
    }

    /// The derived code was handed a subcommand name it does not know.
    pub fn unknown_subcommand(name: &str) -> Error {
        Error {
            kind: ErrorKind::UnknownSubcommand,
            text: format!("error: unrecognized subcommand '{name}'\n"),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
            _ => 2,
        }
    }

    /// Prints the text (stdout for help and version, stderr otherwise) and exits.
    pub fn exit(&self) -> ! {
        use std::io::Write;
        if self.exit_code() == 0 {
            let _ = std::io::stdout().write_all(self.text.as_bytes());
        } else {
            let _ = std::io::stderr().write_all(self.text.as_bytes());
        }
        std::process::exit(self.exit_code())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text.trim_end())
    }
}

impl std::error::Error for Error {}
