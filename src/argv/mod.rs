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

pub mod clap_model;
pub mod help;
pub mod parse;
#[cfg(test)]
mod samples;
pub mod spec;

pub use nastune_derive::{Args, Parser, Subcommand, ValueEnum};

/// A struct of arguments (`#[derive(Args)]`), maybe flattened into another.
pub trait Args: Sized {
    const GROUP: spec::Group;
    /// Moves this struct's values out of `m` and parses them; `None` when one
    /// does not parse, with the error kept in `m`.
    fn from_matches(m: &mut Matches) -> Option<Self>;
}

/// An enum of subcommands (`#[derive(Subcommand)]`).
pub trait Subcommand: Sized {
    const COMMANDS: &'static [spec::Command];
    /// Builds the variant named `name` (one of COMMANDS) from its matches;
    /// `None` with the error kept in `m`, as [`Args::from_matches`].
    fn from_matches(name: &str, m: &mut Matches) -> Option<Self>;
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
        Self::from_matches(&mut m).ok_or_else(|| m.take_error())
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
    value_index(T::VALUES, s).map(T::from_index)
}

/// The index of `s` in `values`; the one copy of the lookup and its message
/// that every `value_enum` type shares.
#[inline(never)]
fn value_index(values: &[spec::Value], s: &OsStr) -> Result<usize, String> {
    values.iter().position(|v| s == v.name).ok_or_else(|| {
        let shown: Vec<&str> = values.iter().filter(|v| !v.hide).map(|v| v.name).collect();
        format!("\n  [possible values: {}]", shown.join(", "))
    })
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
        utf8(s).map(str::to_string)
    }
}

macro_rules! from_str_args {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            fn from_arg(s: &OsStr) -> Result<Self, String> {
                utf8(s)?.parse::<$t>().map_err(|e| e.to_string())
            }
        }
    )*};
}
from_str_args!(u8, u16, u32, u64, usize, i32, i64, f64, std::net::IpAddr);

/// `value_parser = argv::parsed::<T>` for a type that has `FromStr`.
pub fn parsed<T: std::str::FromStr>(s: &str) -> Result<T, String>
where
    T::Err: fmt::Display,
{
    s.parse().map_err(|e: T::Err| e.to_string())
}

/// What one command level of the command line gave: each argument's values
/// (from the command line or its `default_value`) and the chosen subcommand.
/// The derived `from_matches` takes values out by id.
#[derive(Debug, Default)]
pub struct Matches {
    pub(crate) entries: Vec<Entry>,
    pub(crate) sub: Option<(&'static str, Box<Matches>)>,
    /// The first value that did not parse. The derived code does not stop at
    /// it: one error check per struct instead of one per field keeps the code
    /// small (issue 22).
    pub(crate) error: Option<Error>,
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

    /// Keeps the first error; the derived code reads on and reports it at the end.
    pub fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
    }

    /// The error a derived `from_matches` that returned `None` recorded.
    pub fn take_error(&mut self) -> Error {
        self.error
            .take()
            .unwrap_or_else(|| Error::missing("a value"))
    }

    /// A `bool` field: whether the flag was given.
    pub fn flag(&mut self, id: &str) -> bool {
        self.take(id).is_some_and(|e| e.occurrences > 0)
    }

    /// A one-value field: the last value given (or the default), parsed;
    /// `None` when absent or when it does not parse (the error is kept).
    /// Parsers are plain `fn` pointers: a `&dyn Fn` cost a vtable and its
    /// shims per parser (issue 22).
    pub fn one<T>(&mut self, id: &str, parse: fn(&OsStr) -> Result<T, String>) -> Option<T> {
        let (arg, v) = self.last(id)?;
        let r = parse(&v);
        self.check(arg, &v, r)
    }

    /// [`Matches::one`] for a `value_parser` that takes text.
    pub fn one_str<T>(&mut self, id: &str, parse: fn(&str) -> Result<T, String>) -> Option<T> {
        let (arg, v) = self.last(id)?;
        let r = utf8(&v).and_then(parse);
        self.check(arg, &v, r)
    }

    /// The last value of `id` (the parts of [`Matches::one`] that are the
    /// same for every type, kept out of its copies).
    #[inline(never)]
    fn last(&mut self, id: &str) -> Option<(&'static spec::Arg, OsString)> {
        let mut e = self.take(id)?;
        Some((e.arg, e.values.pop()?))
    }

    fn check<T>(&mut self, arg: &'static spec::Arg, v: &OsStr, r: Result<T, String>) -> Option<T> {
        match r {
            Ok(t) => Some(t),
            Err(m) => {
                self.invalid(arg, v, &m);
                None
            }
        }
    }

    #[inline(never)]
    fn invalid(&mut self, arg: &'static spec::Arg, v: &OsStr, message: &str) {
        self.fail(Error::invalid_value(arg, v, message));
    }

    /// A `Vec` field: every value given (or the default), parsed in order.
    pub fn many<T>(&mut self, id: &str, parse: fn(&OsStr) -> Result<T, String>) -> Vec<T> {
        self.each(id, parse)
    }

    /// [`Matches::many`] for a `value_parser` that takes text.
    pub fn many_str<T>(&mut self, id: &str, parse: fn(&str) -> Result<T, String>) -> Vec<T> {
        self.each(id, |v| utf8(v).and_then(parse))
    }

    fn each<T>(&mut self, id: &str, parse: impl Fn(&OsStr) -> Result<T, String>) -> Vec<T> {
        let Some(e) = self.take(id) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(e.values.len());
        for v in &e.values {
            let r = parse(v);
            out.extend(self.check(e.arg, v, r));
        }
        out
    }

    /// The subcommand given at this level, with its own matches.
    pub fn subcommand(&mut self) -> Option<(&'static str, Matches)> {
        self.sub.take().map(|(name, m)| (name, *m))
    }

    /// A `#[command(subcommand)]` field: the variant given, or `None` when
    /// there is none or it failed (its error is kept here).
    pub fn sub_command<T: Subcommand>(&mut self) -> Option<T> {
        let (name, mut m) = self.subcommand()?;
        let t = T::from_matches(name, &mut m);
        if let Some(e) = m.error.take() {
            self.fail(e);
        }
        t
    }

    /// Whether reading the fields so far went without an error.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

fn utf8(s: &OsStr) -> Result<&str, String> {
    s.to_str()
        .ok_or_else(|| "the value is not valid UTF-8".to_string())
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
