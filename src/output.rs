//! Writing results to stdout. A closed pipe (`nastune probe | head`) is not an
//! error: main turns it into a quiet exit.

use std::io::{self, Write};

pub fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// `value` as every `--json` prints it: serde_json's pretty layout (two-space
/// indent, `": "`, empty `{}` and `[]` on one line) and a final newline.
pub fn json_line<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut s = serde_json::to_string_pretty(value)?;
    s.push('\n');
    Ok(s)
}

/// True when the error chain ends in a broken pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
