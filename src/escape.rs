//! Text from outside nastune made safe for a terminal. At the bottom of the
//! module graph: the progress bar and stderr notes use it as well as the reports.

use std::borrow::Cow;
use std::fmt::Write;

/// Text from outside nastune (an imported run, a captured tree, a server's
/// reply) made safe to print on a terminal: every control character is
/// written as an escape (`\x1b`, `\n`, `\u{9b}`), so ESC [2J cannot clear the
/// screen, OSC 52 cannot set the clipboard, and a newline cannot forge a line
/// of the report. Text without control characters is returned as it is.
pub fn shown(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_shown(&mut out, c);
    }
    Cow::Owned(out)
}

/// A whole rendered text made safe to print, the last guard behind [`shown`]
/// on each field: every control character is escaped as by `shown` but the
/// layout's line breaks and tabs, and, with `colour`, the SGR sequences that
/// colour a verdict (ESC [ 1;31 m). A field a renderer forgot to pass through
/// `shown` can then at worst forge a line, never clear the screen (ESC [2J),
/// retitle the window (OSC 0) or set the clipboard (OSC 52).
pub fn shown_text(s: &str, colour: bool) -> Cow<'_, str> {
    let layout = |c: char| c == '\n' || c == '\t';
    if !s.chars().any(|c| c.is_control() && !layout(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if colour && c == '\x1b' {
            let sgr = sgr_len(rest);
            if sgr > 0 {
                out.push_str(&rest[..sgr]);
                rest = &rest[sgr..];
                continue;
            }
        }
        if layout(c) {
            out.push(c);
        } else {
            push_shown(&mut out, c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// The length of the SGR sequence `ESC [ digits and ; m` that `s` starts
/// with, 0 when it starts with anything else.
fn sgr_len(s: &str) -> usize {
    let Some(params) = s.strip_prefix("\x1b[") else {
        return 0;
    };
    let n = params
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    if params.as_bytes().get(n) == Some(&b'm') {
        2 + n + 1
    } else {
        0
    }
}

fn push_shown(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 && c.is_control() => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if c.is_control() => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_from_outside_are_shown_escaped() {
        assert!(matches!(shown("nastune probe --root /x"), Cow::Borrowed(_)));
        assert_eq!(shown("é ü 日本"), "é ü 日本");
        // Clear screen, set the title (OSC 0), set the clipboard (OSC 52).
        assert_eq!(shown("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(shown("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
        assert_eq!(
            shown("\x1b]52;c;cHduZWQ=\x1b\\"),
            "\\x1b]52;c;cHduZWQ=\\x1b\\"
        );
        assert_eq!(shown("1\n2\r3\t4\x7f"), "1\\n2\\r3\\t4\\x7f");
        // C1 controls: CSI (U+009B) acts like ESC [ on some terminals.
        assert_eq!(shown("\u{9b}2J"), "\\u{9b}2J");
    }

    #[test]
    fn rendered_text_keeps_its_layout_and_only_its_colour() {
        let text = "host\tx\n  model a\x1b[2Jb\x1b]52;c;eA==\x07\n\u{9b}1m";
        assert_eq!(
            shown_text(text, false),
            "host\tx\n  model a\\x1b[2Jb\\x1b]52;c;eA==\\x07\n\\u{9b}1m"
        );
        assert!(matches!(shown_text("a\tb\nc", false), Cow::Borrowed(_)));
        // Colour on a terminal: SGR stays, any other escape does not.
        let painted = "\x1b[1;31mALERT\x1b[0m \x1b[2J \x1b[31";
        assert_eq!(
            shown_text(painted, true),
            "\x1b[1;31mALERT\x1b[0m \\x1b[2J \\x1b[31"
        );
        assert_eq!(
            shown_text(painted, false),
            "\\x1b[1;31mALERT\\x1b[0m \\x1b[2J \\x1b[31"
        );
    }
}
