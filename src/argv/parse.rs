//! Turns the words of a command line into Matches (mod.rs), checking them
//! against the spec (spec.rs) the way clap 4 did, with clap's messages: the
//! tests of the CLI and its users' scripts saw those.
//!
//! One pass over the words fills one list of entries per command level (the
//! root, then each subcommand given); then each level is checked, deepest
//! first as clap does, and gets its defaults.

use std::ffi::{OsStr, OsString};
use std::iter::Peekable;
use std::os::unix::ffi::OsStrExt;
#[cfg(test)]
use std::os::unix::ffi::OsStringExt;

use super::help::{self, Level};
use super::spec::{Arg, Command, Kind};
use super::{Entry, Error, ErrorKind, Matches};

type Words = Peekable<std::vec::IntoIter<OsString>>;

/// Parses `args` (without the program name) against `root`.
pub fn parse(root: &'static Command, args: Vec<OsString>) -> Result<Matches, Error> {
    let mut p = Parser {
        root,
        levels: vec![Level::new(root, None, 0, root.version.is_some())],
        entries: vec![Vec::new()],
    };
    p.words(args)?;
    for d in (0..p.levels.len()).rev() {
        p.validate(d)?;
    }
    p.defaults();
    let mut sub: Option<(&'static str, Box<Matches>)> = None;
    for (level, entries) in p.levels.into_iter().zip(p.entries).rev() {
        let m = Matches {
            entries,
            sub: sub.take(),
            error: None,
        };
        sub = Some((level.cmd.name, Box::new(m)));
    }
    Ok(sub.map(|(_, m)| *m).unwrap_or_default())
}

struct Parser {
    root: &'static Command,
    /// The root, then each subcommand given, in order.
    levels: Vec<Level>,
    /// What each level recorded, in the order arguments were first given.
    entries: Vec<Vec<Entry>>,
}

enum Sub {
    Command(&'static Command),
    /// The `help` subcommand every command with subcommands has.
    Help,
}

impl Parser {
    fn depth(&self) -> usize {
        self.levels.len() - 1
    }

    fn words(&mut self, args: Vec<OsString>) -> Result<(), Error> {
        let mut rest: Words = args.into_iter().peekable();
        let mut only_positionals = false;
        // The positional being filled at the current level.
        let mut pos = 0;
        while let Some(word) = rest.next() {
            let b = word.as_bytes();
            if !only_positionals {
                if b == b"--" {
                    only_positionals = true;
                    continue;
                }
                if b.starts_with(b"--") {
                    self.long(&b[2..], &mut rest)?;
                    continue;
                }
                if looks_like_option(&word) {
                    self.shorts(b, &mut rest)?;
                    continue;
                }
                match self.subcommand(&word) {
                    Some(Sub::Command(c)) => {
                        self.descend(c);
                        pos = 0;
                        continue;
                    }
                    Some(Sub::Help) => return Err(self.help_command(rest)),
                    None => {}
                }
            }
            self.positional(word, &mut pos)?;
        }
        Ok(())
    }

    /// `--name` or `--name=value` (`body` is after the dashes).
    fn long(&mut self, body: &[u8], rest: &mut Words) -> Result<(), Error> {
        let (name, inline) = match body.iter().position(|&c| c == b'=') {
            Some(i) => (
                &body[..i],
                Some(OsStr::from_bytes(&body[i + 1..]).to_owned()),
            ),
            None => (body, None),
        };
        let d = self.depth();
        let found = self.levels[d]
            .args
            .iter()
            .find(|(a, _)| a.long.is_some_and(|l| l.as_bytes() == name))
            .copied();
        match found {
            Some((arg, owner)) => {
                let values = self.values(arg, inline, rest)?;
                self.record(owner, arg, values);
                Ok(())
            }
            None if name == b"help" => Err(self.help(d, true)),
            None if name == b"version" && self.levels[d].version => Err(self.version()),
            None => {
                let shown = format!("--{}", String::from_utf8_lossy(name));
                Err(self.unknown(&shown, true))
            }
        }
    }

    /// `-v`, `-abc` (flags), `-w read`, `-wread`, `-w=read`.
    fn shorts(&mut self, b: &[u8], rest: &mut Words) -> Result<(), Error> {
        let d = self.depth();
        let text = String::from_utf8_lossy(&b[1..]).into_owned();
        let mut at = 1;
        for c in text.chars() {
            at += c.len_utf8();
            let found = self.levels[d]
                .args
                .iter()
                .find(|(a, _)| a.short == Some(c))
                .copied();
            match found {
                Some((arg, owner)) if arg.kind == Kind::Flag => self.record(owner, arg, Vec::new()),
                Some((arg, owner)) => {
                    let attached = b.get(at..).unwrap_or_default();
                    let attached = attached.strip_prefix(b"=").unwrap_or(attached);
                    let inline = (at < b.len()).then(|| OsStr::from_bytes(attached).to_owned());
                    let values = self.values(arg, inline, rest)?;
                    self.record(owner, arg, values);
                    return Ok(());
                }
                None if c == 'h' => return Err(self.help(d, false)),
                None if c == 'V' && self.levels[d].version => return Err(self.version()),
                None => return Err(self.unknown(&format!("-{c}"), false)),
            }
        }
        Ok(())
    }

    /// The values one occurrence of `arg` takes: the attached one, or as many
    /// following words as num_args allows that do not look like options.
    fn values(
        &self,
        arg: &'static Arg,
        inline: Option<OsString>,
        rest: &mut Words,
    ) -> Result<Vec<OsString>, Error> {
        if arg.kind == Kind::Flag || arg.num_args.1 == 0 {
            return match inline {
                None => Ok(Vec::new()),
                Some(v) => {
                    let d = self.depth();
                    let mut used = self.given(d);
                    if !used.iter().any(|a| std::ptr::eq(*a, arg)) {
                        used.push(arg);
                    }
                    Err(fail(
                        ErrorKind::WrongValueCount,
                        &format!(
                            "unexpected value '{}' for '{}' found; no more were expected",
                            v.to_string_lossy(),
                            help::arg_display(arg)
                        ),
                        None,
                        Some(help::usage(&self.levels[d], &[], &used)),
                    ))
                }
            };
        }
        if let Some(v) = inline {
            return Ok(vec![v]);
        }
        let mut values = Vec::new();
        while values.len() < arg.num_args.1 {
            match rest.next_if(|w| !looks_like_option(w)) {
                Some(w) => values.push(w),
                None => break,
            }
        }
        if values.len() < arg.num_args.0 {
            return Err(fail(
                ErrorKind::WrongValueCount,
                &format!(
                    "a value is required for '{}' but none was supplied",
                    help::arg_display(arg)
                ),
                None,
                None,
            ));
        }
        if values.is_empty() {
            values.extend(arg.more.default_missing.map(OsString::from));
        }
        Ok(values)
    }

    /// One occurrence of `arg`, in the entries of level `owner`.
    fn record(&mut self, owner: usize, arg: &'static Arg, values: Vec<OsString>) {
        let entries = &mut self.entries[owner];
        let i = match entries.iter().position(|e| std::ptr::eq(e.arg, arg)) {
            Some(i) => i,
            None => {
                entries.push(Entry {
                    arg,
                    values: Vec::new(),
                    occurrences: 0,
                });
                entries.len() - 1
            }
        };
        let e = &mut entries[i];
        e.occurrences += 1;
        if arg.kind == Kind::One {
            e.values.clear();
        }
        for v in values {
            split(&v, arg.more.delimiter, &mut e.values);
        }
    }

    fn subcommand(&self, word: &OsStr) -> Option<Sub> {
        let subs = self.levels[self.depth()].cmd.args.subcommands;
        if subs.is_empty() {
            return None;
        }
        match subs.iter().find(|c| word == c.name) {
            Some(c) => Some(Sub::Command(c)),
            None => (word == "help").then_some(Sub::Help),
        }
    }

    fn descend(&mut self, cmd: &'static Command) {
        let d = self.levels.len();
        let level = Level::new(
            cmd,
            Some(&self.levels[d - 1]),
            d,
            self.root.version.is_some(),
        );
        self.levels.push(level);
        self.entries.push(Vec::new());
    }

    /// `help [COMMAND]...`: the long help of the command those words name.
    fn help_command(&mut self, rest: Words) -> Error {
        for word in rest {
            match self.subcommand(&word) {
                Some(Sub::Command(c)) => self.descend(c),
                Some(Sub::Help) => {
                    return Error {
                        kind: ErrorKind::DisplayHelp,
                        text: help::render_help_command(&self.levels[self.depth()].path),
                    };
                }
                None => return self.unrecognized(&word),
            }
        }
        self.help(self.depth(), true)
    }

    /// A word that is neither an option nor a subcommand: the next positional.
    fn positional(&mut self, word: OsString, pos: &mut usize) -> Result<(), Error> {
        let d = self.depth();
        let slot = self.levels[d]
            .args
            .iter()
            .filter(|(a, o)| *o == d && a.is_positional())
            .nth(*pos)
            .copied();
        let Some((arg, owner)) = slot else {
            let l = &self.levels[d];
            if !l.cmd.args.subcommands.is_empty() && !l.args.iter().any(|(a, _)| a.is_positional())
            {
                return Err(self.unrecognized(&word));
            }
            return Err(self.unknown(&word.to_string_lossy(), false));
        };
        self.record(owner, arg, vec![word]);
        // A multiple positional takes every positional word left.
        if arg.kind != Kind::Many && arg.num_args.1 <= 1 {
            *pos += 1;
        }
        Ok(())
    }

    fn help(&self, d: usize, long: bool) -> Error {
        Error {
            kind: ErrorKind::DisplayHelp,
            text: help::render(&self.levels[d], long, help::term_width()),
        }
    }

    fn version(&self) -> Error {
        Error {
            kind: ErrorKind::DisplayVersion,
            text: format!(
                "{} {}\n",
                self.root.name,
                self.root.version.unwrap_or_default()
            ),
        }
    }

    /// The arguments level `d` recorded from the command line, in order.
    fn given(&self, d: usize) -> Vec<&'static Arg> {
        self.entries[d]
            .iter()
            .filter(|e| e.occurrences > 0)
            .map(|e| e.arg)
            .collect()
    }

    /// `--long` (`smart`: the usage names what was given, as clap does for a
    /// long) or `-s` or a stray word not taken at the current level.
    fn unknown(&self, shown: &str, smart: bool) -> Error {
        let d = self.depth();
        let l = &self.levels[d];
        let has_positionals = l.args.iter().any(|(a, _)| a.is_positional());
        let tip = (has_positionals && shown.starts_with('-'))
            .then(|| format!("to pass '{shown}' as a value, use '-- {shown}'"));
        let used = if smart { self.given(d) } else { Vec::new() };
        fail(
            ErrorKind::UnknownArgument,
            &format!("unexpected argument '{shown}' found"),
            tip,
            Some(help::usage(l, &[], &used)),
        )
    }

    fn unrecognized(&self, word: &OsStr) -> Error {
        fail(
            ErrorKind::UnknownSubcommand,
            &format!("unrecognized subcommand '{}'", word.to_string_lossy()),
            None,
            Some(help::usage(&self.levels[self.depth()], &[], &[])),
        )
    }

    /// A missing subcommand, conflicts and missing required arguments at level `d`.
    fn validate(&self, d: usize) -> Result<(), Error> {
        let l = &self.levels[d];
        let args = &l.cmd.args;
        if d == self.depth() && args.subcommand_required && !args.subcommands.is_empty() {
            return Err(Error {
                kind: ErrorKind::MissingSubcommand,
                text: help::render(l, false, help::term_width()),
            });
        }
        let given = self.given(d);
        let is_given = |id: &str| given.iter().any(|a| a.id == id);
        let own = || l.args.iter().filter(|(_, o)| *o == d).map(|(a, _)| *a);
        let find = |id: &str| own().find(|a| a.id == id);

        for &a in &given {
            let with = conflicts(l, &given, a);
            if with.is_empty() {
                continue;
            }
            let used: Vec<&'static Arg> = given
                .iter()
                .copied()
                .filter(|b| !b.hide && !with.iter().any(|c| std::ptr::eq(*c, *b)))
                .collect();
            let required: Vec<&'static Arg> = used
                .iter()
                .flat_map(|b| b.more.requires.iter())
                .filter_map(|id| find(id))
                .filter(|r| !used.iter().any(|u| std::ptr::eq(*u, *r)))
                .filter(|r| !with.iter().any(|c| std::ptr::eq(*c, *r)))
                .collect();
            let names: Vec<String> = with.iter().map(|b| help::arg_display(b)).collect();
            let list = match names.as_slice() {
                [one] => format!(" '{one}'"),
                _ => format!(":\n  {}", names.join("\n  ")),
            };
            return Err(fail(
                ErrorKind::Conflict,
                &format!(
                    "the argument '{}' cannot be used with{list}",
                    help::arg_display(a)
                ),
                None,
                Some(help::usage(l, &required, &used)),
            ));
        }

        let conflicted = |a: &Arg| {
            given
                .iter()
                .any(|b| b.more.conflicts.contains(&a.id) || a.more.conflicts.contains(&b.id))
        };
        let mut missing: Vec<&'static Arg> = Vec::new();
        let mut need = |a: &'static Arg| {
            if !missing.iter().any(|m| std::ptr::eq(*m, a)) {
                missing.push(a);
            }
        };
        for a in own().filter(|a| a.required && !is_given(a.id) && !conflicted(a)) {
            need(a);
        }
        for id in given.iter().flat_map(|a| a.more.requires.iter()) {
            if let Some(r) = find(id).filter(|r| !is_given(r.id)) {
                need(r);
            }
        }
        for a in own().filter(|a| !a.more.required_unless.is_empty() && !is_given(a.id)) {
            if !a.more.required_unless.iter().any(|id| is_given(id)) {
                need(a);
            }
        }
        let groups: Vec<String> = l
            .groups
            .iter()
            .filter(|g| g.required && !g.args.iter().any(|id| is_given(id)))
            .map(|g| help::group_display(l, g))
            .collect();
        if missing.is_empty() && groups.is_empty() {
            return Ok(());
        }
        // Options, then groups, then positionals: clap's order.
        let mut lines: Vec<String> = missing
            .iter()
            .filter(|a| !a.is_positional())
            .map(|a| help::arg_display(a))
            .collect();
        lines.extend(groups);
        lines.extend(
            own()
                .filter(|a| a.is_positional() && missing.iter().any(|m| std::ptr::eq(*m, *a)))
                .map(|a| help::display(a, true)),
        );
        let used: Vec<&'static Arg> = given.iter().copied().filter(|a| !a.hide).collect();
        Err(fail(
            ErrorKind::MissingRequired,
            &format!(
                "the following required arguments were not provided:\n  {}",
                lines.join("\n  ")
            ),
            None,
            Some(help::usage(l, &missing, &used)),
        ))
    }

    /// Arguments not given that have a `default_value` get it (occurrences 0).
    fn defaults(&mut self) {
        for (d, level) in self.levels.iter().enumerate() {
            let entries = &mut self.entries[d];
            for &(arg, _) in level.args.iter().filter(|(_, o)| *o == d) {
                let Some(default) = arg.default_value else {
                    continue;
                };
                if entries.iter().any(|e| std::ptr::eq(e.arg, arg)) {
                    continue;
                }
                let mut values = Vec::new();
                split(OsStr::new(default), arg.more.delimiter, &mut values);
                entries.push(Entry {
                    arg,
                    values,
                    occurrences: 0,
                });
            }
        }
    }
}

/// The given arguments `a` cannot be used with: its `conflicts`, those that
/// name it in theirs, and the other members of its groups (a group takes one).
fn conflicts(l: &Level, given: &[&'static Arg], a: &'static Arg) -> Vec<&'static Arg> {
    let mut with: Vec<&'static Arg> = Vec::new();
    let mut add = |b: &'static Arg| {
        if !std::ptr::eq(a, b) && !with.iter().any(|c| std::ptr::eq(*c, b)) {
            with.push(b);
        }
    };
    for id in a.more.conflicts {
        if let Some(b) = given.iter().find(|b| b.id == *id) {
            add(b);
        }
    }
    for &b in given.iter().filter(|b| b.more.conflicts.contains(&a.id)) {
        add(b);
    }
    for g in l.groups.iter().filter(|g| g.args.contains(&a.id)) {
        for &b in given.iter().filter(|b| g.args.contains(&b.id)) {
            add(b);
        }
    }
    with
}

/// `-x` or `--x` but not `-` alone (a value: stdin or stdout).
fn looks_like_option(w: &OsStr) -> bool {
    let b = w.as_bytes();
    b.len() > 1 && b[0] == b'-'
}

/// `value` split at `delimiter` (when the argument has one) onto `out`.
fn split(value: &OsStr, delimiter: Option<char>, out: &mut Vec<OsString>) {
    let Some(delimiter) = delimiter else {
        out.push(value.to_owned());
        return;
    };
    let mut buf = [0; 4];
    let d = delimiter.encode_utf8(&mut buf).as_bytes();
    let b = value.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i + d.len() <= b.len() {
        if &b[i..i + d.len()] == d {
            out.push(OsStr::from_bytes(&b[start..i]).to_owned());
            i += d.len();
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(OsStr::from_bytes(&b[start..]).to_owned());
}

/// clap's error layout: the message, a tip, the usage, the hint.
fn fail(kind: ErrorKind, message: &str, tip: Option<String>, usage: Option<String>) -> Error {
    let mut text = format!("error: {message}");
    if let Some(tip) = tip {
        text.push_str("\n\n  tip: ");
        text.push_str(&tip);
    }
    if let Some(usage) = usage {
        text.push_str("\n\nUsage: ");
        text.push_str(&usage);
    }
    text.push_str("\n\nFor more information, try '--help'.\n");
    Error { kind, text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argv::help::testspec::ROOT;

    fn run(words: &[&str]) -> Result<Matches, Error> {
        parse(&ROOT, words.iter().map(OsString::from).collect())
    }

    fn err(words: &[&str]) -> Error {
        run(words).expect_err("the command line should be refused")
    }

    /// The matches `depth` levels below the root.
    fn at(m: &Matches, depth: usize) -> &Matches {
        let mut m = m;
        for _ in 0..depth {
            m = &m.sub.as_ref().expect("a subcommand").1;
        }
        m
    }

    /// The values of `id` at that level, and how often it was given.
    fn got(m: &Matches, id: &str) -> Option<(Vec<String>, usize)> {
        let e = m.entries.iter().find(|e| e.arg.id == id)?;
        let values = e
            .values
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        Some((values, e.occurrences))
    }

    fn disk(words: &[&str]) -> Matches {
        let mut all = vec!["bench", "disk"];
        all.extend_from_slice(words);
        run(&all).expect("a valid command line")
    }

    /// Asserts that the error's text starts with (`start`) or contains `part`.
    fn has(e: &Error, part: &str, start: bool) {
        let found = if start {
            e.text.starts_with(part)
        } else {
            e.text.contains(part)
        };
        assert!(found, "{part:?} not in:\n{}", e.text);
    }

    fn vals(v: &[&str], n: usize) -> Option<(Vec<String>, usize)> {
        Some((v.iter().map(|s| s.to_string()).collect(), n))
    }

    #[test]
    fn long_options_take_a_value_after_a_space_or_an_equals_sign() {
        let m = disk(&["--rw", "read", "--bs=1m", "--bs="]);
        assert_eq!(got(at(&m, 2), "rw"), vals(&["read"], 1));
        assert_eq!(got(at(&m, 2), "bs"), vals(&[""], 2));
        assert_eq!(m.sub.as_ref().map(|s| s.0), Some("bench"));
        assert_eq!(at(&m, 1).sub.as_ref().map(|s| s.0), Some("disk"));
    }

    #[test]
    fn short_options_combine_and_take_attached_values() {
        let m = disk(&["-c", "aes,xts", "-cserpent", "-c=twofish", "-vq"]);
        let d = at(&m, 2);
        assert_eq!(
            got(d, "cipher"),
            vals(&["aes", "xts", "serpent", "twofish"], 3)
        );
        assert_eq!(got(d, "verbose"), vals(&[], 1));
        assert_eq!(got(d, "quiet"), vals(&[], 1));
        let m = disk(&["-vcaes"]);
        assert_eq!(got(at(&m, 2), "cipher"), vals(&["aes"], 1));
        assert_eq!(got(at(&m, 2), "verbose"), vals(&[], 1));
    }

    #[test]
    fn double_dash_ends_options() {
        let m = disk(&["x", "--", "--json", "-v"]);
        assert_eq!(got(at(&m, 2), "paths"), vals(&["x", "--json", "-v"], 3));
        assert_eq!(got(at(&m, 2), "json"), None);
    }

    #[test]
    fn one_keeps_the_last_many_keeps_all() {
        let m = disk(&[
            "--rw",
            "read",
            "--rw",
            "write",
            "--destroy-data",
            "a",
            "--destroy-data=b",
        ]);
        assert_eq!(got(at(&m, 2), "rw"), vals(&["write"], 2));
        assert_eq!(got(at(&m, 2), "destroy_data"), vals(&["a", "b"], 2));
    }

    #[test]
    fn optional_value_takes_default_missing_or_the_next_word() {
        assert_eq!(got(at(&disk(&["--direct"]), 2), "direct"), vals(&["1"], 1));
        assert_eq!(
            got(at(&disk(&["--direct=0"]), 2), "direct"),
            vals(&["0"], 1)
        );
        assert_eq!(
            got(at(&disk(&["--direct", "0"]), 2), "direct"),
            vals(&["0"], 1)
        );
        let m = disk(&["--direct", "--json"]);
        assert_eq!(got(at(&m, 2), "direct"), vals(&["1"], 1));
        assert_eq!(got(at(&m, 2), "json"), vals(&[], 1));
        // As with clap, a plain word after it is its value, not a PATH.
        let m = disk(&["--direct", "/srv"]);
        assert_eq!(got(at(&m, 2), "direct"), vals(&["/srv"], 1));
        assert_eq!(got(at(&m, 2), "paths"), vals(&["."], 0));
    }

    #[test]
    fn many_values_per_option_stop_at_the_next_option() {
        let m = disk(&["--replay", "a", "b", "--json", "c", "d"]);
        assert_eq!(got(at(&m, 2), "replay"), vals(&["a", "b"], 1));
        assert_eq!(got(at(&m, 2), "paths"), vals(&["c", "d"], 2));
    }

    #[test]
    fn defaults_fill_what_was_not_given() {
        let m = disk(&[]);
        let d = at(&m, 2);
        assert_eq!(got(d, "paths"), vals(&["."], 0));
        assert_eq!(got(d, "bs"), vals(&["4k"], 0));
        // default_value_t is the derived code's to supply.
        assert_eq!(got(d, "rwmixread"), None);
        assert_eq!(got(d, "json"), None);
    }

    #[test]
    fn global_args_are_recorded_where_they_are_defined() {
        let m = disk(&["--db", "x.db", "--json"]);
        assert_eq!(got(at(&m, 0), "db"), vals(&["x.db"], 1));
        assert_eq!(got(at(&m, 2), "db"), None);
        let m = run(&["--no-store", "bench", "disk"]).expect("valid");
        assert_eq!(got(at(&m, 0), "no_store"), vals(&[], 1));
    }

    #[test]
    fn values_keep_bytes_that_are_not_utf8() {
        let raw = OsString::from_vec(vec![b'a', 0xff]);
        let m = parse(&ROOT, vec!["bench".into(), "disk".into(), raw.clone()]).expect("valid");
        let e = at(&m, 2)
            .entries
            .iter()
            .find(|e| e.arg.id == "paths")
            .expect("paths");
        assert_eq!(e.values, vec![raw]);
    }

    #[test]
    fn hidden_args_and_commands_are_accepted() {
        assert_eq!(got(at(&disk(&["--debug"]), 2), "debug"), vals(&[], 1));
        assert!(run(&["secret"]).is_ok());
    }

    #[test]
    fn help_anywhere_prints_the_current_commands_help() {
        let e = err(&["bench", "-h", "disk"]);
        assert_eq!(e.kind, ErrorKind::DisplayHelp);
        assert_eq!(e.exit_code(), 0);
        has(&e, "Measure what the box does", true);
        let e = err(&["bench", "disk", "--json", "-h"]);
        has(&e, "Print help (see more with '--help')", false);
        let e = err(&["bench", "disk", "--help"]);
        has(&e, "Measure storage:", true);
        has(&e, "Print help (see a summary with '-h')", false);
    }

    #[test]
    fn version_is_the_roots_at_every_level() {
        for words in [
            &["-V"][..],
            &["--version"],
            &["bench", "disk", "-V"],
            &["bench", "disk", "-vV"],
        ] {
            let e = err(words);
            assert_eq!(e.kind, ErrorKind::DisplayVersion);
            assert_eq!(e.text, "nastune 0.1.0 (test)\n");
        }
    }

    #[test]
    fn help_subcommand_prints_the_long_help_of_the_named_command() {
        let direct = err(&["bench", "disk", "--help"]).text;
        for words in [&["help", "bench", "disk"][..], &["bench", "help", "disk"]] {
            let e = err(words);
            assert_eq!(e.kind, ErrorKind::DisplayHelp);
            assert_eq!(e.text, direct);
        }
        assert_eq!(err(&["help"]).text, err(&["--help"]).text);
        let e = err(&["help", "frob"]);
        assert_eq!(e.kind, ErrorKind::UnknownSubcommand);
        assert_eq!(
            e.text,
            "error: unrecognized subcommand 'frob'\n\nUsage: nastune [OPTIONS] <COMMAND>\n\n\
             For more information, try '--help'.\n"
        );
        assert!(err(&["help", "help"]).text.starts_with(
            "Print this message or the help of the given subcommand(s)\n\nUsage: nastune help"
        ));
    }

    #[test]
    fn missing_subcommand_prints_the_short_help_with_exit_code_2() {
        let e = err(&["bench"]);
        assert_eq!(e.kind, ErrorKind::MissingSubcommand);
        assert_eq!(e.exit_code(), 2);
        has(&e, "Measure what the box does", true);
        has(&e, "\nCommands:\n  disk ", false);
        assert_eq!(err(&[]).kind, ErrorKind::MissingSubcommand);
    }

    #[test]
    fn unknown_arguments_and_subcommands() {
        let e = err(&["--frobnicate"]);
        assert_eq!(e.kind, ErrorKind::UnknownArgument);
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.text,
            "error: unexpected argument '--frobnicate' found\n\nUsage: nastune [OPTIONS] <COMMAND>\n\n\
             For more information, try '--help'.\n"
        );
        let e = err(&["generate"]);
        assert_eq!(e.kind, ErrorKind::UnknownSubcommand);
        assert_eq!(
            e.text,
            "error: unrecognized subcommand 'generate'\n\nUsage: nastune [OPTIONS] <COMMAND>\n\n\
             For more information, try '--help'.\n"
        );
        assert_eq!(
            err(&["bench", "disk", "--json", "--frob=1"]).text,
            "error: unexpected argument '--frob' found\n\n  tip: to pass '--frob' as a value, use \
             '-- --frob'\n\nUsage: nastune bench disk --json [PATH]...\n\n\
             For more information, try '--help'.\n"
        );
        assert_eq!(
            err(&["bench", "net", "--loopback", "-x"]).text,
            "error: unexpected argument '-x' found\n\n  tip: to pass '-x' as a value, use '-- -x'\
             \n\nUsage: nastune bench net [OPTIONS] [HOST]\n\nFor more information, try '--help'.\n"
        );
        assert_eq!(
            err(&["bench", "net", "host", "extra"]).text,
            "error: unexpected argument 'extra' found\n\nUsage: nastune bench net [OPTIONS] [HOST]\
             \n\nFor more information, try '--help'.\n"
        );
    }

    #[test]
    fn wrong_value_counts() {
        let e = err(&["bench", "disk", "--json=1"]);
        assert_eq!(e.kind, ErrorKind::WrongValueCount);
        assert_eq!(
            e.text,
            "error: unexpected value '1' for '--json' found; no more were expected\n\n\
             Usage: nastune bench disk --json [PATH]...\n\nFor more information, try '--help'.\n"
        );
        let missing = "error: a value is required for '--bs <BS>' but none was supplied\n\n\
                       For more information, try '--help'.\n";
        assert_eq!(err(&["bench", "disk", "--bs"]).text, missing);
        assert_eq!(err(&["bench", "disk", "--bs", "--json"]).text, missing);
        assert_eq!(
            err(&["bench", "disk", "-c"]).kind,
            ErrorKind::WrongValueCount
        );
        assert!(
            err(&["bench", "disk", "--replay"])
                .text
                .contains("'--replay <DIR>...'")
        );
    }

    #[test]
    fn required_arguments_positionals_and_groups() {
        let e = err(&["show"]);
        assert_eq!(e.kind, ErrorKind::MissingRequired);
        assert_eq!(
            e.text,
            "error: the following required arguments were not provided:\n  --bench <JUDGE>\n  <RUN>\
             \n\nUsage: nastune show --bench <JUDGE> <RUN>\n\nFor more information, try '--help'.\n"
        );
        assert!(run(&["show", "--bench", "j", "7"]).is_ok());
        assert_eq!(
            err(&["report", "7"]).text,
            "error: the following required arguments were not provided:\n  \
             <--html <FILE>|--markdown <FILE>>\n\n\
             Usage: nastune report <--html <FILE>|--markdown <FILE>> <RUNS>...\n\n\
             For more information, try '--help'.\n"
        );
        assert!(run(&["report", "--markdown", "-"]).is_ok());
    }

    #[test]
    fn required_unless_is_met_by_the_other_argument() {
        assert_eq!(
            err(&["bench", "net"]).text,
            "error: the following required arguments were not provided:\n  <HOST>\n\n\
             Usage: nastune bench net <HOST>\n\nFor more information, try '--help'.\n"
        );
        assert!(run(&["bench", "net", "--loopback"]).is_ok());
        assert!(run(&["bench", "net", "host"]).is_ok());
    }

    #[test]
    fn requires_counts_only_what_was_given() {
        assert_eq!(
            err(&["bench", "disk", "--rwmixread", "5"]).text,
            "error: the following required arguments were not provided:\n  --rw <RW>\n\n\
             Usage: nastune bench disk --rw <RW> --rwmixread <RWMIXREAD> [PATH]...\n\n\
             For more information, try '--help'.\n"
        );
        // --bs has a default and requires --rw: the default does not count.
        assert!(run(&["bench", "disk"]).is_ok());
        assert!(run(&["bench", "disk", "--rwmixread", "5", "--rw", "rw"]).is_ok());
    }

    #[test]
    fn conflicts_name_both_arguments() {
        let e = err(&["bench", "disk", "--suite", "quick", "--rw", "read"]);
        assert_eq!(e.kind, ErrorKind::Conflict);
        assert_eq!(
            e.text,
            "error: the argument '--suite <SUITE>' cannot be used with '--rw <RW>'\n\n\
             Usage: nastune bench disk --suite <SUITE> [PATH]...\n\nFor more information, try '--help'.\n"
        );
        assert!(
            err(&["bench", "disk", "--rw", "read", "--suite", "quick"])
                .text
                .starts_with(
                    "error: the argument '--rw <RW>' cannot be used with '--suite <SUITE>'\n"
                )
        );
        assert_eq!(
            err(&["bench", "net", "--loopback", "host"]).text,
            "error: the argument '--loopback' cannot be used with '[HOST]'\n\n\
             Usage: nastune bench net --loopback [HOST]\n\nFor more information, try '--help'.\n"
        );
        assert_eq!(
            err(&["report", "--html", "a", "--markdown", "b"]).text,
            "error: the argument '--html <FILE>' cannot be used with '--markdown <FILE>'\n\n\
             Usage: nastune report <--html <FILE>|--markdown <FILE>> [RUNS]...\n\n\
             For more information, try '--help'.\n"
        );
        // Globals conflict wherever they were given.
        assert!(
            err(&["bench", "disk", "--no-store", "--db", "x"])
                .text
                .starts_with(
                    "error: the argument '--no-store' cannot be used with '--db <PATH>'\n"
                )
        );
    }
}
