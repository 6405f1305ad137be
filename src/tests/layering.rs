//! Every import between the top-level modules of src/ points down: no cycle.
//! The graph is read from the text the way `../shared/tools/module-graph`
//! reads it (a `crate::x` path, or a `use crate::{x, …}` group, outside test
//! code), so that tool and this test agree edge for edge; this one lives in
//! the repository so a fresh clone checks it with `cargo test`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Files that hold only test code, skipped whole.
const TEST_FILES: [&str; 3] = ["tests.rs", "test_support.rs", "fuzz.rs"];

/// `from -> to -> ["file:line", …]` for every top-level module of `src`.
type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_lowercase() || c == b'_'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The text before the first `#[cfg(test)]` that opens a module (`mod`,
/// `pub mod`, `pub(crate) mod`): what follows is test code.
fn without_tests(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        let mut rest = text[start + "#[cfg(test)]".len()..].trim_start();
        if let Some(r) = rest.strip_prefix("pub") {
            let r = match r.strip_prefix('(') {
                Some(inner) => inner.split_once(')').map_or(r, |(_, after)| after),
                None => r,
            };
            if r.starts_with(char::is_whitespace) {
                rest = r.trim_start();
            }
        }
        if rest
            .strip_prefix("mod")
            .is_some_and(|r| r.starts_with(char::is_whitespace))
        {
            return &text[..start];
        }
        from = start + 1;
    }
    text
}

/// The module names a line's `crate::name` paths reach, comments left out.
fn crate_paths(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or("");
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::") {
        let start = from + at;
        let name_at = start + "crate::".len();
        from = name_at;
        if start > 0 && is_word(b[start - 1]) {
            continue;
        }
        if name_at < b.len() && is_ident_start(b[name_at]) {
            let end = (name_at..b.len())
                .find(|&i| !is_ident(b[i]))
                .unwrap_or(b.len());
            out.push(&code[name_at..end]);
        }
    }
    out
}

/// Splits a `use crate::{…}` group at its top-level commas.
fn group_items(group: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&group[start..]);
    out
}

/// `(line, module)` of each first segment of a `use crate::{a, b::c}` group.
fn use_groups(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("use") {
        let start = from + at;
        from = start + 3;
        if start > 0 && is_word(b[start - 1]) {
            continue;
        }
        let rest = &text[start + 3..];
        let trimmed = rest.trim_start();
        if trimmed.len() == rest.len() {
            continue;
        }
        let Some(group) = trimmed.strip_prefix("crate::{") else {
            continue;
        };
        let Some(end) = group.find(';') else {
            continue;
        };
        let Some(close) = group[..end].rfind('}') else {
            continue;
        };
        let line = text[..start].matches('\n').count() + 1;
        for item in group_items(&group[..close]) {
            let name = item
                .trim()
                .split("::")
                .next()
                .unwrap_or("")
                .trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace());
            if !name.is_empty()
                && name != "self"
                && is_ident_start(name.as_bytes()[0])
                && name.bytes().all(is_ident)
            {
                out.push((line, name));
            }
        }
    }
    out
}

fn walk(dir: &Path, src: &Path, graph: &mut Graph, modules: &mut BTreeSet<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ reads")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let rel = path.strip_prefix(src).expect("under src");
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "tests") {
                continue;
            }
            walk(&path, src, graph, modules);
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.ends_with(".rs") || TEST_FILES.contains(&name) {
            continue;
        }
        let head = rel.iter().next().and_then(|h| h.to_str()).unwrap_or("");
        let me = head.strip_suffix(".rs").unwrap_or(head).to_string();
        if me == "main" || me == "lib" {
            continue;
        }
        modules.insert(me.clone());
        let text = std::fs::read_to_string(&path).expect("source reads");
        let text = without_tests(&text);
        let mut add = |to: &str, line: usize| {
            if to != me {
                graph
                    .entry(me.clone())
                    .or_default()
                    .entry(to.to_string())
                    .or_default()
                    .push(format!("{}:{line}", rel.display()));
            }
        };
        for (i, line) in text.split('\n').enumerate() {
            for to in crate_paths(line) {
                add(to, i + 1);
            }
        }
        for (line, to) in use_groups(text) {
            add(to, line);
        }
    }
}

fn module_graph(src: &Path) -> (Graph, BTreeSet<String>) {
    let (mut graph, mut modules) = (Graph::new(), BTreeSet::new());
    walk(src, src, &mut graph, &mut modules);
    (graph, modules)
}

/// The modules left after repeatedly taking away those that import nothing
/// still left: empty exactly when the graph has no cycle.
fn on_or_above_a_cycle(graph: &Graph) -> BTreeSet<String> {
    let mut left: BTreeSet<String> = graph.keys().cloned().collect();
    loop {
        let sinks: Vec<String> = left
            .iter()
            .filter(|m| graph[*m].keys().all(|to| !left.contains(to)))
            .cloned()
            .collect();
        if sinks.is_empty() {
            return left;
        }
        for s in sinks {
            left.remove(&s);
        }
    }
}

#[test]
fn no_cycle_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (graph, modules) = module_graph(&src);
    assert!(modules.len() > 10, "read {} modules of src/", modules.len());
    let left = on_or_above_a_cycle(&graph);
    let mut why = String::new();
    for from in &left {
        for (to, places) in &graph[from] {
            if left.contains(to) {
                let shown: Vec<&str> = places.iter().take(4).map(String::as_str).collect();
                why.push_str(&format!("  {from} -> {to}: {}\n", shown.join(", ")));
            }
        }
    }
    assert!(
        left.is_empty(),
        "imports between top-level modules of src/ go round in a cycle (a module imports \
         only modules below it: move the shared type down, see docs/ARCHITECTURE.md):\n{why}"
    );
}

/// `file:line: path` of each place a file under src/cmd/ reaches a sibling
/// command module (`super::advise::…` from cmd/tune.rs, `crate::cmd::bench_smb::…`):
/// cmd files share code through their parent (cmd/mod.rs) or the layers below.
fn cmd_sibling_imports(src: &Path) -> Vec<String> {
    let cmd = src.join("cmd");
    let mut commands = BTreeSet::new();
    for e in std::fs::read_dir(&cmd).expect("src/cmd/ reads") {
        let path = e.expect("entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if stem != "mod" && (path.is_dir() || path.extension().is_some_and(|x| x == "rs")) {
            commands.insert(stem.to_string());
        }
    }
    let mut out = Vec::new();
    let mut files = vec![cmd.clone()];
    while let Some(dir) = files.pop() {
        for e in std::fs::read_dir(&dir).expect("dir reads") {
            let path = e.expect("entry").path();
            if path.is_dir() {
                files.push(path);
                continue;
            }
            let rel = path.strip_prefix(&cmd).expect("under cmd");
            // cmd/tune.rs is `super` to cmd/tune/*.rs; cmd/mod.rs to cmd/*.rs.
            let (me, up) = match rel.iter().count() {
                1 => (
                    path.file_stem().and_then(|s| s.to_str()).unwrap_or(""),
                    "super::",
                ),
                _ => (
                    rel.iter().next().and_then(|s| s.to_str()).unwrap_or(""),
                    "super::super::",
                ),
            };
            let text = std::fs::read_to_string(&path).expect("source reads");
            for (i, line) in without_tests(&text).split('\n').enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for prefix in ["crate::cmd::", up] {
                    for (at, _) in code.match_indices(prefix) {
                        let rest = &code[at + prefix.len()..];
                        let name: String = rest
                            .bytes()
                            .take_while(|b| is_ident(*b))
                            .map(char::from)
                            .collect();
                        if prefix == "super::" && code[..at].ends_with("super::") {
                            continue;
                        }
                        if name != me
                            && commands.contains(&name)
                            && rest[name.len()..].starts_with("::")
                        {
                            out.push(format!("cmd/{}:{}: {prefix}{name}", rel.display(), i + 1));
                        }
                    }
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_command_imports_a_sibling_command() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = cmd_sibling_imports(&src);
    assert!(
        found.is_empty(),
        "a file under src/cmd/ imports a sibling command (move what they share into \
         cmd/mod.rs or the engine below):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn edges_are_read_as_module_graph_reads_them() {
    let text = "use crate::{a, b::{c, d}, self};\nfn f() { crate::e::g(); } // crate::h\nnotcrate::i;\n\
                #[cfg(test)]\nmod tests { use crate::j; }\n";
    let kept = without_tests(text);
    assert!(!kept.contains("crate::j") && kept.contains("crate::e"));
    let paths: Vec<&str> = kept.split('\n').flat_map(crate_paths).collect();
    assert_eq!(paths, ["e"]);
    assert_eq!(use_groups(kept), [(1, "a"), (1, "b")]);
    // A `#[cfg(test)]` on a function is not the start of test code.
    assert_eq!(
        without_tests("#[cfg(test)]\nfn x() {}\nuse crate::k;"),
        "#[cfg(test)]\nfn x() {}\nuse crate::k;"
    );
    assert_eq!(without_tests("a\n#[cfg(test)]\npub(crate) mod t {}"), "a\n");

    let mut graph = Graph::new();
    let edge = |to: &str| BTreeMap::from([(to.to_string(), vec!["x.rs:1".to_string()])]);
    graph.insert("a".into(), edge("b"));
    graph.insert("b".into(), edge("c"));
    graph.insert("c".into(), BTreeMap::new());
    assert!(on_or_above_a_cycle(&graph).is_empty());
    graph.insert("c".into(), edge("a"));
    assert_eq!(on_or_above_a_cycle(&graph).len(), 3);
}
