//! NFS exports: /etc/exports and /etc/exports.d/*.exports (exports(5)). Each
//! entry is a path followed by clients with options; `\` continues a line, `#`
//! starts a comment, a path may be quoted, and `-opts` sets defaults for the line.

use serde::{Deserialize, Serialize};

use super::file_services::ConfigProblem;
use crate::root::{ReadError, Root};

pub const EXPORTS: &str = "etc/exports";
pub const EXPORTS_D: &str = "etc/exports.d";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Nfs {
    pub files_read: Vec<String>,
    pub exports: Vec<NfsExport>,
    pub problems: Vec<ConfigProblem>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NfsExport {
    pub file: String,
    pub line: usize,
    pub path: String,
    /// Options given as `-opts` before the clients; they apply to every client.
    pub default_options: Vec<String>,
    pub clients: Vec<NfsClient>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NfsClient {
    /// Host, network, netgroup or `*`.
    pub host: String,
    pub options: Vec<String>,
}

/// Reads every exports file; `Ok(None)` when there is none at all.
pub fn read_nfs(root: &Root) -> Result<Option<Nfs>, ReadError> {
    let mut files = Vec::new();
    if let Some(t) = read_if_present(root, EXPORTS)? {
        files.push((EXPORTS.to_string(), t));
    }
    for name in root.read_dir_optional(EXPORTS_D)? {
        // exportfs reads only *.exports there.
        if name.ends_with(".exports") && !name.starts_with('.') {
            let rel = format!("{EXPORTS_D}/{name}");
            if let Some(t) = read_if_present(root, &rel)? {
                files.push((rel, t));
            }
        }
    }
    if files.is_empty() {
        return Ok(None);
    }
    let mut nfs = Nfs {
        files_read: Vec::new(),
        exports: Vec::new(),
        problems: Vec::new(),
    };
    for (rel, text) in files {
        let file = format!("/{rel}");
        let (exports, problems) = parse_exports(&file, &text);
        nfs.files_read.push(file);
        nfs.exports.extend(exports);
        nfs.problems.extend(problems);
    }
    Ok(Some(nfs))
}

fn read_if_present(root: &Root, rel: &str) -> Result<Option<String>, ReadError> {
    match root.read_string(rel) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Parses one exports file; `file` names it in the results.
pub fn parse_exports(file: &str, text: &str) -> (Vec<NfsExport>, Vec<ConfigProblem>) {
    let mut exports = Vec::new();
    let mut problems = Vec::new();
    for (line, logical) in logical_lines(text) {
        let mut problem = |message: String| {
            problems.push(ConfigProblem {
                file: file.to_string(),
                line,
                message,
            })
        };
        let tokens = match tokenize(&logical) {
            Ok(t) => t,
            Err(e) => {
                problem(e);
                continue;
            }
        };
        let mut tokens = tokens.into_iter();
        let Some(path) = tokens.next() else { continue };
        if !path.starts_with('/') && !path.starts_with('@') {
            problem(format!(
                "export path '{path}' is not absolute; exportfs ignores this line"
            ));
            continue;
        }
        let mut export = NfsExport {
            file: file.to_string(),
            line,
            path,
            default_options: Vec::new(),
            clients: Vec::new(),
        };
        let mut given = 0;
        for token in tokens {
            given += 1;
            if let Some(opts) = token.strip_prefix('-') {
                export.default_options.extend(split_options(opts));
                continue;
            }
            let (host, options) = match token.split_once('(') {
                Some((host, rest)) => {
                    let Some(opts) = rest.strip_suffix(')') else {
                        problem(format!("client '{token}' has no closing ')'"));
                        continue;
                    };
                    (host.to_string(), split_options(opts))
                }
                None => (token.clone(), Vec::new()),
            };
            if host.is_empty() {
                // `host (rw)` with a space: the options go to the whole world.
                let previous = export
                    .clients
                    .last()
                    .map(|c| format!(" (after '{}')", c.host))
                    .unwrap_or_default();
                problem(format!(
                    "options '{token}'{previous} have no host, so they apply to everyone ('*'); remove the space before '('"
                ));
                export.clients.push(NfsClient {
                    host: "*".into(),
                    options,
                });
                continue;
            }
            export.clients.push(NfsClient { host, options });
        }
        if given == 0 {
            problem(format!(
                "'{}' lists no clients; exportfs exports it to everyone with a warning",
                export.path
            ));
        }
        exports.push(export);
    }
    (exports, problems)
}

fn split_options(opts: &str) -> Vec<String> {
    opts.split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(String::from)
        .collect()
}

/// Joins `\` continuations and drops comments; yields `(first line number, text)`.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        if current.is_empty() {
            start = i + 1;
        }
        let body = strip_comment(raw.trim_end_matches('\r'));
        match body.trim_end().strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(body);
                if !current.trim().is_empty() {
                    out.push((start, std::mem::take(&mut current)));
                }
                current.clear();
            }
        }
    }
    if !current.trim().is_empty() {
        out.push((start, current));
    }
    out
}

/// `#` outside quotes starts a comment.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Splits on whitespace outside double quotes; quotes are removed.
fn tokenize(line: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut in_token = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_token = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_token {
                    tokens.push(std::mem::take(&mut current));
                    in_token = false;
                }
            }
            c => {
                current.push(c);
                in_token = true;
            }
        }
    }
    if quoted {
        return Err(format!("unterminated quote in '{}'", line.trim()));
    }
    if in_token {
        tokens.push(current);
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typical_exports_file() {
        let text = "\
# /etc/exports: the access control list for filesystems which may be exported
#\t\tto NFS clients.  See exports(5).
#
/srv/media   192.168.1.0/24(ro,all_squash,no_subtree_check) nas-backup(rw,sync)
\"/srv/my photos\" -async,no_subtree_check \\
    10.0.0.2(rw)   # the laptop
/srv/public *
";
        let (e, p) = parse_exports("/etc/exports", text);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].line, 4);
        assert_eq!(e[0].clients[0].host, "192.168.1.0/24");
        assert_eq!(
            e[0].clients[0].options,
            vec!["ro", "all_squash", "no_subtree_check"]
        );
        assert_eq!(e[1].path, "/srv/my photos");
        assert_eq!(e[1].line, 5);
        assert_eq!(e[1].default_options, vec!["async", "no_subtree_check"]);
        assert_eq!(e[1].clients[0].host, "10.0.0.2");
        assert_eq!(e[2].clients[0].options, Vec::<String>::new());
    }

    #[test]
    fn classic_mistakes_are_problems() {
        let text =
            "/srv/a host (rw)\nrelative/path host(ro)\n/srv/b\n/srv/c host(rw\n\"/srv/d host(ro)\n";
        let (e, p) = parse_exports("/etc/exports", text);
        let lines: Vec<usize> = p.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![1, 2, 3, 4, 5], "{p:?}");
        assert!(p[0].message.contains("everyone"), "{}", p[0].message);
        assert_eq!(e[0].clients[1].host, "*");
        assert!(p[1].message.contains("'relative/path'"));
        assert_eq!(e.len(), 3);
    }

    #[test]
    fn crlf_and_empty_input() {
        let (e, p) = parse_exports("x", "/srv host(rw)\r\n");
        assert!(p.is_empty());
        assert_eq!(e[0].clients[0].options, vec!["rw"]);
        assert!(parse_exports("x", "").0.is_empty());
        assert!(parse_exports("x", "\\").0.is_empty());
    }
}
