//! Decoding JSON straight into a type, naming where it failed, and encoding
//! every JSON nastune writes (`--json`, `history export`, stored documents,
//! captures). At the bottom of the module graph: stored documents and captured
//! trees (root) both use it.

use std::io;

use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// `text` decoded into `T` without a `serde_json::Value` tree of it (10 to 30
/// times the text's size); the error names the path of the bad value
/// (`findings[2].severity: unknown variant …`).
pub fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// `value` as compact JSON (one line), with DEL and the C1 controls escaped
/// (see [`Escaping`]).
pub fn to_string<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    encode(value, Escaping(CompactFormatter))
}

/// `value` in serde_json's pretty layout (two-space indent), with DEL and the
/// C1 controls escaped (see [`Escaping`]).
pub fn to_string_pretty<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    encode(value, Escaping(PrettyFormatter::new()))
}

/// `value` in the pretty layout of [`to_string_pretty`], written into `w` as
/// it is serialized (a document as large as its store, `history export`).
pub fn to_writer_pretty<W: io::Write, T: serde::Serialize + ?Sized>(
    w: W,
    value: &T,
) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(
        w,
        Escaping(PrettyFormatter::new()),
    ))
}

/// A compact serializer into `w` with DEL and C1 escaped, for what is
/// written straight from a parser (`history import` transcodes so).
pub fn serializer<W: io::Write>(w: W) -> serde_json::Serializer<W, Escaping<CompactFormatter>> {
    serde_json::Serializer::with_formatter(w, Escaping(CompactFormatter))
}

fn encode<T: serde::Serialize + ?Sized, F: Formatter>(
    value: &T,
    formatter: F,
) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(128);
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out, formatter,
    ))?;
    // serde_json writes UTF-8 only, and the escapes are ASCII.
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// A formatter that writes DEL (U+007F) and the C1 controls (U+0080–U+009F)
/// as `\u007f` … `\u009f`. JSON allows them raw, and serde_json writes them
/// so, but a terminal acts on C1: U+009B is CSI, the one-byte ESC [, so a
/// smb.conf comment or an imported run's command could clear the screen of
/// whoever runs `nastune probe --json` in one. Raw fragments (the stored
/// documents `history export` copies) get the same: in JSON text these
/// characters can only be inside strings, where the escape means the same.
pub struct Escaping<F>(pub F);

/// Writes `text` with DEL and C1 escaped, the rest as it is.
fn write_escaped<W: ?Sized + io::Write>(w: &mut W, text: &str) -> io::Result<()> {
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) {
            w.write_all(&text.as_bytes()[start..i])?;
            write!(w, "\\u{:04x}", c as u32)?;
            start = i + c.len_utf8();
        }
    }
    w.write_all(&text.as_bytes()[start..])
}

impl<F: Formatter> Formatter for Escaping<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        write_escaped(w, fragment)
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        write_escaped(w, fragment)
    }

    // The layout is the inner formatter's: these are the methods
    // PrettyFormatter overrides (CompactFormatter overrides none).
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn del_and_c1_are_escaped_and_read_back_the_same() {
        let text = "a\u{7f}b\u{80}c\u{9b}2J\u{9f}\u{a0}é\u{1b}[0m\n";
        let value = serde_json::json!({ "s": text, "list": [text] });
        for out in [
            to_string(&value).unwrap(),
            to_string_pretty(&value).unwrap(),
        ] {
            // U+00A0 (no-break space) is not a control: it stays.
            let want = "a\\u007fb\\u0080c\\u009b2J\\u009f\u{a0}é\\u001b[0m\\n";
            assert!(out.contains(want), "{out}");
            for c in ['\u{7f}', '\u{80}', '\u{9b}', '\u{9f}'] {
                assert!(!out.contains(c), "{c:?} raw in {out}");
            }
            let back: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(back, value);
        }
        // The layout is serde_json's own.
        assert_eq!(
            to_string_pretty(&serde_json::json!({"a": [1, {}], "b": []})).unwrap(),
            serde_json::to_string_pretty(&serde_json::json!({"a": [1, {}], "b": []})).unwrap()
        );
        assert_eq!(to_string(&value).unwrap().lines().count(), 1);
    }

    #[test]
    fn raw_fragments_are_escaped_too() {
        let raw =
            serde_json::value::RawValue::from_string("{\"x\":\"\u{9b}\u{7f}\"}".into()).unwrap();
        let out = to_string(&raw).unwrap();
        assert_eq!(out, r#"{"x":"\u009b\u007f"}"#);
    }
}
