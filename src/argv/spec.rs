//! The command line as static data: what `#[derive(Parser, Args, Subcommand,
//! ValueEnum)]` (crates/nastune-derive/src/argv.rs) writes for each type, read
//! by the parser (parse.rs), the help renderer (help.rs) and nastune-gen (man
//! pages and completions). Data, not code: 181 arguments cost their strings and
//! a few words each, where clap's derive built each one in code (issue 22).

/// A command: the root (`nastune`) or a subcommand (`bench disk`).
#[derive(Debug)]
pub struct Command {
    /// The name typed on the command line (kebab-case of the variant).
    pub name: &'static str,
    /// The first paragraph of the doc comment: the one line in lists and `-h`.
    pub about: &'static str,
    /// `long_about`: shown by `--help` instead of `about`.
    pub long_about: Option<&'static str>,
    /// Only the root has one: `-V`/`--version` prints `name version`.
    pub version: Option<&'static str>,
    /// Left out of help, man pages and completions (still accepted).
    pub hide: bool,
    /// The arguments of this command (its Args struct).
    pub args: &'static Group,
}

/// One `#[derive(Args)]` struct: its own arguments, the structs flattened into
/// it, and its subcommands if it has any. [`Group::each_arg`] walks the
/// arguments in field order, as help and man pages list them.
#[derive(Debug)]
pub struct Group {
    pub args: &'static [Arg],
    pub flatten: &'static [&'static Group],
    /// Where each of `flatten` sits: the number of `args` before its field.
    pub flatten_at: &'static [usize],
    /// `#[command(subcommand)]`: the choices; `subcommand_required` says whether
    /// one must be given (a plain field) or may be left out (an `Option`).
    pub subcommands: &'static [Command],
    pub subcommand_required: bool,
    /// `#[command(group(ArgGroup::new(..).required(true).args([..])))]`.
    pub groups: &'static [ArgGroup],
}

impl Group {
    pub const EMPTY: Group = Group {
        args: &[],
        flatten: &[],
        flatten_at: &[],
        subcommands: &[],
        subcommand_required: false,
        groups: &[],
    };
}

impl Group {
    /// Every argument of this group and the groups flattened into it, in the
    /// order of the fields.
    pub fn each_arg(&'static self, f: &mut dyn FnMut(&'static Arg)) {
        let mut flat = self.flatten.iter().zip(self.flatten_at).peekable();
        for (i, arg) in self.args.iter().enumerate() {
            while let Some((g, _)) = flat.next_if(|(_, at)| **at <= i) {
                g.each_arg(f);
            }
            f(arg);
        }
        for (g, _) in flat {
            g.each_arg(f);
        }
    }
}

/// At least one of `args` (ids) must be given.
#[derive(Debug)]
pub struct ArgGroup {
    pub id: &'static str,
    pub args: &'static [&'static str],
    pub required: bool,
}

/// What a field holds, which decides how the parser counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `bool`: present or not, takes no value.
    Flag,
    /// `T` or `Option<T>`: one value (the last given wins, as with clap).
    One,
    /// `Vec<T>`: every value given, in order.
    Many,
}

/// One argument: an option (`--bs 4k`, `-w read`) or a positional (`PATH`).
#[derive(Debug)]
pub struct Arg {
    /// The field's name (snake_case): what `requires`, `conflicts_with` and
    /// groups refer to, and the key the derived code reads values by.
    pub id: &'static str,
    /// `--long` (kebab-case); `None` with `short: None` makes a positional.
    pub long: Option<&'static str>,
    pub short: Option<char>,
    /// `<VALUE_NAME>` in help and errors (default: the id upper-cased).
    pub value_name: &'static str,
    /// First paragraph of the doc comment.
    pub help: &'static str,
    pub kind: Kind,
    /// `num_args = MIN..=MAX` values per occurrence; (1, 1) for options with a
    /// value, (0, 0) for flags, (1, usize::MAX) for `1..`, (0, 1) for `0..=1`.
    pub num_args: (usize, usize),
    /// `default_value = ".."`: given to the value parser when the argument is absent.
    pub default_value: Option<&'static str>,
    pub required: bool,
    /// Accepted (and shown) in every subcommand below the command that defines it.
    pub global: bool,
    pub hide: bool,
    /// The value is a path (a `PathBuf` field): completions offer file names.
    pub path: bool,
    /// What few arguments have, kept apart so that the others share one
    /// [`More::NONE`]: 190 arguments at 216 bytes each were 40 KiB of the
    /// binary (issue 22).
    pub more: &'static More,
}

/// The rarer parts of an [`Arg`].
#[derive(Debug)]
pub struct More {
    /// The whole doc comment when it has more than one paragraph.
    pub long_help: Option<&'static str>,
    /// `default_value_t = expr`: shown as `[default: ..]`; the derived code
    /// supplies the value itself.
    pub default_shown: Option<fn() -> String>,
    /// `default_missing_value`: the value of `--direct` given without one.
    pub default_missing: Option<&'static str>,
    /// `value_enum`: the accepted names, with their help.
    pub values: &'static [Value],
    /// `value_delimiter = ','`: one occurrence may carry several values.
    pub delimiter: Option<char>,
    /// `required_unless_present(_any)`: required unless one of these ids is given.
    pub required_unless: &'static [&'static str],
    /// `requires`: ids that must be given too (only when this one is given explicitly).
    pub requires: &'static [&'static str],
    /// `conflicts_with(_all)`: ids that must not be given with this one.
    pub conflicts: &'static [&'static str],
}

impl More {
    pub const NONE: More = More {
        long_help: None,
        default_shown: None,
        default_missing: None,
        values: &[],
        delimiter: None,
        required_unless: &[],
        requires: &[],
        conflicts: &[],
    };
}

impl Arg {
    pub fn is_positional(&self) -> bool {
        self.long.is_none() && self.short.is_none()
    }
}

/// One name of a `#[derive(ValueEnum)]` enum.
#[derive(Debug)]
pub struct Value {
    pub name: &'static str,
    /// The variant's doc comment ("" when it has none).
    pub help: &'static str,
    pub hide: bool,
}
