//! Lossless edits of /etc/fstab: only the options field of the one line that
//! mounts the given mount point changes; comments, blank lines, the spacing and
//! tabs between fields and the order of everything are kept byte for byte.
//!
//! Option semantics (fstab(5), mount(8)): options keep their order; an option
//! that is already there is not added twice; `key=value` replaces the option with
//! the same key in place; options added in the same call as a removal take the
//! removed option's place, so that swapping `relatime` for `noatime` and back
//! gives the original line; an options list left empty becomes `defaults`.

use super::edit::EditError;
use crate::probe::config_files::split_unquoted_commas;
use crate::probe::filesystems::unescape;

/// Sets mount options of the fstab line for `mount_point` in `text`.
///
/// `mount_point` is compared after decoding fstab's octal escapes (`\040` for a
/// space) on both sides, ignoring a trailing `/`. `remove` entries without `=`
/// remove every option with that key (`commit` removes `commit=60`); entries
/// with `=` remove only that exact option. Returns the whole new text, identical
/// to `text` when nothing changes.
pub fn set_options(
    text: &str,
    mount_point: &str,
    add: &[String],
    remove: &[String],
) -> Result<String, EditError> {
    for option in add.iter().chain(remove) {
        if option.is_empty() || option.contains(|c: char| c.is_whitespace() || c == ',') {
            return Err(EditError::BadMountOption {
                option: option.clone(),
            });
        }
    }
    let (start, line) = entry(text, mount_point)?;
    let physical = &text[start..start + line.len];
    let old = line.options(physical);
    let new = edit_options(&old, add, remove);
    if new == old {
        return Ok(text.to_string());
    }
    let joined = new.join(",");
    let edited = match line.fields.get(3) {
        Some(&(s, e)) => format!("{}{joined}{}", &physical[..s], &physical[e..]),
        None => {
            // Three fields: add the options field with the spacing used before the type.
            let (_, mp_end) = line.fields[1];
            let (ty_start, ty_end) = line.fields[2];
            let gap = &physical[mp_end..ty_start];
            format!(
                "{}{gap}{joined}{}",
                &physical[..ty_end],
                &physical[ty_end..]
            )
        }
    };
    Ok(format!(
        "{}{edited}{}",
        &text[..start],
        &text[start + line.len..]
    ))
}

/// The options of the fstab line for `mount_point` in `text` (`defaults`
/// when the line has no options field).
pub fn options(text: &str, mount_point: &str) -> Result<Vec<String>, EditError> {
    let (start, line) = entry(text, mount_point)?;
    Ok(line.options(&text[start..start + line.len]))
}

/// The one line that mounts `mount_point`: its byte offset and fields.
fn entry(text: &str, mount_point: &str) -> Result<(usize, FstabLine), EditError> {
    let want = normalize(&unescape(mount_point));
    let mut found: Vec<(usize, usize, FstabLine)> = Vec::new();
    let mut offset = 0;
    for (i, physical) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += physical.len();
        let Some(line) = FstabLine::parse(physical) else {
            continue;
        };
        if line
            .fields
            .get(1)
            .map(|&(s, e)| normalize(&unescape(&physical[s..e])))
            != Some(want.clone())
        {
            continue;
        }
        if !(3..=6).contains(&line.fields.len()) {
            return Err(EditError::MalformedFstabLine {
                line: i + 1,
                text: physical.trim_end().to_string(),
                reason: format!("expected 3 to 6 fields, found {}", line.fields.len()),
            });
        }
        found.push((i + 1, start, line));
    }
    match found.len() {
        0 => Err(EditError::NoFstabEntry {
            mount_point: mount_point.to_string(),
        }),
        1 => {
            let (_, start, line) = found.remove(0);
            Ok((start, line))
        }
        _ => Err(EditError::SeveralFstabEntries {
            mount_point: mount_point.to_string(),
            lines: found.iter().map(|f| f.0).collect(),
        }),
    }
}

/// Byte ranges of the whitespace-separated fields of one non-comment line.
struct FstabLine {
    fields: Vec<(usize, usize)>,
    len: usize,
}

impl FstabLine {
    /// The options field of `physical` (this line), `defaults` when absent.
    fn options(&self, physical: &str) -> Vec<String> {
        match self.fields.get(3) {
            Some(&(s, e)) => split_unquoted_commas(&physical[s..e])
                .into_iter()
                .map(str::to_string)
                .collect(),
            None => vec!["defaults".to_string()],
        }
    }

    /// `None` for blank and comment lines.
    fn parse(physical: &str) -> Option<FstabLine> {
        let body = physical.trim_end_matches(['\n', '\r']);
        let trimmed = body.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return None;
        }
        let mut fields = Vec::new();
        let mut start = None;
        for (i, c) in body.char_indices() {
            match (c == ' ' || c == '\t', start) {
                (true, Some(s)) => {
                    fields.push((s, i));
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        if let Some(s) = start {
            fields.push((s, body.len()));
        }
        Some(FstabLine {
            fields,
            len: physical.len(),
        })
    }
}

/// `/srv/data/` and `/srv/data` are the same mount point; `/` stays `/`.
fn normalize(path: &str) -> String {
    let t = path.trim_end_matches('/');
    if t.is_empty() && path.starts_with('/') {
        "/".to_string()
    } else {
        t.to_string()
    }
}

fn key(option: &str) -> &str {
    option.split_once('=').map_or(option, |(k, _)| k)
}

/// The new options list; see the module documentation for the rules.
pub fn edit_options(old: &[String], add: &[String], remove: &[String]) -> Vec<String> {
    let removed = |o: &str| {
        remove
            .iter()
            .any(|r| if r.contains('=') { o == r } else { key(o) == r })
    };
    let mut out: Vec<String> = Vec::with_capacity(old.len() + add.len());
    // Where the first removed option stood: added options go there.
    let mut slot = None;
    for o in old {
        if removed(o) {
            slot.get_or_insert(out.len());
        } else {
            out.push(o.clone());
        }
    }
    for a in add {
        if out.contains(a) {
            continue;
        }
        let same_key = out
            .iter()
            .position(|o| key(o) == key(a) && (o.contains('=') || a.contains('=')));
        match (same_key, slot.as_mut()) {
            (Some(i), _) => out[i] = a.clone(),
            (None, Some(s)) => {
                out.insert(*s, a.clone());
                *s += 1;
            }
            (None, None) => out.push(a.clone()),
        }
    }
    if out.is_empty() {
        out.push("defaults".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's installer output plus the hand edits a NAS collects over the years.
    const FSTAB: &str = "# /etc/fstab: static file system information.
#
# Use 'blkid' to print the universally unique identifier for a
# device; this may be used with UUID= as a more robust way to name devices
# <file system> <mount point>   <type>  <options>       <dump>  <pass>
# / was on /dev/sda1 during installation
UUID=1b2c3d4e-0000-4a4a-9b9b-123456789abc /               ext4    errors=remount-ro 0       1
# swap was on /dev/sda5 during installation
UUID=aaaa-bbbb none            swap    sw              0       0
/dev/sr0        /media/cdrom0   udf,iso9660 user,noauto     0       0

/dev/md0\t/srv/data\text4\tdefaults,relatime,commit=60\t0\t2
LABEL=usb\t/srv/my\\040backup\txfs\tnofail,x-systemd.device-timeout=10s  0 0
tmpfs /tmp tmpfs
";

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn set(text: &str, mp: &str, add: &[&str], remove: &[&str]) -> Result<String, EditError> {
        set_options(text, mp, &strings(add), &strings(remove))
    }

    /// Lines of `a` and `b` that differ, as (line number, b's line).
    fn changed_lines(a: &str, b: &str) -> Vec<(usize, String)> {
        assert_eq!(a.lines().count(), b.lines().count());
        a.lines()
            .zip(b.lines())
            .enumerate()
            .filter(|(_, (x, y))| x != y)
            .map(|(i, (_, y))| (i + 1, y.to_string()))
            .collect()
    }

    #[test]
    fn only_the_options_field_of_the_matching_line_changes() {
        let out = set(FSTAB, "/srv/data", &["noatime"], &["relatime"]).unwrap();
        assert_eq!(
            changed_lines(FSTAB, &out),
            vec![(
                12,
                "/dev/md0\t/srv/data\text4\tdefaults,noatime,commit=60\t0\t2".into()
            )]
        );
        let out = set(FSTAB, "/", &["noatime"], &[]).unwrap();
        assert_eq!(
            changed_lines(FSTAB, &out),
            vec![(
                7,
                "UUID=1b2c3d4e-0000-4a4a-9b9b-123456789abc /               ext4    \
                 errors=remount-ro,noatime 0       1"
                    .into()
            )]
        );
    }

    #[test]
    fn set_then_reverse_set_gives_the_original_bytes() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("/srv/data", &["noatime"], &["relatime"]),
            ("/srv/data", &["nofail"], &[]),
            ("/srv/data", &[], &["commit=60"]),
            ("/", &["noatime", "nodiratime"], &["errors=remount-ro"]),
            ("/media/cdrom0", &["ro"], &["user"]),
            ("/srv/my backup", &["noatime"], &[]),
        ];
        for (mp, add, remove) in cases {
            let there = set(FSTAB, mp, add, remove).unwrap();
            assert_ne!(there, FSTAB, "{mp} {add:?} {remove:?} changed nothing");
            let back = set(&there, mp, remove, add).unwrap();
            assert_eq!(back, FSTAB, "{mp} {add:?} {remove:?}");
        }
    }

    #[test]
    fn a_no_op_returns_identical_bytes() {
        assert_eq!(set(FSTAB, "/srv/data", &["relatime"], &[]).unwrap(), FSTAB);
        assert_eq!(
            set(FSTAB, "/srv/data", &["commit=60"], &["atime"]).unwrap(),
            FSTAB
        );
        assert_eq!(set(FSTAB, "/srv/data", &[], &[]).unwrap(), FSTAB);
        // A line without an options field already means `defaults`.
        assert_eq!(set(FSTAB, "/tmp", &["defaults"], &[]).unwrap(), FSTAB);
        // CRLF and a missing final newline survive too.
        let crlf = "a /x ext4 rw 0 0\r\nb /y ext4 rw";
        assert_eq!(set(crlf, "/y", &["rw"], &[]).unwrap(), crlf);
        assert_eq!(
            set(crlf, "/y", &["noatime"], &[]).unwrap(),
            "a /x ext4 rw 0 0\r\nb /y ext4 rw,noatime"
        );
        assert_eq!(
            set(crlf, "/x", &["noatime"], &[]).unwrap(),
            "a /x ext4 rw,noatime 0 0\r\nb /y ext4 rw"
        );
    }

    #[test]
    fn key_value_options_replace_the_same_key_in_place() {
        let out = set(FSTAB, "/srv/data", &["commit=30"], &[]).unwrap();
        assert!(
            out.contains("\tdefaults,relatime,commit=30\t0\t2\n"),
            "{out}"
        );
        let out = set(FSTAB, "/srv/data", &[], &["commit"]).unwrap();
        assert!(out.contains("\tdefaults,relatime\t0\t2\n"), "{out}");
        // Removing `commit=5` does not remove `commit=60`.
        assert_eq!(set(FSTAB, "/srv/data", &[], &["commit=5"]).unwrap(), FSTAB);
    }

    #[test]
    fn defaults_fill_an_emptied_list_and_a_missing_field() {
        let out = set(
            FSTAB,
            "/srv/my\\040backup",
            &[],
            &["nofail", "x-systemd.device-timeout"],
        )
        .unwrap();
        assert!(
            out.contains("LABEL=usb\t/srv/my\\040backup\txfs\tdefaults  0 0\n"),
            "{out}"
        );
        let out = set(FSTAB, "/tmp", &["size=64m", "noexec"], &[]).unwrap();
        assert!(
            out.ends_with("tmpfs /tmp tmpfs defaults,size=64m,noexec\n"),
            "{out}"
        );
        let tab = "none\t/run/x\ttmpfs\n";
        assert_eq!(
            set(tab, "/run/x", &["mode=0755"], &[]).unwrap(),
            "none\t/run/x\ttmpfs\tdefaults,mode=0755\n"
        );
    }

    #[test]
    fn mount_points_match_escaped_and_with_a_trailing_slash() {
        let a = set(FSTAB, "/srv/my backup", &["noatime"], &[]).unwrap();
        let b = set(FSTAB, "/srv/my\\040backup/", &["noatime"], &[]).unwrap();
        assert_eq!(a, b);
        assert!(
            a.contains("/srv/my\\040backup\txfs\tnofail,x-systemd.device-timeout=10s,noatime  0 0")
        );
    }

    #[test]
    fn quoted_commas_stay_inside_one_option() {
        let text = "/dev/sdb1 /web ext4 context=\"system_u:object_r:httpd_t:s0:c1,c2\",ro 0 2\n";
        let out = set(text, "/web", &["noatime"], &["ro"]).unwrap();
        assert_eq!(
            out,
            "/dev/sdb1 /web ext4 context=\"system_u:object_r:httpd_t:s0:c1,c2\",noatime 0 2\n"
        );
    }

    #[test]
    fn errors_quote_the_problem() {
        let e = set(FSTAB, "/nowhere", &["noatime"], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no line in fstab mounts '/nowhere'; add the entry by hand first"
        );
        let twice = "/dev/a /srv ext4 rw 0 0\n# x\n/dev/b /srv/ xfs rw 0 0\n";
        let e = set(twice, "/srv", &["noatime"], &[]).unwrap_err();
        assert_eq!(
            e,
            EditError::SeveralFstabEntries {
                mount_point: "/srv".into(),
                lines: vec![1, 3]
            }
        );
        let bad = "/dev/a /ok ext4 rw 0 0\n/dev/b /srv\n/dev/c /srv ext4 rw 0 0 extra junk\n";
        let e = set(bad, "/srv", &["noatime"], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "fstab line 2 is malformed (expected 3 to 6 fields, found 2): '/dev/b /srv'; fix it by hand first"
        );
        // A malformed line elsewhere is not ours to judge: it stays as it is.
        let out = set(bad, "/ok", &["noatime"], &[]).unwrap();
        assert!(out.starts_with("/dev/a /ok ext4 rw,noatime 0 0\n/dev/b /srv\n"));
        for option in ["no atime", "a,b", ""] {
            assert_eq!(
                set(FSTAB, "/", &[option], &[]).unwrap_err(),
                EditError::BadMountOption {
                    option: option.into()
                }
            );
        }
    }
}
