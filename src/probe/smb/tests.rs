use std::collections::BTreeMap;

use super::document::{Document, LineKind};
use super::*;
use crate::root::ReadError;

const DEBIAN: &str = include_str!("../../../tests/fixtures/smb/debian.smb.conf");

fn param<'a>(params: &'a [SmbParam], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.value.as_str())
}

fn no_includes(rel: &str) -> Result<String, ReadError> {
    Err(ReadError::NotFound { path: rel.into() })
}

#[test]
fn debian_default_round_trips_byte_for_byte() {
    let doc = Document::parse(DEBIAN);
    assert_eq!(doc.to_string(), DEBIAN);
    let comments = doc.lines().filter(|l| l.kind == LineKind::Comment).count();
    assert!(comments > 50, "{comments}");
}

/// Debian's stock configuration serves no files (a print queue on /var/tmp
/// and the printer drivers); a share added to it does, unless switched off,
/// and `[global]` sets the default a share can override.
#[test]
fn file_shares_leave_out_print_queues_drivers_and_switched_off_shares() {
    let names = |text: &str| -> Vec<String> {
        resolve(text, no_includes)
            .file_shares()
            .map(|s| s.name.clone())
            .collect()
    };
    assert!(names(DEBIAN).is_empty(), "{:?}", names(DEBIAN));
    let more = format!(
        "{DEBIAN}\n[data]\n path = /srv/data\n[off]\n path = /srv/off\n available = no\n\
         [queue]\n path = /srv/q\n print ok = yes\n"
    );
    assert_eq!(names(&more), ["data"]);
    let all_off =
        "[global]\n available = no\n[data]\n path = /d\n[on]\n path = /o\n available = yes\n";
    assert_eq!(names(all_off), ["on"]);
}

#[test]
fn debian_default_semantic_view() {
    let s = resolve(DEBIAN, no_includes);
    assert_eq!(s.files_read, vec!["/etc/samba/smb.conf"]);
    assert_eq!(param(&s.global, "workgroup"), Some("WORKGROUP"));
    assert_eq!(param(&s.global, "map to guest"), Some("bad user"));
    assert!(
        param(&s.global, "passwd chat")
            .unwrap()
            .ends_with("successfully* .")
    );
    let names: Vec<&str> = s.shares.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["printers", "print$"]);
    assert_eq!(s.shares[1].path.as_deref(), Some("/var/lib/samba/printers"));
    // Commented-out `;[homes]` and `;   include` are comments, not settings.
    assert!(s.includes.is_empty());
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    let wg = s.global.iter().find(|p| p.name == "workgroup").unwrap();
    assert_eq!(wg.line, 29);
}

#[test]
fn nasty_input_round_trips() {
    let inputs = [
        "[global]\r\n\tworkgroup = HOME\r\n; comment\r\n\r\n[data]\r\n path=/srv\r\n",
        "no section = here\n[global]\nsocket options = TCP_NODELAY \\\n    SO_RCVBUF=8192 \\\n\tSO_SNDBUF=8192\n[x]\nread only = no\nread only = yes",
        "[ünïcode share]\n  comment = Fotos für Oma 📷\n  path = /srv/fotos\n",
        "   \n\t\n[global]\n   \tworkgroup   =   SPACED   \n[broken\n=novalue\njunk line\n",
        "[a]\nkey = trailing backslash at end of file \\",
        "",
        "\n",
        "[global]\n# comment ending in backslash \\\nworkgroup = W\n",
    ];
    for input in inputs {
        assert_eq!(Document::parse(input).to_string(), input, "{input:?}");
    }
}

#[test]
fn continuation_lines_join_into_one_value() {
    let text = "[global]\nsocket options = TCP_NODELAY \\\n    SO_RCVBUF=8192 \\\n\tSO_SNDBUF=8192\nworkgroup = W\n";
    let s = resolve(text, no_includes);
    assert_eq!(
        param(&s.global, "socket options"),
        Some("TCP_NODELAY SO_RCVBUF=8192 SO_SNDBUF=8192")
    );
    let wg = s.global.iter().find(|p| p.name == "workgroup").unwrap();
    assert_eq!(wg.line, 5, "line numbers count physical lines");
    // A comment ending in a backslash does not swallow the next line.
    let s = resolve("[global]\n# note \\\nworkgroup = W\n", no_includes);
    assert_eq!(param(&s.global, "workgroup"), Some("W"));
}

#[test]
fn names_merge_synonyms_and_repeated_sections() {
    let text = "\
workgroup = EARLY
[Data]
  Read Only = yes
  directory = /srv/data
[global]
  max protocol = SMB2
[data]
  writeable = yes
";
    let s = resolve(text, no_includes);
    assert_eq!(param(&s.global, "workgroup"), Some("EARLY"));
    assert_eq!(param(&s.global, "server max protocol"), Some("SMB2"));
    assert_eq!(s.shares.len(), 1, "[Data] and [data] are one share");
    let data = &s.shares[0];
    assert_eq!(data.path.as_deref(), Some("/srv/data"));
    let ro = data.params.iter().find(|p| p.name == "read only").unwrap();
    assert_eq!(ro.value, "no", "writeable = yes means read only = no");
    assert_eq!(ro.written_as.as_deref(), Some("writeable"));
    assert_eq!(ro.line, 8);
    let msgs: Vec<&str> = s.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(
        msgs.iter().any(|m| m.contains("before any section")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.contains("set again")), "{msgs:?}");
}

#[test]
fn invalid_lines_are_reported_with_line_numbers() {
    let s = resolve("[global]\nworkgroup = W\njunk\n[broken\n", no_includes);
    let lines: Vec<usize> = s.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![3, 4]);
    assert!(s.problems[0].message.contains("'junk'"));
}

#[test]
fn includes_followed_loops_missing_and_macros_reported() {
    let mut files = BTreeMap::new();
    files.insert(
        "etc/samba/shares.conf",
        "[media]\npath = /srv/media\ninclude = /etc/samba/smb.conf\ninclude = more.conf\n",
    );
    files.insert("etc/samba/more.conf", "guest ok = yes\n");
    let main = "[global]\ninclude = shares.conf\ninclude = /etc/samba/missing.conf\ninclude = /etc/samba/%m.conf\nworkgroup = W\n";
    let s = resolve(main, |rel| {
        files
            .get(rel)
            .map(|t| t.to_string())
            .ok_or(ReadError::NotFound { path: rel.into() })
    });
    let statuses: Vec<(&str, &str)> = s
        .includes
        .iter()
        .map(|i| (i.target.as_str(), i.status.as_str()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("shares.conf", "read"),
            ("/etc/samba/smb.conf", "loop"),
            ("more.conf", "read"),
            ("/etc/samba/missing.conf", "missing"),
            ("/etc/samba/%m.conf", "macro"),
        ]
    );
    assert_eq!(
        s.files_read,
        vec![
            "/etc/samba/smb.conf",
            "/etc/samba/shares.conf",
            "/etc/samba/more.conf"
        ]
    );
    // The included file's section stays current, as in Samba.
    assert_eq!(s.shares[0].name, "media");
    assert_eq!(param(&s.shares[0].params, "guest ok"), Some("yes"));
    assert_eq!(param(&s.shares[0].params, "workgroup"), Some("W"));
    assert!(
        s.problems
            .iter()
            .any(|p| p.message.contains("includes itself"))
    );
    assert!(
        s.problems
            .iter()
            .any(|p| p.file == "/etc/samba/smb.conf" && p.line == 3)
    );
}

#[test]
fn set_replaces_in_place_keeping_everything_else() {
    let mut doc = Document::parse(DEBIAN);
    doc.set("global", "Max Log Size", "50").unwrap();
    let out = doc.to_string();
    assert!(
        out.contains("\n   max log size = 50\n"),
        "indent and key kept"
    );
    let changed: Vec<(&str, &str)> = DEBIAN
        .lines()
        .zip(out.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        changed,
        vec![("   max log size = 1000", "   max log size = 50")]
    );
    assert_eq!(doc.get("global", "maxlogsize").as_deref(), Some("50"));
}

#[test]
fn set_appends_to_section_or_adds_section() {
    let mut doc = Document::parse(DEBIAN);
    doc.set("printers", "use sendfile", "yes").unwrap();
    doc.set("media", "path", "/srv/media").unwrap();
    let out = doc.to_string();
    assert!(
        out.contains("   create mask = 0700\n   use sendfile = yes\n\n# Windows clients"),
        "{out}"
    );
    assert!(out.ends_with(";   write list = root, @lpadmin\n\n[media]\n\tpath = /srv/media\n"));
    // Everything before the first edit is untouched.
    let first = out.find("   use sendfile").unwrap();
    assert_eq!(&out[..first], &DEBIAN[..first]);
    let s = resolve(&out, no_includes);
    assert_eq!(s.shares.last().unwrap().path.as_deref(), Some("/srv/media"));
}

#[test]
fn edits_keep_crlf_spacing_and_missing_final_newline() {
    let mut doc = Document::parse("[global]\r\n\tworkgroup=OLD\r\n[data]\r\n path = /srv");
    doc.set("global", "workgroup", "NEW").unwrap();
    doc.set("data", "read only", "no").unwrap();
    assert_eq!(
        doc.to_string(),
        "[global]\r\n\tworkgroup=NEW\r\n[data]\r\n path = /srv\r\n read only = no\r\n"
    );
    assert_eq!(doc.remove("data", "readonly"), 1);
    assert_eq!(
        doc.to_string(),
        "[global]\r\n\tworkgroup=NEW\r\n[data]\r\n path = /srv\r\n"
    );
    // Removing the unterminated last line leaves the file unterminated.
    let mut doc = Document::parse("[a]\nx = 1\ny = 2");
    assert_eq!(doc.remove("a", "y"), 1);
    assert_eq!(doc.to_string(), "[a]\nx = 1");
}

#[test]
fn set_on_a_continued_line_and_inverse_synonym() {
    let mut doc = Document::parse(
        "[global]\n  socket options = TCP_NODELAY \\\n     SO_RCVBUF=8192\n[s]\n  writable = yes\n",
    );
    doc.set("global", "socket options", "TCP_NODELAY").unwrap();
    doc.set("s", "read only", "yes").unwrap();
    assert_eq!(
        doc.to_string(),
        "[global]\n  socket options = TCP_NODELAY\n[s]\n  read only = yes\n"
    );
}

#[test]
fn remove_takes_every_duplicate_in_every_copy_of_the_section() {
    let text = "# top\n[x]\nread raw = no\n; keep\n[y]\nread raw = no\n[X]\nReadRaw = yes\n";
    let mut doc = Document::parse(text);
    assert_eq!(doc.remove("x", "read raw"), 2);
    assert_eq!(
        doc.to_string(),
        "# top\n[x]\n; keep\n[y]\nread raw = no\n[X]\n"
    );
    assert_eq!(doc.remove("x", "read raw"), 0);
}

#[test]
fn global_params_before_any_header_can_be_edited() {
    let mut doc = Document::parse("workgroup = A\n[s]\npath = /s\n");
    doc.set("global", "workgroup", "B").unwrap();
    doc.set("global", "deadtime", "15").unwrap();
    assert_eq!(
        doc.to_string(),
        "workgroup = B\ndeadtime = 15\n[s]\npath = /s\n"
    );
}

/// Deterministic pseudo-random smb.conf-like text from tricky pieces.
fn random_text(seed: &mut u64, len: usize) -> String {
    const PIECES: &[&str] = &[
        "[",
        "]",
        "=",
        "\\",
        "\n",
        "\r\n",
        "\r",
        "#",
        ";",
        " ",
        "\t",
        "global",
        "share",
        "read only",
        "writeable",
        "include",
        "yes",
        "é",
        "📷",
        "%m",
        "/srv",
        "\u{0}",
    ];
    let mut out = String::new();
    for _ in 0..len {
        // xorshift64
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        out.push_str(PIECES[(*seed % PIECES.len() as u64) as usize]);
    }
    out
}

#[test]
fn random_input_round_trips_and_edits_touch_only_their_lines() {
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    for round in 0..2000 {
        let text = random_text(&mut seed, (round % 60) + 1);
        let doc = Document::parse(&text);
        assert_eq!(doc.to_string(), text, "{text:?}");
        let _ = resolve(&text, no_includes);

        let mut edited = doc.clone();
        edited.set("share", "read only", "no").unwrap();
        assert_eq!(
            edited.get("share", "readonly").as_deref(),
            Some("no"),
            "{text:?}"
        );
        let again = Document::parse(&edited.to_string());
        assert_eq!(
            again.get("share", "read only").as_deref(),
            Some("no"),
            "{text:?}"
        );
        let removed = edited.remove("share", "read only");
        assert!(removed >= 1, "{text:?}");
        assert_eq!(edited.get("share", "read only"), None, "{text:?}");
    }
}

#[test]
fn edits_refuse_unwritable_text_and_respect_a_final_backslash() {
    let mut doc = Document::parse("[s]\na = b \\");
    doc.set("s", "read only", "no").unwrap();
    let again = Document::parse(&doc.to_string());
    assert_eq!(again.get("s", "a").as_deref(), Some("b"));
    assert_eq!(again.get("s", "read only").as_deref(), Some("no"));
    for (section, param, value) in [
        ("s", "x", "two\nlines"),
        ("s", "x", "ends in \\"),
        ("s", "x = y", "v"),
        ("a]b", "x", "v"),
        ("s", " ", "v"),
    ] {
        let before = doc.to_string();
        let e = doc.set(section, param, value).unwrap_err();
        assert!(e.to_string().contains("cannot write"), "{e}");
        assert_eq!(doc.to_string(), before);
    }
}

#[test]
fn include_fan_out_and_depth_are_bounded() {
    // Every file includes the next one twice: 2^20 reads without a limit.
    let s = resolve("include = f1\n", |rel| {
        let n: u32 = rel.trim_start_matches("etc/samba/f").parse().unwrap();
        Ok(format!("include = f{}\ninclude = f{}\n", n + 1, n + 1))
    });
    assert!(s.files_read.len() <= 64, "{}", s.files_read.len());
    assert!(
        s.includes
            .iter()
            .any(|i| i.status == "too_deep" || i.status == "too_many")
    );
}

#[test]
fn includes_that_climb_out_of_a_tree_read_only_inside_it() {
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("in");
    std::fs::create_dir_all(tree.join("etc/samba")).unwrap();
    let secret = "[global]\n  server string = TOPSECRET\n";
    std::fs::write(t.path().join("outside.conf"), secret).unwrap();
    std::fs::write(
        tree.join("etc/samba/smb.conf"),
        format!(
            "[global]\ninclude = ../../../outside.conf\ninclude = {}/outside.conf\n\
             include = ../../../inside.conf\n",
            t.path().display()
        ),
    )
    .unwrap();
    // Where `../` clamps to at the tree's top: read, as Samba in a chroot would.
    std::fs::write(tree.join("inside.conf"), "workgroup = CLAMPED\n").unwrap();
    let samba = read_samba(&Root::tree(&tree).unwrap()).unwrap().unwrap();
    let text = format!("{samba:?}");
    assert!(!text.contains("TOPSECRET"), "{text}");
    let status: Vec<&str> = samba.includes.iter().map(|i| i.status.as_str()).collect();
    assert_eq!(status, ["missing", "missing", "read"]);
    assert_eq!(param(&samba.global, "workgroup"), Some("CLAMPED"));
}

#[test]
fn a_running_smbd_names_its_configuration() {
    use super::config_of_cmdline;
    let c = |s: &str| config_of_cmdline(s.replace(' ', "\0").as_bytes());
    assert_eq!(
        c("smbd --foreground --no-process-group -s /tmp/x/smb.conf"),
        Some("/tmp/x/smb.conf".into())
    );
    assert_eq!(
        c("/usr/sbin/smbd --configfile=/etc/alt.conf"),
        Some("/etc/alt.conf".into())
    );
    assert_eq!(
        c("smbd --configfile /srv/s.conf -D"),
        Some("/srv/s.conf".into())
    );
    assert_eq!(c("smbd -D"), None);
}

#[test]
fn included_text_is_bounded_and_the_cap_is_reported() {
    // 1 MiB per file: four fit in MAX_INCLUDED_BYTES, the fifth does not.
    let big = format!("[big]\ncomment = {}\n", "x".repeat((1 << 20) - 24));
    assert!(big.len() <= 1 << 20);
    let main = "[global]\n".to_string() + &"include = big.conf\n".repeat(100);
    let mut loads = 0;
    let s = resolve(&main, |_| {
        loads += 1;
        Ok(big.clone())
    });
    let read = s.includes.iter().filter(|i| i.status == "read").count();
    assert_eq!(read, MAX_INCLUDED_BYTES / (1 << 20));
    let refused = s
        .includes
        .iter()
        .find(|i| i.status == "too_much_text")
        .unwrap();
    assert!(
        refused.detail.as_ref().unwrap().contains("4 MiB"),
        "{refused:?}"
    );
    // Refused files count as opened: 100 includes open at most MAX_FILES.
    assert_eq!(loads, MAX_FILES - 1);
    assert!(s.includes.iter().any(|i| i.status == "too_many"));
    assert!(
        s.problems
            .iter()
            .any(|p| p.message.contains("include 'big.conf'") && p.line == 2 + read)
    );
}

#[test]
fn sections_parameters_and_problems_are_listed_up_to_their_caps() {
    let mut text = String::from("[global]\n");
    for i in 0..MAX_SECTIONS + 10 {
        text.push_str(&format!("[s{i}]\npath = /srv/{i}\n"));
    }
    // A section met again after the cap still gets its parameters.
    text.push_str("[S0]\nguest ok = yes\n");
    let s = resolve(&text, no_includes);
    assert_eq!(s.shares.len(), MAX_SECTIONS - 1);
    assert_eq!(param(&s.shares[0].params, "guest ok"), Some("yes"));
    let cap = s
        .problems
        .iter()
        .find(|p| p.message.starts_with("more than 4096 sections"))
        .unwrap();
    assert!(cap.message.contains("; 11 more"), "{}", cap.message);
    assert_eq!(cap.line, 2 * MAX_SECTIONS);

    let mut text = String::from("[global]\n");
    for i in 0..MAX_PARAMS + 5 {
        text.push_str(&format!("p{i} = 1\np{i} = 2\n"));
    }
    let s = resolve(&text, no_includes);
    assert_eq!(s.global.len(), MAX_PARAMS);
    assert_eq!(s.problems.len(), MAX_PROBLEMS + 2);
    let messages: Vec<&str> = s.problems[MAX_PROBLEMS..]
        .iter()
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(
        messages,
        vec![
            "more than 256 problems; 16128 more from here on are not listed",
            "more than 16384 parameters; 10 more from here on are not listed",
        ]
    );
}
