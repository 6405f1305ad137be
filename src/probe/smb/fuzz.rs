//! One entry point for everything an smb.conf (and the files it includes) can
//! make us parse, for the cargo-fuzz target in fuzz/ and for the random-input
//! test below. It must never panic, whatever the bytes, and the document must
//! stay lossless.

use std::path::PathBuf;

use super::document::Document;
use super::resolve;
use crate::root::ReadError;

/// Feeds `data` to the parser the way probe and tune read Samba's configuration.
/// NUL bytes separate files: the first is smb.conf, the others are what its
/// `include =` lines read, in order (one past the last is missing). Bytes that
/// are not UTF-8 are replaced, as a file that is not text never reaches the parser.
pub fn smb_conf(data: &[u8]) {
    let (main, _) = resolve_files(data);
    let doc = Document::parse(&main);
    assert_eq!(doc.to_string(), main, "parsing must keep every byte");
    // tune's edits: setting is read back, also after writing and parsing again;
    // removing leaves nothing.
    let mut edited = doc.clone();
    if edited.set("share", "read only", "no").is_ok() {
        assert_eq!(
            edited.get("share", "readonly").as_deref(),
            Some("no"),
            "{main:?}"
        );
        let again = Document::parse(&edited.to_string());
        assert_eq!(
            again.get("share", "read only").as_deref(),
            Some("no"),
            "{main:?}"
        );
    }
    edited.remove("share", "read only");
    assert_eq!(edited.get("share", "read only"), None, "{main:?}");
    for line in doc.lines() {
        let _ = line.canonical();
    }
}

/// The main text of `data` and the configuration resolved from it (see [`smb_conf`]).
fn resolve_files(data: &[u8]) -> (String, super::Samba) {
    let mut files = data.split(|&b| b == 0).map(String::from_utf8_lossy);
    let main = files.next().unwrap_or_default().into_owned();
    let samba = resolve(&main, |rel| match files.next() {
        Some(text) => Ok(text.into_owned()),
        None => Err(ReadError::NotFound {
            path: PathBuf::from(rel),
        }),
    });
    (main, samba)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::disk::buffers::Rng;

    /// Pieces that mean something to the parser, so that random sequences of
    /// them reach its corners more often than random bytes do.
    const PIECES: &[&[u8]] = &[
        b"[",
        b"]",
        b"=",
        b"\\",
        b"\n",
        b"\r\n",
        b"\r",
        b"#",
        b";",
        b" ",
        b"\t",
        b"\0",
        b"global",
        b"share",
        b"read only",
        b"writeable",
        b"include",
        b"config file",
        b"yes",
        b"%m",
        b"../",
        b"/srv",
        b"\xc3\xa9",
        b"\xff",
    ];

    #[test]
    fn random_and_mutated_smb_conf_never_panics() {
        let seed = include_bytes!("../../../tests/fixtures/smb/debian.smb.conf");
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut pick = |n: usize| (rng.next_u64() % n as u64) as usize;
        for round in 0..3000 {
            // A real file with a few changes: a byte replaced, cut, or a piece inserted.
            let mut data = seed.to_vec();
            for _ in 0..pick(6) {
                let at = pick(data.len() + 1);
                match pick(3) {
                    0 if at < data.len() => data[at] = pick(256) as u8,
                    1 => data.truncate(at),
                    _ => {
                        let piece = PIECES[pick(PIECES.len())];
                        data.splice(at..at, piece.iter().copied());
                    }
                }
            }
            smb_conf(&data);
            // And a sequence of pieces.
            let pieces: Vec<u8> = (0..(round % 80))
                .flat_map(|_| PIECES[pick(PIECES.len())].iter().copied())
                .collect();
            smb_conf(&pieces);
        }
    }

    #[test]
    fn later_files_are_what_includes_read() {
        let data = b"[global]\ninclude = /etc/samba/a.conf\n\0[share]\npath = /srv\n";
        let (main, s) = resolve_files(data);
        assert_eq!(main, "[global]\ninclude = /etc/samba/a.conf\n");
        assert_eq!(s.includes[0].status, "read", "{s:?}");
        assert_eq!(s.shares[0].path.as_deref(), Some("/srv"));
        // One include more than there are files: missing, not a panic.
        let (_, s) = resolve_files(b"include = x\n\0include = y\n");
        assert_eq!(s.includes[1].status, "missing", "{s:?}");
    }
}
