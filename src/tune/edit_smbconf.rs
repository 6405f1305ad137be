//! Lossless edits of smb.conf on top of the probe's [`Document`]: comments (`#`,
//! `;`), blank lines, `include =` lines, indentation, continuation lines and
//! the order of everything are kept; only the parameter's own line changes.

use super::edit::EditError;
use crate::probe::smb::document::{Document, LineKind};
use crate::probe::smb::params::{invert, is_inverse_synonym, parse_bool};

/// Sets (`Some`) or removes (`None`) `parameter` in `section` of the smb.conf
/// `text`, and returns the whole new text.
///
/// Names compare as Samba compares them: case-insensitively with spaces
/// ignored (`Socket Options` is `socketoptions`), synonyms folded (`writeable`
/// is the inverse of `read only`); sections compare case-insensitively, and
/// parameters before the first header belong to `global`.
///
/// Setting rewrites the last line of the parameter (the one Samba uses) in
/// place, keeping its indentation and the spacing around `=`; a new parameter
/// goes after the last parameter of the section, with that line's indentation;
/// a missing section is appended at the end. Removing deletes every line of the
/// parameter in every copy of the section. When the effective value is already
/// the one asked for (`yes`/`Yes`/`true` are the same boolean), or there is
/// nothing to remove, the text comes back byte for byte.
pub fn set_parameter(
    text: &str,
    section: &str,
    parameter: &str,
    value: Option<&str>,
) -> Result<String, EditError> {
    let mut doc = Document::parse(text);
    match value {
        Some(value) => {
            if already_set(&doc, section, parameter, value) {
                return Ok(text.to_string());
            }
            doc.set(section, parameter, value)?;
        }
        None => {
            doc.remove(section, parameter);
        }
    }
    Ok(doc.into_string())
}

/// Whether the value Samba would use for `parameter` is already `value`.
fn already_set(doc: &Document, section: &str, parameter: &str, value: &str) -> bool {
    let Some(LineKind::Param { key, value: have }) = doc.last(section, parameter).map(|l| l.kind)
    else {
        return false;
    };
    let have = if is_inverse_synonym(&key, parameter) {
        invert(&have)
    } else {
        have.into_owned()
    };
    match (parse_bool(&have), parse_bool(value)) {
        (Some(a), Some(b)) => a == b,
        _ => have == value.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN: &str = include_str!("../../tests/fixtures/smb/debian.smb.conf");

    /// The shape OpenMediaVault writes: no indentation, banner comments between
    /// sections, an include for the admin's extra options, a continued line.
    const OMV: &str = "\
#======================= Global Settings =======================
[global]
workgroup = WORKGROUP
server string = %h server
server role = standalone
log level = 0
socket options = TCP_NODELAY IPTOS_LOWDELAY \\
    SO_RCVBUF=65536 SO_SNDBUF=65536
use sendfile = yes
aio read size = 1
include = /etc/samba/smb.conf.d/extra.conf
;min receivefile size = 16384
#======================= Share Definitions =======================
[media]
path = /srv/dev-disk-by-uuid-1234/media/
guest ok = no
writeable = yes
browseable = yes
vfs objects = 

[backup]
path = /srv/dev-disk-by-uuid-1234/backup/
read only = yes
";

    fn changed(a: &str, b: &str) -> (Vec<String>, Vec<String>) {
        let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
        let gone = la.iter().filter(|l| !lb.contains(l)).map(|l| l.to_string());
        let new = lb.iter().filter(|l| !la.contains(l)).map(|l| l.to_string());
        (gone.collect(), new.collect())
    }

    #[test]
    fn debian_default_gets_a_global_parameter_after_the_last_one() {
        let out = set_parameter(DEBIAN, "global", "use sendfile", Some("yes")).unwrap();
        let (gone, new) = changed(DEBIAN, &out);
        assert!(gone.is_empty(), "{gone:?}");
        assert_eq!(new, vec!["   use sendfile = yes"]);
        // After `usershare allow guests`, the last parameter of [global], before [printers].
        let at = out.find("   use sendfile = yes\n").unwrap();
        assert!(
            out[..at]
                .trim_end()
                .ends_with("usershare allow guests = yes")
        );
        assert!(out[at..].contains("[printers]"));
        // Removing it again gives the file back.
        let back = set_parameter(&out, "global", "usesendfile", None).unwrap();
        assert_eq!(back, DEBIAN);
    }

    #[test]
    fn debian_default_share_parameter_rewritten_in_place() {
        let out = set_parameter(DEBIAN, "Print$", "Read Only", Some("no")).unwrap();
        let old = "   path = /var/lib/samba/printers\n   browseable = yes\n   read only = yes\n";
        let new = "   path = /var/lib/samba/printers\n   browseable = yes\n   read only = no\n";
        assert_eq!(out, DEBIAN.replacen(old, new, 1));
        assert_ne!(out, DEBIAN);
    }

    #[test]
    fn omv_continued_socket_options_removed_whole() {
        let out = set_parameter(OMV, "global", "SocketOptions", None).unwrap();
        assert!(!out.contains("SO_RCVBUF"), "{out}");
        assert!(!out.contains("socket options"));
        assert!(out.contains("log level = 0\nuse sendfile = yes\n"), "{out}");
        // Comments and the include line stay where they were.
        assert!(
            out.contains("aio read size = 1\ninclude = /etc/samba/smb.conf.d/extra.conf\n;min")
        );
        assert_eq!(out.lines().count(), OMV.lines().count() - 2);
    }

    #[test]
    fn omv_new_parameter_goes_after_the_include_without_indentation() {
        let out = set_parameter(OMV, "global", "min receivefile size", Some("16384")).unwrap();
        assert!(
            out.contains("include = /etc/samba/smb.conf.d/extra.conf\nmin receivefile size = 16384\n;min receivefile size = 16384\n"),
            "{out}"
        );
        let out = set_parameter(OMV, "backup", "strict locking", Some("no")).unwrap();
        assert!(
            out.ends_with("read only = yes\nstrict locking = no\n"),
            "{out}"
        );
        let out = set_parameter(OMV, "media", "aio write size", Some("1")).unwrap();
        assert!(
            out.contains("vfs objects = \naio write size = 1\n\n[backup]"),
            "{out}"
        );
    }

    #[test]
    fn a_missing_section_is_appended() {
        let out = set_parameter(OMV, "photos", "path", Some("/srv/photos")).unwrap();
        assert_eq!(out, format!("{OMV}\n[photos]\n\tpath = /srv/photos\n"));
    }

    #[test]
    fn no_ops_return_identical_bytes() {
        for (section, param, value) in [
            ("global", "use sendfile", Some("Yes")),
            ("global", "Log Level", Some("0")),
            ("media", "read only", Some("no")),
            ("media", "writable", Some("true")),
            ("media", "vfs objects", Some("")),
            ("backup", "nonexistent parameter", None),
            ("nosuchshare", "path", None),
        ] {
            assert_eq!(
                set_parameter(OMV, section, param, value).unwrap(),
                OMV,
                "{section} {param} {value:?}"
            );
        }
    }

    #[test]
    fn inverse_synonyms_are_rewritten_under_the_asked_name() {
        let out = set_parameter(OMV, "MEDIA", "read only", Some("yes")).unwrap();
        assert_eq!(
            out,
            OMV.replacen(
                "guest ok = no\nwriteable = yes\n",
                "guest ok = no\nread only = yes\n",
                1
            )
        );
        assert_ne!(out, OMV);
    }

    #[test]
    fn unwritable_values_are_refused_with_the_value() {
        let e = set_parameter(OMV, "global", "log level", Some("1\n[x]")).unwrap_err();
        assert!(matches!(e, EditError::SmbConf(_)), "{e:?}");
        assert!(e.to_string().contains("'1\n[x]'"), "{e}");
    }
}
