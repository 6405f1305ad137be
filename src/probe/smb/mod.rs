//! Samba configuration: a lossless [`document::Document`] per file, and a
//! semantic view of the whole configuration with `include =` followed the way
//! Samba does (the included text takes the place of the include line, and the
//! section it ends in stays current).

pub mod document;
pub mod fuzz;
pub mod params;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::file_services::ConfigProblem;
use crate::root::{ReadError, Root};
use document::{LineKind, logical_lines, section_key};
use params::{canonical_name, invert};

/// Where Samba's main configuration lives, relative to the root.
pub const SMB_CONF: &str = "etc/samba/smb.conf";
/// Relative includes are resolved against this directory.
const SAMBA_DIR: &str = "etc/samba";
/// Deeper include chains are a configuration error; Samba stops too.
const MAX_INCLUDE_DEPTH: usize = 16;
/// Files opened in all, those refused for [`MAX_INCLUDED_BYTES`] too; includes
/// that fan out (A includes B twice, B includes C twice, ...) would otherwise
/// grow exponentially within the depth limit, and 1000 includes of one 4 MiB
/// file read 4 GB only to refuse it.
const MAX_FILES: usize = 64;
/// Text read through `include =` in all, besides the main file. Every file is
/// already bounded by [`crate::root::MAX_FILE_BYTES`] (4 MiB), but 64 of them
/// would be 256 MiB of text on a box with 128 MiB; 4 MiB more than the main
/// file is some 40 times the largest real configuration we have seen.
pub const MAX_INCLUDED_BYTES: usize = 4 << 20;
/// Entries the semantic view lists, each kind on its own; a 4 MiB file of
/// 192 000 one-line sections gave 58 MB of JSON and a 240 MB process. A share
/// per user for 500 users, four parameters each, fits with room to spare,
/// and at about 300 bytes of JSON an entry the lists stay under 8 MiB.
const MAX_SECTIONS: usize = 4096;
const MAX_PARAMS: usize = 16384;
/// Problems and includes listed; past these a configuration is garbage, and
/// one more problem says how much was left out.
const MAX_PROBLEMS: usize = 256;
const MAX_INCLUDES: usize = 256;

/// The effective Samba configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Samba {
    /// Every file read, main configuration first (`/etc/samba/smb.conf`).
    pub files_read: Vec<String>,
    /// `[global]` parameters, canonical names, last value wins.
    pub global: Vec<SmbParam>,
    /// Every other section (`[homes]`, `[printers]` and shares), in file order;
    /// repeated sections are merged.
    pub shares: Vec<SmbShare>,
    pub includes: Vec<SmbInclude>,
    pub problems: Vec<ConfigProblem>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SmbParam {
    /// Canonical name (`read only`, `server max protocol`).
    pub name: String,
    /// The value for the canonical name; an inverse synonym's boolean is flipped
    /// (`writeable = yes` gives `read only` = `no`).
    pub value: String,
    /// The name as written, when it differs from the canonical one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_as: Option<String>,
    pub file: String,
    pub line: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SmbShare {
    pub name: String,
    pub path: Option<String>,
    pub params: Vec<SmbParam>,
}

impl Samba {
    /// The shares a client can copy files to and from: not a print queue
    /// (`printable = yes`, as Debian's stock `[printers]` on /var/tmp, whose
    /// files are spooled jobs), not `[print$]` (the printer drivers Windows
    /// clients download, on Debian's stock configuration too) and not
    /// switched off (`available = no`). A share's own setting wins over
    /// `[global]`'s, which sets the default.
    pub fn file_shares(&self) -> impl Iterator<Item = &SmbShare> {
        let printable = last_bool(&self.global, "printable").unwrap_or(false);
        let available = last_bool(&self.global, "available").unwrap_or(true);
        self.shares.iter().filter(move |sh| {
            !sh.name.eq_ignore_ascii_case("print$")
                && !last_bool(&sh.params, "printable").unwrap_or(printable)
                && last_bool(&sh.params, "available").unwrap_or(available)
        })
    }
}

/// The boolean value of `name` in `params` (the last one set, as Samba
/// reads it); `None` when unset or not a boolean.
fn last_bool(params: &[SmbParam], name: &str) -> Option<bool> {
    params
        .iter()
        .rev()
        .find(|p| p.name == name)
        .and_then(|p| params::parse_bool(&p.value))
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SmbInclude {
    pub file: String,
    pub line: usize,
    /// The value as written.
    pub target: String,
    /// `read`, `missing`, `loop`, `macro` (contains `%` substitutions, which
    /// depend on the client, so it is not followed), `too_deep`, `too_many`,
    /// `too_much_text` (it would take the text read through includes past
    /// [`MAX_INCLUDED_BYTES`]) or `unreadable`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Reads smb.conf and its includes; `Ok(None)` when there is no smb.conf.
pub fn read_samba(root: &Root) -> Result<Option<Samba>, ReadError> {
    // A running smbd started with its own configuration serves that one.
    let conf = running_config(root).unwrap_or_else(|| SMB_CONF.to_string());
    let main = match root.read_string(&conf) {
        Ok(t) => t,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut samba = resolve(&main, |rel| root.read_string(rel));
    if conf != SMB_CONF
        && let Some(first) = samba.files_read.first_mut()
    {
        *first = format!("/{conf}");
    }
    Ok(Some(samba))
}

/// The configuration file a running smbd was started with (`-s FILE`,
/// `--configfile FILE` or `--configfile=FILE`), relative to the root; `None`
/// when no smbd runs or it uses the default.
fn running_config(root: &Root) -> Option<String> {
    root.read_dir("proc")
        .ok()?
        .iter()
        .filter(|p| p.parse::<u32>().is_ok())
        .filter(|p| {
            root.read_value(&format!("proc/{p}/comm"))
                .is_ok_and(|c| c == "smbd" || c == "smbd[main]" || c.starts_with("smbd"))
        })
        .find_map(|p| {
            let raw = root.read_head(&format!("proc/{p}/cmdline"), 4096).ok()?;
            config_of_cmdline(&raw)
        })
        .map(|path| path.trim_start_matches('/').to_string())
}

/// The `-s`/`--configfile` argument of a NUL-separated command line.
pub fn config_of_cmdline(raw: &[u8]) -> Option<String> {
    let args: Vec<&str> = raw
        .split(|b| *b == 0)
        .filter_map(|a| std::str::from_utf8(a).ok())
        .collect();
    args.iter().enumerate().find_map(|(i, a)| {
        if let Some(v) = a.strip_prefix("--configfile=") {
            return Some(v.to_string());
        }
        if *a == "-s" || *a == "--configfile" {
            return args.get(i + 1).map(|v| v.to_string());
        }
        a.strip_prefix("-s")
            .filter(|v| v.starts_with('/'))
            .map(str::to_string)
    })
}

/// Builds the semantic view from the main file's text; `load` reads an
/// included file given its path relative to the root.
pub fn resolve(main: &str, mut load: impl FnMut(&str) -> Result<String, ReadError>) -> Samba {
    let mut b = Builder {
        sections: vec![("global".into(), Vec::new())],
        section_index: HashMap::from([(section_key("global"), 0)]),
        param_index: HashMap::new(),
        current: Some(0),
        params: 0,
        unlisted: Vec::new(),
        included_bytes: 0,
        opened: 1,
        stack: Vec::new(),
        out: Samba {
            files_read: Vec::new(),
            global: Vec::new(),
            shares: Vec::new(),
            includes: Vec::new(),
            problems: Vec::new(),
        },
    };
    b.process(SMB_CONF, main, &mut load);
    for u in std::mem::take(&mut b.unlisted) {
        b.out.problems.push(ConfigProblem {
            message: format!(
                "more than {} {what}; {} more from here on are not listed",
                u.limit,
                u.count,
                what = u.what
            ),
            file: u.file,
            line: u.line,
        });
    }
    let mut sections = b.sections.into_iter();
    if let Some((_, global)) = sections.next() {
        b.out.global = global;
    }
    b.out.shares = sections
        .map(|(name, params)| SmbShare {
            path: params
                .iter()
                .find(|p| p.name == "path")
                .map(|p| p.value.clone()),
            name,
            params,
        })
        .collect();
    b.out
}

struct Builder {
    /// `(name, params)`; index 0 is `[global]`.
    sections: Vec<(String, Vec<SmbParam>)>,
    /// Section key ([`section_key`]) to its index in `sections`, and
    /// `(section, canonical parameter)` to the parameter's index in that
    /// section: a scan per line instead took 5.3 s for 20 000 sections, and
    /// more than 600 s for the 192 000 a 4 MiB file holds.
    section_index: HashMap<String, usize>,
    param_index: HashMap<(usize, String), usize>,
    /// The section parameters go to; `None` past [`MAX_SECTIONS`].
    current: Option<usize>,
    /// Parameters listed, against [`MAX_PARAMS`].
    params: usize,
    /// What the caps left out, by kind, in the order first met.
    unlisted: Vec<Unlisted>,
    /// Bytes of included text read so far, against [`MAX_INCLUDED_BYTES`].
    included_bytes: usize,
    /// Files opened so far, the main one included, against [`MAX_FILES`].
    opened: usize,
    /// Files being processed, for include loop detection.
    stack: Vec<String>,
    out: Samba,
}

/// Entries of one kind left out of the view, and where the first one was.
struct Unlisted {
    what: &'static str,
    limit: usize,
    count: usize,
    file: String,
    line: usize,
}

fn display(rel: &str) -> String {
    format!("/{rel}")
}

impl Builder {
    fn process(
        &mut self,
        rel: &str,
        text: &str,
        load: &mut dyn FnMut(&str) -> Result<String, ReadError>,
    ) {
        let file = display(rel);
        self.out.files_read.push(file.clone());
        self.stack.push(rel.to_string());
        let mut seen_section = self.stack.len() > 1;
        for line in logical_lines(text) {
            match &line.kind {
                LineKind::Blank | LineKind::Comment => {}
                LineKind::Invalid { reason } => self.problem(&file, line.number, reason.clone()),
                LineKind::Section { name } => {
                    seen_section = true;
                    self.current = self.section_index.get(&section_key(name)).copied();
                    if self.current.is_none() {
                        if self.sections.len() < MAX_SECTIONS {
                            let next = self.sections.len();
                            self.section_index.insert(section_key(name), next);
                            self.sections.push((name.to_string(), Vec::new()));
                            self.current = Some(next);
                        } else {
                            self.unlist("sections", MAX_SECTIONS, &file, line.number);
                        }
                    }
                }
                LineKind::Param { key, value } => {
                    if !seen_section {
                        seen_section = true;
                        self.problem(
                            &file,
                            line.number,
                            format!(
                                "parameter '{key}' comes before any section header; Samba treats it as [global]"
                            ),
                        );
                    }
                    let (name, inverse) = canonical_name(key);
                    if name == "include" {
                        self.include(&file, line.number, value, load);
                        continue;
                    }
                    // The section is left out, and counted as such.
                    let Some(current) = self.current else {
                        continue;
                    };
                    let param = SmbParam {
                        value: if inverse {
                            invert(value)
                        } else {
                            value.to_string()
                        },
                        written_as: (*key != name).then(|| key.to_string()),
                        name,
                        file: file.clone(),
                        line: line.number,
                    };
                    self.set_param(current, param);
                }
            }
        }
        self.stack.pop();
    }

    fn set_param(&mut self, section: usize, param: SmbParam) {
        let key = (section, param.name.clone());
        let (section_name, params) = &mut self.sections[section];
        let Some(&at) = self.param_index.get(&key) else {
            if self.params < MAX_PARAMS {
                self.params += 1;
                self.param_index.insert(key, params.len());
                params.push(param);
            } else {
                self.unlist("parameters", MAX_PARAMS, &param.file, param.line);
            }
            return;
        };
        let old = &mut params[at];
        let message = format!(
            "'{}' in [{section_name}] is set again (first at {}:{}); the last value '{}' wins",
            param.name, old.file, old.line, param.value
        );
        let (file, line) = (param.file.clone(), param.line);
        *old = param;
        self.problem(&file, line, message);
    }

    fn include(
        &mut self,
        file: &str,
        line: usize,
        target: &str,
        load: &mut dyn FnMut(&str) -> Result<String, ReadError>,
    ) {
        let rel = if let Some(abs) = target.strip_prefix('/') {
            abs.to_string()
        } else {
            format!("{SAMBA_DIR}/{target}")
        };
        let (status, detail) = if target.contains('%') {
            (
                "macro",
                Some("depends on the client (% substitution); not followed".to_string()),
            )
        } else if target.is_empty() {
            ("missing", Some("empty include".to_string()))
        } else if self.stack.contains(&rel) {
            ("loop", Some(format!("'{}' includes itself", display(&rel))))
        } else if self.opened >= MAX_FILES {
            (
                "too_many",
                Some(format!("more than {MAX_FILES} files opened; not followed")),
            )
        } else if self.stack.len() >= MAX_INCLUDE_DEPTH {
            (
                "too_deep",
                Some(format!("more than {MAX_INCLUDE_DEPTH} nested includes")),
            )
        } else {
            self.opened += 1;
            match load(&rel) {
                Ok(text) if self.included_bytes + text.len() > MAX_INCLUDED_BYTES => (
                    "too_much_text",
                    Some(format!(
                        "its {} bytes would take the text read through includes past {} MiB; not followed",
                        text.len(),
                        MAX_INCLUDED_BYTES >> 20
                    )),
                ),
                Ok(text) => {
                    self.included_bytes += text.len();
                    self.record_include(SmbInclude {
                        file: file.to_string(),
                        line,
                        target: target.to_string(),
                        status: "read".into(),
                        detail: None,
                    });
                    self.process(&rel, &text, load);
                    return;
                }
                Err(e) if e.is_not_found() => ("missing", Some(e.to_string())),
                Err(e) => ("unreadable", Some(e.to_string())),
            }
        };
        if status != "macro" {
            self.problem(
                file,
                line,
                format!(
                    "include '{target}': {}",
                    detail.clone().unwrap_or_else(|| status.to_string())
                ),
            );
        }
        self.record_include(SmbInclude {
            file: file.to_string(),
            line,
            target: target.to_string(),
            status: status.into(),
            detail,
        });
    }

    fn problem(&mut self, file: &str, line: usize, message: String) {
        if self.out.problems.len() >= MAX_PROBLEMS {
            self.unlist("problems", MAX_PROBLEMS, file, line);
            return;
        }
        self.out.problems.push(ConfigProblem {
            file: file.to_string(),
            line,
            message,
        });
    }

    fn record_include(&mut self, include: SmbInclude) {
        if self.out.includes.len() >= MAX_INCLUDES {
            self.unlist("includes", MAX_INCLUDES, &include.file, include.line);
            return;
        }
        self.out.includes.push(include);
    }

    /// Counts an entry a cap left out; the first one of its kind says where.
    fn unlist(&mut self, what: &'static str, limit: usize, file: &str, line: usize) {
        match self.unlisted.iter_mut().find(|u| u.what == what) {
            Some(u) => u.count += 1,
            None => self.unlisted.push(Unlisted {
                what,
                limit,
                count: 1,
                file: file.to_string(),
                line,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
