//! Help, usage and the argument names errors quote, from the spec. The layout
//! is clap 4's (wrap_help, no color): the same columns, wrapping and sections,
//! so that replacing clap changes no output a user or a test has seen.

use super::spec::{Arg, ArgGroup, Command, Group, Kind, More};

const TAB: &str = "  ";
/// Where help text starts under its argument when it goes on the next line.
const NEXT_LINE_INDENT: usize = 10;
const HELP_SUBCOMMAND: &str = "Print this message or the help of the given subcommand(s)";

/// One command as the parser sees it: where it sits on the command line and
/// every argument it accepts.
#[derive(Debug)]
pub(crate) struct Level {
    pub cmd: &'static Command,
    /// `nastune bench disk`: the usage line starts with it.
    pub path: String,
    /// Its own arguments (flattened groups in order), then the `global` ones of
    /// its ancestors, each with the index of the level that records it.
    pub args: Vec<(&'static Arg, usize)>,
    pub groups: Vec<&'static ArgGroup>,
    /// `-V` is accepted (and shown) at every level when the root has a version.
    pub version: bool,
}

impl Level {
    /// The level `depth` for `cmd`, below `parent` (`None` for the root).
    pub(crate) fn new(
        cmd: &'static Command,
        parent: Option<&Level>,
        depth: usize,
        version: bool,
    ) -> Level {
        let mut own = Vec::new();
        let mut groups = Vec::new();
        collect(cmd.args, &mut own, &mut groups);
        let mut args: Vec<(&'static Arg, usize)> = own.into_iter().map(|a| (a, depth)).collect();
        let path = match parent {
            Some(p) => {
                args.extend(p.args.iter().filter(|(a, _)| a.global));
                format!("{} {}", p.path, cmd.name)
            }
            None => cmd.name.to_string(),
        };
        Level {
            cmd,
            path,
            args,
            groups,
            version,
        }
    }

    fn shown(&self) -> impl Iterator<Item = &'static Arg> + '_ {
        self.args.iter().map(|(a, _)| *a).filter(|a| !a.hide)
    }

    fn has_visible_subcommands(&self) -> bool {
        self.cmd.args.subcommands.iter().any(|c| !c.hide)
    }
}

/// The arguments of `g` in field order (flattened groups where their field
/// is) and the ArgGroups of `g` and of the groups flattened into it.
fn collect(g: &'static Group, args: &mut Vec<&'static Arg>, groups: &mut Vec<&'static ArgGroup>) {
    g.each_arg(&mut |a| args.push(a));
    collect_groups(g, groups);
}

fn collect_groups(g: &'static Group, groups: &mut Vec<&'static ArgGroup>) {
    groups.extend(g.groups.iter());
    for f in g.flatten {
        collect_groups(f, groups);
    }
}

/// How errors and help name an argument: `--rw <RW>`, `--json`, `--direct
/// [<0|1>]`, `[PATH]...`, `<RUN>` (clap's `Display` for an Arg).
pub fn arg_display(arg: &Arg) -> String {
    display(arg, arg.required)
}

/// `required` decides `<NAME>` or `[NAME]` for a positional.
pub(crate) fn display(arg: &Arg, required: bool) -> String {
    let mut s = String::new();
    if let Some(l) = arg.long {
        s.push_str("--");
        s.push_str(l);
    } else if let Some(c) = arg.short {
        s.push('-');
        s.push(c);
    }
    s.push_str(&suffix(arg, required));
    s
}

/// The part after the switch: ` <BS>`, ` [<0|1>]`, `<RUNS>...`.
fn suffix(arg: &Arg, required: bool) -> String {
    let many = arg.num_args.1 > 1;
    if arg.is_positional() {
        let (open, close) = if required { ('<', '>') } else { ('[', ']') };
        let dots = if many || arg.kind == Kind::Many {
            "..."
        } else {
            ""
        };
        return format!("{open}{}{close}{dots}", arg.value_name);
    }
    if arg.kind == Kind::Flag || arg.num_args.1 == 0 {
        return String::new();
    }
    let dots = if many { "..." } else { "" };
    if arg.num_args.0 == 0 {
        format!(" [<{}>{dots}]", arg.value_name)
    } else {
        format!(" <{}>{dots}", arg.value_name)
    }
}

/// The usage line after `Usage: `. With `required` and `used` empty it is the
/// one help shows (`[OPTIONS]`, `[COMMAND]`); errors pass the arguments that
/// were missing and those given, as clap does, and get them spelled out.
pub(crate) fn usage(l: &Level, required: &[&'static Arg], used: &[&'static Arg]) -> String {
    let smart = !(required.is_empty() && used.is_empty());
    let in_required_group = |a: &Arg| {
        l.groups
            .iter()
            .any(|g| g.required && g.args.contains(&a.id))
    };
    let listed = |a: &Arg| required.iter().chain(used).any(|b| std::ptr::eq(*b, a));
    let mut out = l.path.clone();
    if !smart
        && l.shown()
            .any(|a| !a.is_positional() && !a.required && !in_required_group(a))
    {
        out.push_str(" [OPTIONS]");
    }
    let mut opts: Vec<&Arg> = l
        .shown()
        .filter(|a| a.required && !a.is_positional())
        .collect();
    for &a in required.iter().chain(used) {
        if !a.is_positional() && !a.hide && !opts.iter().any(|b| std::ptr::eq(*b, a)) {
            opts.push(a);
        }
    }
    for a in opts.into_iter().filter(|a| !in_required_group(a)) {
        out.push(' ');
        out.push_str(&arg_display(a));
    }
    for g in l.groups.iter().filter(|g| g.required) {
        out.push(' ');
        out.push_str(&group_display(l, g));
    }
    for a in l
        .shown()
        .filter(|a| a.is_positional() && !in_required_group(a))
    {
        out.push(' ');
        out.push_str(&display(a, a.required || (smart && listed(a))));
    }
    if l.has_visible_subcommands() {
        if l.cmd.args.subcommand_required {
            out.push_str(" <COMMAND>");
        } else if !smart {
            out.push_str(" [COMMAND]");
        }
    }
    out
}

/// `<--html <FILE>|--markdown <FILE>>`: a required group, as clap names it.
pub(crate) fn group_display(l: &Level, g: &ArgGroup) -> String {
    let names: Vec<String> = g
        .args
        .iter()
        .filter_map(|id| l.args.iter().find(|(a, _)| a.id == *id))
        .map(|(a, _)| match a.is_positional() {
            true => a.value_name.to_string(),
            false => arg_display(a),
        })
        .collect();
    format!("<{}>", names.join("|"))
}

const fn builtin(id: &'static str, short: char, help: &'static str, more: &'static More) -> Arg {
    Arg {
        id,
        long: Some(id),
        short: Some(short),
        value_name: "",
        help,
        more,
        kind: Kind::Flag,
        num_args: (0, 0),
        default_value: None,
        required: false,
        global: false,
        hide: false,
        path: false,
    }
}

static HELP: Arg = builtin("help", 'h', "Print help", &More::NONE);
static HELP_MORE: Arg = builtin(
    "help",
    'h',
    "Print help (see more with '--help')",
    &More {
        long_help: Some("Print help (see a summary with '-h')"),
        ..More::NONE
    },
);
static VERSION: Arg = builtin("version", 'V', "Print version", &More::NONE);

/// Whether `--help` shows more than `-h`: otherwise both print the short form.
fn long_exists(l: &Level) -> bool {
    l.cmd.long_about.is_some()
        || l.shown()
            .any(|a| a.more.long_help.is_some() || values_have_help(a))
}

fn values_have_help(a: &Arg) -> bool {
    a.more.values.iter().any(|v| !v.hide && !v.help.is_empty())
}

/// The help of level `l`: `-h` (`long` false) or `--help`, wrapped at `width`.
pub(crate) fn render(l: &Level, long: bool, width: usize) -> String {
    let more = long_exists(l);
    let long = long && more;
    let about = match long {
        true => l.cmd.long_about.unwrap_or(l.cmd.about),
        false => l.cmd.about,
    };
    let mut out = String::new();
    if !about.is_empty() {
        out.push_str(&wrap(about, width));
        out.push('\n');
    }
    out.push_str("\nUsage: ");
    out.push_str(&usage(l, &[], &[]));
    out.push_str("\n\n");

    let mut sections: Vec<String> = Vec::new();
    if l.has_visible_subcommands() {
        sections.push(format!("Commands:\n{}", subcommands(l.cmd, width)));
    }
    let positionals: Vec<&Arg> = l.shown().filter(|a| a.is_positional()).collect();
    if !positionals.is_empty() {
        sections.push(format!(
            "Arguments:\n{}",
            args_list(&positionals, long, width)
        ));
    }
    let mut options: Vec<&Arg> = l.shown().filter(|a| !a.is_positional()).collect();
    options.push(if more { &HELP_MORE } else { &HELP });
    if l.version {
        options.push(&VERSION);
    }
    sections.push(format!("Options:\n{}", args_list(&options, long, width)));
    out.push_str(&sections.join("\n\n"));

    let mut out = out.trim_start_matches('\n').trim_end().to_string();
    out.push('\n');
    out
}

/// What `nastune help help` prints.
pub(crate) fn render_help_command(path: &str) -> String {
    format!(
        "{HELP_SUBCOMMAND}\n\nUsage: {path} help [COMMAND]...\n\nArguments:\n  \
         [COMMAND]...  Print help for the subcommand(s)\n"
    )
}

/// Whether clap would put every help on its own line: when one does not fit
/// beside a name column that already takes over 40% of the width.
fn next_line(width: usize, longest: usize, help_width: usize) -> bool {
    let taken = longest + 2 * TAB.len();
    width >= taken && (taken as f32 / width as f32) > 0.40 && help_width > width - taken
}

fn subcommands(cmd: &Command, width: usize) -> String {
    let mut rows: Vec<(&str, &str)> = cmd
        .args
        .subcommands
        .iter()
        .filter(|c| !c.hide)
        .map(|c| {
            (
                c.name,
                if c.about.is_empty() {
                    c.long_about.unwrap_or("")
                } else {
                    c.about
                },
            )
        })
        .collect();
    rows.push(("help", HELP_SUBCOMMAND));
    let longest = rows.iter().map(|r| text_width(r.0)).fold(2, usize::max);
    let next = rows
        .iter()
        .any(|r| next_line(width, longest, text_width(r.1)));
    let mut out = String::new();
    for (i, (name, about)) in rows.into_iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(TAB);
        out.push_str(name);
        if !next {
            pad(&mut out, longest + TAB.len() - text_width(name));
        }
        help_block(&mut out, None, about, "", next, longest, false, width);
    }
    out
}

fn args_list(args: &[&Arg], long: bool, width: usize) -> String {
    let name_width = |a: &Arg| text_width(&arg_display(a)) + if a.long.is_some() { 4 } else { 0 };
    let longest = args.iter().map(|a| name_width(a)).fold(2, usize::max);
    let next = long
        || args.iter().any(|a| {
            let h = short_text(a);
            next_line(
                width,
                longest,
                text_width(h) + text_width(&spec_vals(a, false)),
            )
        });
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push('\n');
            if next && long {
                out.push('\n');
            }
        }
        out.push_str(TAB);
        match (a.short, a.long) {
            (Some(s), Some(_)) => {
                out.push('-');
                out.push(s);
                out.push_str(", ");
            }
            (None, Some(_)) => out.push_str("    "),
            _ => {}
        }
        out.push_str(&arg_display(a));
        if !long && !next {
            pad(&mut out, longest + TAB.len() - name_width(a));
        }
        let about = match long {
            true => a.more.long_help.unwrap_or(a.help),
            false => short_text(a),
        };
        help_block(
            &mut out,
            Some(a),
            about,
            &spec_vals(a, long),
            next,
            longest,
            long,
            width,
        );
    }
    out
}

fn short_text(a: &Arg) -> &'static str {
    match (a.help, a.more.long_help) {
        ("", Some(l)) => l,
        (h, _) => h,
    }
}

/// `[default: 4k]` and `[possible values: ..]` (the latter only when the long
/// help does not list the values with their own help).
fn spec_vals(a: &Arg, long: bool) -> String {
    let mut vals = Vec::new();
    if a.kind != Kind::Flag {
        let default = match (a.default_value, a.more.default_shown) {
            (Some(d), _) => Some(d.to_string()),
            (None, Some(f)) => Some(f()),
            (None, None) => None,
        };
        if let Some(d) = default {
            if d.contains(char::is_whitespace) {
                vals.push(format!("[default: \"{d}\"]"));
            } else {
                vals.push(format!("[default: {d}]"));
            }
        }
    }
    let listed_below = long && values_have_help(a);
    if !a.more.values.is_empty() && !listed_below {
        let names: Vec<&str> = a
            .more
            .values
            .iter()
            .filter(|v| !v.hide)
            .map(|v| v.name)
            .collect();
        vals.push(format!("[possible values: {}]", names.join(", ")));
    }
    vals.join(if long { "\n" } else { " " })
}

/// An argument's or subcommand's help after its name (clap's `help()`).
#[allow(clippy::too_many_arguments)]
fn help_block(
    out: &mut String,
    arg: Option<&Arg>,
    about: &str,
    spec: &str,
    next: bool,
    longest: usize,
    long: bool,
    width: usize,
) {
    if next {
        out.push('\n');
        pad(out, NEXT_LINE_INDENT);
    }
    let spaces = if next {
        NEXT_LINE_INDENT
    } else {
        longest + 2 * TAB.len()
    };
    let indent = " ".repeat(spaces);
    let specs_below = long && arg.is_some();
    let mut help = about.to_string();
    if !spec.is_empty() && !specs_below {
        if !help.is_empty() {
            help.push(' ');
        }
        help.push_str(spec);
    }
    let avail = width.saturating_sub(spaces);
    out.push_str(&wrap(&help, avail).replace('\n', &format!("\n{indent}")));
    let mut listed_values = false;
    if let Some(a) = arg.filter(|a| long && values_have_help(a)) {
        listed_values = true;
        let shown = || a.more.values.iter().filter(|v| !v.hide);
        let name_width = shown().map(|v| text_width(v.name)).fold(0, usize::max);
        let value_indent = " ".repeat(spaces + 2);
        let avail = if width > spaces + 2 {
            width - spaces - 2
        } else {
            usize::MAX
        };
        if !help.is_empty() {
            out.push_str("\n\n");
            pad(out, spaces);
        }
        out.push_str("Possible values:");
        for v in shown() {
            let mut d = v.name.to_string();
            if !v.help.is_empty() {
                d.push_str(": ");
                pad(&mut d, name_width - text_width(v.name));
                d.push_str(v.help);
            }
            out.push('\n');
            pad(out, spaces);
            out.push_str("- ");
            out.push_str(&wrap(&d, avail).replace('\n', &format!("\n{value_indent}")));
        }
    }
    if !spec.is_empty() && specs_below {
        let mut h = String::new();
        if !help.is_empty() || listed_values {
            h.push_str("\n\n");
        }
        h.push_str(spec);
        out.push_str(&wrap(&h, avail).replace('\n', &format!("\n{indent}")));
    }
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// Columns a text takes: one per char (clap without its "unicode" feature).
fn text_width(s: &str) -> usize {
    s.chars().count()
}

/// clap's greedy wrap: each line of `text` broken at spaces to `width`
/// columns; a line's leading spaces indent its continuation lines too.
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let words = split_words(line);
        let indentation = match words.first() {
            Some(w) if w.trim().is_empty() => *w,
            _ => "",
        };
        let mut first_word = true;
        let mut line_width = 0;
        let mut pieces: Vec<&str> = Vec::with_capacity(words.len() * 2);
        for word in words {
            let trimmed = word.trim_end();
            let word_width = text_width(trimmed);
            if first_word && word_width > 0 {
                first_word = false;
            } else if width < line_width + word_width {
                if let Some(prev) = pieces.last_mut() {
                    *prev = prev.trim_end();
                }
                pieces.push("\n");
                pieces.push(indentation);
                line_width = indentation.len();
            }
            line_width += word_width + (word.len() - trimmed.len());
            pieces.push(word);
        }
        out.extend(pieces);
    }
    out
}

/// Words with their trailing spaces; leading spaces are a word of their own.
fn split_words(line: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in line.char_indices() {
        let space = c == ' ';
        if in_space && !space {
            words.push(&line[start..i]);
            start = i;
        }
        in_space = space;
    }
    if start < line.len() {
        words.push(&line[start..]);
    }
    words
}

/// The width help wraps at: the terminal's (at most 100), or 100 when stdout
/// is not a terminal.
pub(crate) fn term_width() -> usize {
    // SAFETY: TIOCGWINSZ writes one winsize into the struct we pass.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    match (rc, ws.ws_col) {
        (0, c) if c > 0 => usize::from(c).min(100),
        _ => 100,
    }
}

/// A small command line shaped like nastune's (values and texts from the real
/// one, so that the expected help is clap's own output for those lines).
#[cfg(test)]
pub(crate) mod testspec {
    use crate::argv::spec::{Arg, ArgGroup, Command, Group, Kind, More, Value};

    pub const fn opt(id: &'static str, value_name: &'static str, help: &'static str) -> Arg {
        Arg {
            id,
            long: Some(id),
            short: None,
            value_name,
            help,
            more: &More::NONE,
            kind: Kind::One,
            num_args: (1, 1),
            default_value: None,
            required: false,
            global: false,
            hide: false,
            path: false,
        }
    }

    pub const fn flag(id: &'static str, help: &'static str) -> Arg {
        Arg {
            kind: Kind::Flag,
            num_args: (0, 0),
            ..opt(id, "", help)
        }
    }

    pub const fn positional(id: &'static str, value_name: &'static str, help: &'static str) -> Arg {
        Arg {
            long: None,
            ..opt(id, value_name, help)
        }
    }

    const fn cmd(name: &'static str, about: &'static str, args: &'static Group) -> Command {
        Command {
            name,
            about,
            long_about: None,
            version: None,
            hide: false,
            args,
        }
    }

    const fn value(name: &'static str, help: &'static str) -> Value {
        Value {
            name,
            help,
            hide: false,
        }
    }

    fn fifty() -> String {
        "50".to_string()
    }

    fn three() -> String {
        "3".to_string()
    }

    static GLOBAL: Group = Group {
        args: &[
            Arg {
                global: true,
                ..opt(
                    "db",
                    "PATH",
                    "Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]",
                )
            },
            Arg {
                global: true,
                more: &More {
                    conflicts: &["db"],
                    ..More::NONE
                },
                long: Some("no-store"),
                ..flag("no_store", "Do not save this run in the store")
            },
        ],
        ..Group::EMPTY
    };

    static GUARD: Group = Group {
        args: &[Arg {
            more: &More {
                default_shown: Some(three),
                ..More::NONE
            },
            ..opt(
                "settle",
                "SECS",
                "Seconds to wait for an idle box before measuring (0 = don't wait); a box that \
                 never goes idle makes the run 'disturbed'",
            )
        }],
        ..Group::EMPTY
    };

    static DISK: Group = Group {
        args: &[
            Arg {
                kind: Kind::Many,
                num_args: (1, usize::MAX),
                default_value: Some("."),
                ..positional(
                    "paths",
                    "PATH",
                    "Directory, file or block device to measure; several run alone, then together",
                )
            },
            Arg {
                more: &More {
                    values: &[
                        value(
                            "quick",
                            "SEQ1M Q8T1 and RND4K Q32T1, read and write (under a minute)",
                        ),
                        value(
                            "nas",
                            "SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1, read and write",
                        ),
                        value("cache", "Direct against buffered sequential read and write"),
                        value(
                            "durability",
                            "4K random writes with fsync each; sequential writes with the drive's \
                             write cache on and off",
                        ),
                        Value {
                            hide: true,
                            ..value("secret", "")
                        },
                    ],
                    conflicts: &["rw"],
                    ..More::NONE
                },
                ..opt(
                    "suite",
                    "SUITE",
                    "Set of tests to run when --rw is not given",
                )
            },
            Arg {
                more: &More {
                    values: &[
                        value("read", ""),
                        value("write", ""),
                        value("randread", ""),
                        value("randwrite", ""),
                        value(
                            "rw",
                            "Sequential mixed reads and writes (`--rwmixread` percent reads)",
                        ),
                        value(
                            "randrw",
                            "Random mixed reads and writes (`--rwmixread` percent reads)",
                        ),
                    ],
                    ..More::NONE
                },
                ..opt("rw", "RW", "One custom test instead of a suite (fio's rw)")
            },
            Arg {
                more: &More {
                    default_shown: Some(fifty),
                    requires: &["rw"],
                    ..More::NONE
                },
                ..opt(
                    "rwmixread",
                    "RWMIXREAD",
                    "Percent of reads in rw and randrw",
                )
            },
            Arg {
                default_value: Some("4k"),
                more: &More {
                    requires: &["rw"],
                    ..More::NONE
                },
                ..opt("bs", "BS", "Block size per I/O (4k, 1m …)")
            },
            Arg {
                num_args: (0, 1),
                more: &More {
                    default_missing: Some("1"),
                    ..More::NONE
                },
                ..opt(
                    "direct",
                    "0|1",
                    "O_DIRECT: bypass the page cache (suites default to 1, --rw to 0)",
                )
            },
            Arg {
                long: Some("ramp-time"),
                ..opt(
                    "ramp_time",
                    "RAMP_TIME",
                    "Warm-up before measuring; its I/O is not counted [default: 1s for suites, \
                     0 for --rw]",
                )
            },
            Arg {
                long: Some("destroy-data"),
                kind: Kind::Many,
                ..opt(
                    "destroy_data",
                    "DEVICE",
                    "Allow writes to this block device even though it holds data (must be a \
                     PATH; repeat for each; never while mounted, held or swap)",
                )
            },
            Arg {
                more: &More {
                    values: &[
                        value(
                            "io_uring",
                            "Linux io_uring: batched submission, registered buffers",
                        ),
                        value("psync", "pread(2)/pwrite(2), one I/O at a time"),
                        value(
                            "null",
                            "No I/O at all: measures the benchmark's own overhead",
                        ),
                    ],
                    ..More::NONE
                },
                ..opt(
                    "engine",
                    "ENGINE",
                    "I/O engine [default: io_uring when available, else psync]",
                )
            },
            flag(
                "json",
                "Print the versioned JSON document instead of the table",
            ),
            Arg {
                hide: true,
                ..flag("debug", "Not shown")
            },
            Arg {
                kind: Kind::Many,
                more: &More {
                    delimiter: Some(','),
                    ..More::NONE
                },
                short: Some('c'),
                ..opt("cipher", "NAME", "Ciphers to measure")
            },
            Arg {
                short: Some('v'),
                ..flag("verbose", "Say more")
            },
            Arg {
                short: Some('q'),
                ..flag("quiet", "Say less")
            },
            Arg {
                num_args: (1, usize::MAX),
                ..opt("replay", "DIR", "Treat each captured tree as one sample")
            },
        ],
        flatten: &[&GUARD],
        flatten_at: &[usize::MAX],
        ..Group::EMPTY
    };

    static NET: Group = Group {
        args: &[
            Arg {
                more: &More {
                    required_unless: &["loopback"],
                    conflicts: &["loopback"],
                    ..More::NONE
                },
                ..positional("host", "HOST", "The server")
            },
            flag(
                "loopback",
                "Run a server on this box and measure against it",
            ),
        ],
        ..Group::EMPTY
    };

    static BENCH: Group = Group {
        subcommands: &[
            Command {
                long_about: Some(
                    "Measure storage: throughput, IOPS, latency percentiles (p50 to p99.99 and \
                     max).\n\nExamples:\n  nastune bench disk /srv",
                ),
                ..cmd(
                    "disk",
                    "Storage throughput, IOPS, latency and the CPU they cost",
                    &DISK,
                )
            },
            cmd(
                "net",
                "Network throughput (TCP/UDP, iperf3-compatible) and request/response latency",
                &NET,
            ),
        ],
        subcommand_required: true,
        ..Group::EMPTY
    };

    static REPORT: Group = Group {
        args: &[
            Arg {
                kind: Kind::Many,
                ..positional("runs", "RUNS", "Run ids to include")
            },
            opt(
                "html",
                "FILE",
                "Write the HTML page to FILE ('-' for stdout)",
            ),
            opt(
                "markdown",
                "FILE",
                "Write Markdown to FILE ('-' for stdout)",
            ),
        ],
        groups: &[ArgGroup {
            id: "format",
            args: &["html", "markdown"],
            required: true,
        }],
        ..Group::EMPTY
    };

    static SHOW: Group = Group {
        args: &[
            Arg {
                required: true,
                ..positional("run", "RUN", "The run to show")
            },
            Arg {
                required: true,
                ..opt("bench", "JUDGE", "How to judge")
            },
        ],
        ..Group::EMPTY
    };

    static ROOT_GROUP: Group = Group {
        flatten: &[&GLOBAL],
        flatten_at: &[0],
        subcommands: &[
            cmd(
                "bench",
                "Measure what the box does: disk, crypto, network, HTTP",
                &BENCH,
            ),
            cmd(
                "compare",
                "Compare two stored runs: benchmark changes with confidence intervals, settings \
                 that differ",
                &Group::EMPTY,
            ),
            cmd(
                "report",
                "Write stored runs as one self-contained HTML page or as Markdown",
                &REPORT,
            ),
            cmd("show", "Show one run with its stored documents", &SHOW),
            Command {
                hide: true,
                ..cmd("secret", "Not listed", &Group::EMPTY)
            },
        ],
        subcommand_required: true,
        ..Group::EMPTY
    };

    pub static ROOT: Command = Command {
        version: Some("0.1.0 (test)"),
        ..cmd(
            "nastune",
            "Probe, measure, advise and tune small Linux servers and NAS boxes",
            &ROOT_GROUP,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::testspec::ROOT;
    use super::*;

    /// The level of `nastune <path..>`.
    fn level(path: &[&str]) -> Level {
        let mut l = Level::new(&ROOT, None, 0, true);
        for (i, name) in path.iter().enumerate() {
            let sub = l.cmd.args.subcommands.iter().find(|c| c.name == *name);
            l = Level::new(
                sub.expect("a subcommand of the test spec"),
                Some(&l),
                i + 1,
                true,
            );
        }
        l
    }

    #[test]
    fn short_help_has_clap_columns_wrapping_defaults_and_values() {
        let expected = "\
Storage throughput, IOPS, latency and the CPU they cost

Usage: nastune bench disk [OPTIONS] [PATH]...

Arguments:
  [PATH]...  Directory, file or block device to measure; several run alone, then together [default:
             .]

Options:
      --suite <SUITE>          Set of tests to run when --rw is not given [possible values: quick,
                               nas, cache, durability]
      --rw <RW>                One custom test instead of a suite (fio's rw) [possible values: read,
                               write, randread, randwrite, rw, randrw]
      --rwmixread <RWMIXREAD>  Percent of reads in rw and randrw [default: 50]
      --bs <BS>                Block size per I/O (4k, 1m …) [default: 4k]
      --direct [<0|1>]         O_DIRECT: bypass the page cache (suites default to 1, --rw to 0)
      --ramp-time <RAMP_TIME>  Warm-up before measuring; its I/O is not counted [default: 1s for
                               suites, 0 for --rw]
      --destroy-data <DEVICE>  Allow writes to this block device even though it holds data (must be
                               a PATH; repeat for each; never while mounted, held or swap)
      --engine <ENGINE>        I/O engine [default: io_uring when available, else psync] [possible
                               values: io_uring, psync, null]
      --json                   Print the versioned JSON document instead of the table
  -c, --cipher <NAME>          Ciphers to measure
  -v, --verbose                Say more
  -q, --quiet                  Say less
      --replay <DIR>...        Treat each captured tree as one sample
      --settle <SECS>          Seconds to wait for an idle box before measuring (0 = don't wait); a
                               box that never goes idle makes the run 'disturbed' [default: 3]
      --db <PATH>              Database file for the run store [default:
                               $XDG_DATA_HOME/nastune/nastune.db]
      --no-store               Do not save this run in the store
  -h, --help                   Print help (see more with '--help')
  -V, --version                Print version
";
        assert_eq!(render(&level(&["bench", "disk"]), false, 100), expected);
    }

    #[test]
    fn long_help_lists_values_with_help_and_puts_defaults_below() {
        let text = render(&level(&["bench", "disk"]), true, 100);
        let starts = "Measure storage: throughput, IOPS, latency percentiles (p50 to p99.99 and max).\n\n\
                      Examples:\n  nastune bench disk /srv\n\nUsage: nastune bench disk [OPTIONS] [PATH]...\n";
        assert!(text.starts_with(starts), "{text}");
        let blocks = [
            "  [PATH]...\n          Directory, file or block device to measure; several run alone, \
             then together\n          \n          [default: .]\n\nOptions:\n",
            "      --suite <SUITE>\n          Set of tests to run when --rw is not given\n\n          \
             Possible values:\n          - quick:      SEQ1M Q8T1 and RND4K Q32T1, read and write \
             (under a minute)\n",
            "          - durability: 4K random writes with fsync each; sequential writes with the \
             drive's write\n            cache on and off\n\n      --rw <RW>\n",
            "          - read\n          - write\n",
            "          - rw:        Sequential mixed reads and writes",
            "      --rwmixread <RWMIXREAD>\n          Percent of reads in rw and randrw\n          \n          \
             [default: 50]\n\n",
            "  -h, --help\n          Print help (see a summary with '-h')\n\n  -V, --version\n          \
             Print version\n",
        ];
        for b in blocks {
            assert!(text.contains(b), "{b:?} not in\n{text}");
        }
        assert!(
            !text.contains("secret") && !text.contains("--debug"),
            "hidden shown:\n{text}"
        );
        assert!(text.ends_with("Print version\n"));
    }

    #[test]
    fn commands_list_wraps_and_ends_with_help_and_hides_hidden() {
        let expected = "\
Probe, measure, advise and tune small Linux servers and NAS boxes

Usage: nastune [OPTIONS] <COMMAND>

Commands:
  bench    Measure what the box does: disk, crypto, network, HTTP
  compare  Compare two stored runs: benchmark changes with confidence intervals, settings that
           differ
  report   Write stored runs as one self-contained HTML page or as Markdown
  show     Show one run with its stored documents
  help     Print this message or the help of the given subcommand(s)

Options:
      --db <PATH>  Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]
      --no-store   Do not save this run in the store
  -h, --help       Print help
  -V, --version    Print version
";
        assert_eq!(render(&level(&[]), false, 100), expected);
        // Nothing has a long form: --help prints the same.
        assert_eq!(render(&level(&[]), true, 100), expected);
    }

    #[test]
    fn narrow_terminal_puts_every_help_on_its_own_line() {
        let text = render(&level(&["show"]), false, 40);
        let options = "Options:\n      --bench <JUDGE>\n          How to judge\n      --db <PATH>\n          \
                       Database file for the run\n          store [default:\n          \
                       $XDG_DATA_HOME/nastune/nastune.db]\n";
        assert!(text.contains(options), "{text}");
    }

    #[test]
    fn usage_names_required_options_groups_and_positionals() {
        assert_eq!(
            usage(&level(&["report"]), &[], &[]),
            "nastune report [OPTIONS] <--html <FILE>|--markdown <FILE>> [RUNS]..."
        );
        assert_eq!(
            usage(&level(&["show"]), &[], &[]),
            "nastune show [OPTIONS] --bench <JUDGE> <RUN>"
        );
        assert_eq!(
            usage(&level(&["bench"]), &[], &[]),
            "nastune bench [OPTIONS] <COMMAND>"
        );
    }

    #[test]
    fn arg_display_is_claps() {
        let l = level(&["bench", "disk"]);
        let shown = |id: &str| {
            let (a, _) = l
                .args
                .iter()
                .find(|(a, _)| a.id == id)
                .expect("in the test spec");
            arg_display(a)
        };
        assert_eq!(shown("rw"), "--rw <RW>");
        assert_eq!(shown("json"), "--json");
        assert_eq!(shown("direct"), "--direct [<0|1>]");
        assert_eq!(shown("paths"), "[PATH]...");
        assert_eq!(shown("replay"), "--replay <DIR>...");
        assert_eq!(shown("cipher"), "--cipher <NAME>");
        assert_eq!(shown("no_store"), "--no-store");
        assert_eq!(
            arg_display(&testspec::positional("run", "RUN", "")),
            "[RUN]"
        );
    }

    #[test]
    fn wrap_is_claps_greedy_wrap() {
        assert_eq!(
            wrap("To be, or not to be, that is the question.", 10),
            "To be, or\nnot to be,\nthat is\nthe\nquestion."
        );
        assert_eq!(wrap("  foo bar", 6), "  foo\n  bar");
        assert_eq!(wrap("aaabbbccc x yyyzzzwww", 9), "aaabbbccc\nx\nyyyzzzwww");
        assert_eq!(wrap("a b\n\nc d", 1), "a\nb\n\nc\nd");
        assert_eq!(wrap("", 10), "");
    }
}
