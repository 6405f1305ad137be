use crate::util::*;

#[test]
fn man_page_names_every_visible_subcommand() {
    let o = nastune().args(["generate", "man"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let man = stdout(&o);
    assert!(man.contains(".TH nastune"), "no title: {man}");
    assert!(man.contains("nastune\\-probe"), "no probe page");
    assert!(!man.contains("nastune\\-generate"), "hidden command leaked");
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let o = nastune()
            .args(["generate", "completions", shell])
            .output()
            .unwrap();
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("probe"),
            "{shell} completions lack 'probe'"
        );
    }
    let o = nastune()
        .args(["generate", "completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("tcsh"));
}

#[test]
fn version_names_the_target() {
    let o = nastune().arg("--version").output().unwrap();
    let v = stdout(&o);
    assert!(v.starts_with("nastune 0."), "{v}");
    assert!(v.contains("linux"), "no build target in '{v}'");
}

#[test]
fn committed_man_page_is_current() {
    let o = nastune().args(["generate", "man"]).output().unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/nastune.1");
    assert_golden(&path, &stdout(&o));
}
