//! Test helper: a temporary root tree holding the given files.

/// A tempdir with `files` (path relative to the root, contents) written.
pub fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (p, t) in files {
        std::fs::create_dir_all(d.path().join(p).parent().unwrap()).unwrap();
        std::fs::write(d.path().join(p), t).unwrap();
    }
    d
}
