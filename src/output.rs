//! Writing results to stdout, and messages to stderr. A closed pipe
//! (`nastune probe | head`) is not an error: main turns it into a quiet exit.
//! A closed stderr is not one either: messages go through [`note`], which
//! drops what cannot be written (eprintln! panics on EPIPE, and the panic
//! message then failed too: `nastune advise 2>&1 | head -c1` aborted, exit 134).

use std::io::{self, Write};

pub fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// Writes human text (a report, a table, a log line) on stdout. Its fields
/// came from trees, servers and imported runs, so every control character but
/// the layout's line breaks and tabs is shown escaped
/// ([`shown_text`](crate::report::format::shown_text)). JSON, which escapes
/// its own, and files meant to be redirected go through [`write_stdout`].
pub fn write_text(text: &str) -> io::Result<()> {
    write_coloured(text, false)
}

/// A command's result: JSON as it is (its encoder, [`crate::json`], escapes
/// the control characters, DEL and C1, and escaping more would break it),
/// text through [`write_text`].
pub fn write_result(out: &str, json: bool) -> io::Result<()> {
    if json {
        write_stdout(out.as_bytes())
    } else {
        write_text(out)
    }
}

/// [`write_text`] for text that colours its verdicts: with `colour` (a
/// terminal, no NO_COLOR) their SGR sequences stay.
pub fn write_coloured(text: &str, colour: bool) -> io::Result<()> {
    write_stdout(crate::report::format::shown_text(text, colour).as_bytes())
}

/// Writes one line on stderr (see [`note!`](crate::note)), its control
/// characters escaped but for the line breaks the message itself has: an
/// error may quote a file name or a reply from outside.
pub fn note(args: std::fmt::Arguments) {
    let mut text = args.to_string();
    text.push('\n');
    write_stderr(&text);
}

/// Writes `args` on stderr without a line break, for a question whose answer
/// is typed on the same line.
pub fn prompt(args: std::fmt::Arguments) {
    write_stderr(&args.to_string());
}

fn write_stderr(text: &str) {
    let mut shown = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            shown.push('\n');
        }
        shown.push_str(&crate::report::format::shown(line));
    }
    let mut err = io::stderr().lock();
    // Nothing to do when stderr is closed or full: the exit code still tells.
    let _ = err.write_all(shown.as_bytes()).and_then(|()| err.flush());
}

/// `eprintln!` that cannot panic: a closed stderr loses the message, not the run.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::output::note(format_args!($($arg)*))
    };
}

/// `value` as every `--json` prints it: serde_json's pretty layout (two-space
/// indent, `": "`, empty `{}` and `[]` on one line), DEL and C1 escaped
/// ([`crate::json::Escaping`]), and a final newline.
pub fn json_line<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut s = crate::json::to_string_pretty(value)?;
    s.push('\n');
    Ok(s)
}

/// Writes `value` on stdout as [`json_line`] makes it, serialized straight
/// into the pipe rather than into one string first: for a document as large
/// as its store (`history export`), whose text would otherwise be held whole.
/// A write error comes back as itself, so a closed pipe is still seen as one.
pub fn write_json<T: serde::Serialize + ?Sized>(value: &T) -> io::Result<()> {
    // stdout flushes each line, and a pretty document's lines are some 30
    // bytes long: gathered here, the pipe takes one write per 64 KiB.
    let mut out = io::BufWriter::with_capacity(64 << 10, io::stdout().lock());
    crate::json::to_writer_pretty(&mut out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// True when the error chain ends in a broken pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
