//! A lossless smb.conf document: every byte of the input is kept, so that
//! `to_string()` gives the file back unchanged, and edits touch only the lines
//! they change. Samba's own rules (lib/util/params.c): comments are whole lines
//! starting with `#` or `;`, a `\` at the end of a line continues it, a value
//! runs to the end of the (logical) line, and there are no inline comments.

use std::fmt;

use super::params::{canonical_name, is_inverse_synonym};

/// One logical line: one or more physical lines joined by `\` continuations.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The exact bytes, including every line terminator.
    raw: String,
    /// 1-based number of the first physical line.
    pub number: usize,
    pub kind: LineKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LineKind {
    Blank,
    Comment,
    /// `[name]`; `name` is trimmed.
    Section {
        name: String,
    },
    /// `key = value`; both trimmed, continuations joined with one space.
    Param {
        key: String,
        value: String,
    },
    /// Something Samba would skip with a warning.
    Invalid {
        reason: String,
    },
}

impl Line {
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Canonical parameter name, when this is a parameter line.
    pub fn canonical(&self) -> Option<String> {
        match &self.kind {
            LineKind::Param { key, .. } => Some(canonical_name(key).0),
            _ => None,
        }
    }
}

/// A parsed smb.conf that can be edited and written back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Document {
    lines: Vec<Line>,
}

/// The logical lines of a text, one at a time: reading a configuration needs
/// only the current line, and a 4 MiB file held as [`Line`]s takes some 70 MiB.
pub fn logical_lines(text: &str) -> impl Iterator<Item = Line> + '_ {
    let mut physical = split_keep_terminators(text).peekable();
    let mut number = 0;
    std::iter::from_fn(move || {
        let first = physical.next()?;
        number += 1;
        let start = number;
        let mut raw = first.to_string();
        let body = strip_terminator(first);
        let trimmed = body.trim_start();
        let is_comment = trimmed.starts_with('#') || trimmed.starts_with(';');
        let mut content = String::new();
        if is_comment || trimmed.is_empty() {
            content.push_str(body);
        } else {
            // Join continuation lines: `\` as the last character of the line.
            let mut current = body;
            loop {
                match current.strip_suffix('\\') {
                    Some(head) if physical.peek().is_some() => {
                        content.push_str(head.trim_end());
                        content.push(' ');
                        let Some(next) = physical.next() else { break };
                        number += 1;
                        raw.push_str(next);
                        current = strip_terminator(next).trim_start();
                    }
                    _ => {
                        content.push_str(current);
                        break;
                    }
                }
            }
        }
        Some(Line {
            raw,
            number: start,
            kind: classify(&content, is_comment),
        })
    })
}

impl Document {
    pub fn parse(text: &str) -> Document {
        Document {
            lines: logical_lines(text).collect(),
        }
    }

    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// The line terminator the file uses (`\r\n` if its first line has one).
    fn newline(&self) -> &'static str {
        match self.lines.first() {
            Some(l) if l.raw.ends_with("\r\n") => "\r\n",
            _ => "\n",
        }
    }

    /// Index ranges `[header, end)` of every occurrence of `section`; lines
    /// before the first header belong to `global`, as in Samba.
    fn section_ranges(&self, section: &str) -> Vec<(Option<usize>, usize, usize)> {
        let mut out = Vec::new();
        let mut current: Option<(Option<usize>, usize)> =
            same_section(section, "global").then_some((None, 0));
        for (i, line) in self.lines.iter().enumerate() {
            if let LineKind::Section { name } = &line.kind {
                if let Some((h, s)) = current.take() {
                    out.push((h, s, i));
                }
                if same_section(section, name) {
                    current = Some((Some(i), i + 1));
                }
            }
        }
        if let Some((h, s)) = current {
            out.push((h, s, self.lines.len()));
        }
        out
    }

    /// Indices of the parameter lines of `section` whose canonical name is
    /// `param`'s, in file order.
    fn find(&self, section: &str, param: &str) -> Vec<usize> {
        let want = canonical_name(param).0;
        self.section_ranges(section)
            .into_iter()
            .flat_map(|(_, s, e)| s..e)
            .filter(|&i| self.lines[i].canonical().as_deref() == Some(want.as_str()))
            .collect()
    }

    /// The effective value of `param` in `section` as written in this file (the
    /// last occurrence wins, as in Samba). Inverse synonyms are not folded here.
    pub fn get(&self, section: &str, param: &str) -> Option<&str> {
        match &self.last(section, param)?.kind {
            LineKind::Param { value, .. } => Some(value),
            _ => None,
        }
    }

    /// The line that sets `param` in `section` (the last one, which Samba uses).
    pub fn last(&self, section: &str, param: &str) -> Option<&Line> {
        let i = *self.find(section, param).last()?;
        self.lines.get(i)
    }

    /// Sets `param` in `section`: the last existing line is rewritten in place
    /// (indentation and spacing around `=` kept), otherwise a line is added after
    /// the section's last parameter, and a missing section is added at the end.
    pub fn set(&mut self, section: &str, param: &str, value: &str) -> Result<(), EditError> {
        for (what, text) in [("section", section), ("parameter", param), ("value", value)] {
            if text.contains(['\n', '\r']) || text.trim_end().ends_with('\\') {
                return Err(EditError::Unwritable {
                    what,
                    text: text.to_string(),
                });
            }
        }
        if param.contains('=') || section.contains([']', '[']) || param.trim().is_empty() {
            return Err(EditError::Unwritable {
                what: "name",
                text: format!("{section}/{param}"),
            });
        }
        let nl = self.newline();
        if let Some(&i) = self.find(section, param).last() {
            let line = &self.lines[i];
            let LineKind::Param { key, .. } = &line.kind else {
                return Ok(());
            };
            // An inverse synonym (`writeable` for `read only`) cannot keep its key.
            let key = if is_inverse_synonym(key, param) {
                param.to_string()
            } else {
                key.clone()
            };
            let first = strip_terminator(split_keep_terminators(&line.raw).next().unwrap_or(""));
            let indent = &first[..first.len() - first.trim_start().len()];
            let spacing = first
                .split_once('=')
                .map(|(k, v)| {
                    let before = &k[k.trim_end().len()..];
                    let after = &v[..v.len() - v.trim_start().len()];
                    format!("{before}={after}")
                })
                .unwrap_or_else(|| " = ".into());
            let terminator = terminator_of(&line.raw);
            let raw = format!("{indent}{key}{spacing}{value}{terminator}");
            self.lines[i] = Line {
                raw,
                number: line.number,
                kind: LineKind::Param {
                    key,
                    value: value.trim().to_string(),
                },
            };
            return Ok(());
        }
        let ranges = self.section_ranges(section);
        let Some(&(header, start, end)) = ranges.last().filter(|r| r.0.is_some() || r.2 > r.1)
        else {
            self.append_section(section, param, value, nl);
            return Ok(());
        };
        let params: Vec<usize> = (start..end)
            .filter(|&i| matches!(self.lines[i].kind, LineKind::Param { .. }))
            .collect();
        let (at, indent) = match params.last() {
            Some(&p) => {
                let raw = &self.lines[p].raw;
                (p + 1, raw[..raw.len() - raw.trim_start().len()].to_string())
            }
            None => (header.map(|h| h + 1).unwrap_or(start), "\t".to_string()),
        };
        self.ensure_terminated(at, nl);
        let number = self.lines.get(at).map(|l| l.number).unwrap_or(0);
        self.lines.insert(
            at,
            Line {
                raw: format!("{indent}{param} = {value}{nl}"),
                number,
                kind: LineKind::Param {
                    key: param.to_string(),
                    value: value.trim().to_string(),
                },
            },
        );
        Ok(())
    }

    /// Removes every line of `param` in `section`; returns how many.
    pub fn remove(&mut self, section: &str, param: &str) -> usize {
        let found = self.find(section, param);
        for &i in found.iter().rev() {
            let removed = self.lines.remove(i);
            // Keep a file without a final newline that way.
            if i == self.lines.len()
                && i > 0
                && terminator_of(&removed.raw).is_empty()
                && let Some(prev) = self.lines.last_mut()
            {
                let t = terminator_of(&prev.raw).len();
                prev.raw.truncate(prev.raw.len() - t);
            }
        }
        found.len()
    }

    /// Before inserting at `at`, the line before it must end with a newline. A
    /// last line ending in `\` would then continue into the inserted one, so it
    /// gets an empty line to continue into, which is what it had at end of file.
    fn ensure_terminated(&mut self, at: usize, nl: &str) {
        if at > 0
            && let Some(prev) = self.lines.get_mut(at - 1)
            && terminator_of(&prev.raw).is_empty()
        {
            prev.raw.push_str(nl);
            let continues =
                !matches!(prev.kind, LineKind::Comment) && prev.raw.trim_end().ends_with('\\');
            if continues {
                prev.raw.push_str(nl);
            }
        }
    }

    fn append_section(&mut self, section: &str, param: &str, value: &str, nl: &'static str) {
        let at = self.lines.len();
        self.ensure_terminated(at, nl);
        let number = self.lines.last().map(|l| l.number + 1).unwrap_or(1);
        if !self.lines.is_empty() {
            self.lines.push(Line {
                raw: nl.to_string(),
                number,
                kind: LineKind::Blank,
            });
        }
        self.lines.push(Line {
            raw: format!("[{section}]{nl}"),
            number,
            kind: LineKind::Section {
                name: section.to_string(),
            },
        });
        self.lines.push(Line {
            raw: format!("\t{param} = {value}{nl}"),
            number,
            kind: LineKind::Param {
                key: param.to_string(),
                value: value.trim().to_string(),
            },
        });
    }
}

impl fmt::Display for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            f.write_str(&line.raw)?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EditError {
    #[error(
        "cannot write {what} '{text}' into smb.conf: it must be one line, not end in '\\', and names cannot contain '=', '[' or ']'"
    )]
    Unwritable { what: &'static str, text: String },
}

/// Section names compare case-insensitively, as Samba's do.
pub fn same_section(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// The key under which [`same_section`] names are equal, for hashing.
pub fn section_key(name: &str) -> String {
    name.trim().to_ascii_lowercase()
}

fn classify(content: &str, is_comment: bool) -> LineKind {
    let t = content.trim();
    if t.is_empty() {
        return LineKind::Blank;
    }
    if is_comment {
        return LineKind::Comment;
    }
    if let Some(rest) = t.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((name, _)) if !name.trim().is_empty() => LineKind::Section {
                name: name.trim().to_string(),
            },
            Some(_) => LineKind::Invalid {
                reason: "empty section name".into(),
            },
            None => LineKind::Invalid {
                reason: format!("section header '{t}' has no closing ']'"),
            },
        };
    }
    match t.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => LineKind::Param {
            key: k.trim().to_string(),
            value: v.trim().to_string(),
        },
        Some(_) => LineKind::Invalid {
            reason: format!("'{t}' has no parameter name before '='"),
        },
        None => LineKind::Invalid {
            reason: format!("'{t}' is neither a section, a parameter nor a comment"),
        },
    }
}

/// Physical lines with their terminators (`\n`, `\r\n`); the last may have none.
fn split_keep_terminators(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
}

fn terminator_of(raw: &str) -> &str {
    if raw.ends_with("\r\n") {
        "\r\n"
    } else if raw.ends_with('\n') {
        "\n"
    } else {
        ""
    }
}

fn strip_terminator(line: &str) -> &str {
    &line[..line.len() - terminator_of(line).len()]
}
