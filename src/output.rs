//! Writing results to stdout. A closed pipe (`nastune probe | head`) is not an
//! error: main turns it into a quiet exit.

use std::io::{self, Write};

pub fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// What `serde_json::to_string_pretty` would write, byte for byte, re-indented
/// from the compact encoding: one encoder per type (crate::json), not one per
/// layout (issue 22: binary size).
pub fn to_json_pretty<T: crate::json::Encode + ?Sized>(value: &T) -> String {
    reindent(&crate::json::to_string(value))
}

/// Lays out compact JSON (no whitespace outside strings) the way serde_json's
/// PrettyFormatter does: two-space indent, `": "`, empty `{}` and `[]` kept on one line.
fn reindent(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len() + compact.len() / 2);
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    let mut chars = compact.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                let close = if c == '{' { '}' } else { ']' };
                if chars.next_if_eq(&close).is_some() {
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            _ => out.push(c),
        }
    }
    out
}

/// True when the error chain ends in a broken pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_json_is_serde_jsons_pretty_json() {
        let v = serde_json::json!({
            "a": [],
            "b": {},
            "s": "quote \" brace { colon : comma , back \\ tab\t é",
            "n": [1, -2.5, 1e300, null, true],
            "nested": {"x": [{"y": [[]]}, {}], "z": "]"},
        });
        assert_eq!(
            to_json_pretty(&v),
            serde_json::to_string_pretty(&v).unwrap()
        );
        for scalar in [
            serde_json::json!(3),
            serde_json::json!("x"),
            serde_json::json!([]),
        ] {
            assert_eq!(
                to_json_pretty(&scalar),
                serde_json::to_string_pretty(&scalar).unwrap()
            );
        }
        let snap = crate::advise::test_support::snapshot_of("pogoplug-v4");
        let snap = crate::json::to_value(&snap);
        assert_eq!(
            to_json_pretty(&snap),
            serde_json::to_string_pretty(&snap).unwrap()
        );
    }
}
