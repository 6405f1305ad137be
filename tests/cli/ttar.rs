//! A small extractor for ttar text archives (the format prometheus/procfs and
//! node_exporter keep their /proc and /sys fixtures in). Test-only.

use std::fs;
use std::path::{Component, Path};

/// Extracts `archive` below `dest`; returns the number of entries written.
pub fn extract(archive: &str, dest: &Path) -> Result<usize, String> {
    let mut lines = archive.lines().enumerate();
    let mut count = 0;
    let mut pending_path: Option<String> = None;
    while let Some((n, line)) = lines.next() {
        let at = || format!("line {}", n + 1);
        if line.starts_with('#') || line.trim().is_empty() || line.starts_with("Mode: ") {
            continue;
        }
        if let Some(dir) = line.strip_prefix("Directory: ") {
            fs::create_dir_all(dest.join(safe(dir)?)).map_err(|e| format!("{}: {e}", at()))?;
            count += 1;
        } else if let Some(path) = line.strip_prefix("Path: ") {
            pending_path = Some(safe(path)?.to_string());
        } else if let Some(target) = line.strip_prefix("SymlinkTo: ") {
            let path = pending_path
                .take()
                .ok_or_else(|| format!("{}: SymlinkTo without Path", at()))?;
            let link = dest.join(&path);
            make_parent(&link)?;
            std::os::unix::fs::symlink(target, &link).map_err(|e| format!("{}: {e}", at()))?;
            count += 1;
        } else if let Some(num) = line.strip_prefix("Lines: ") {
            let path = pending_path
                .take()
                .ok_or_else(|| format!("{}: Lines without Path", at()))?;
            let num: usize = num
                .trim()
                .parse()
                .map_err(|_| format!("{}: bad count '{num}'", at()))?;
            let mut content = String::new();
            for i in 0..num {
                let (_, l) = lines
                    .next()
                    .ok_or_else(|| format!("'{path}': archive ends inside the file"))?;
                let l = l.replace("NULLBYTE", "\0");
                match l.strip_suffix("EOF") {
                    Some(last) if i + 1 == num => content.push_str(last),
                    _ => {
                        content.push_str(&l);
                        content.push('\n');
                    }
                }
            }
            let file = dest.join(&path);
            make_parent(&file)?;
            fs::write(&file, content).map_err(|e| format!("'{path}': {e}"))?;
            count += 1;
        } else {
            return Err(format!("{}: unexpected '{line}'", at()));
        }
    }
    Ok(count)
}

/// Refuses absolute paths and `..`, so an archive cannot write outside `dest`.
fn safe(path: &str) -> Result<&str, String> {
    let ok = Path::new(path)
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if ok {
        Ok(path)
    } else {
        Err(format!("unsafe path '{path}' in archive"))
    }
}

fn make_parent(p: &Path) -> Result<(), String> {
    match p.parent() {
        Some(parent) => {
            fs::create_dir_all(parent).map_err(|e| format!("'{}': {e}", parent.display()))
        }
        None => Ok(()),
    }
}

#[test]
fn extracts_files_directories_links_and_unterminated_files() {
    let archive = "# c\nDirectory: a\nMode: 755\nPath: a/f\nLines: 2\none\ntwoEOF\nMode: 644\nPath: a/l\nSymlinkTo: f\nPath: a/e\nLines: 0\nMode: 644\n";
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(extract(archive, dir.path()).unwrap(), 4);
    assert_eq!(
        fs::read_to_string(dir.path().join("a/f")).unwrap(),
        "one\ntwo"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("a/l")).unwrap(),
        "one\ntwo"
    );
    assert_eq!(fs::read_to_string(dir.path().join("a/e")).unwrap(), "");
    assert!(extract("Path: ../x\nLines: 0\n", dir.path()).is_err());
    assert!(extract("Path: x\nLines: 3\nonly\n", dir.path()).is_err());
}
