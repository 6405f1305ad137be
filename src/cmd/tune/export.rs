//! `nastune tune export`: the plan's changes as files other tools apply (a
//! sysctl.d file, udev rules, a TuneD profile, Ansible tasks), to stdout or into
//! a directory. Nothing on the system is written.

use std::path::Path;
use std::process::ExitCode;

use super::{make_plan, open_root};
use crate::advise::Change;
use crate::cli::tune::ExportArgs;
use crate::tune::export::{self, ExportFile};
use crate::tune::plan::{Plan, PlanItem, Status};
use anyhow::Context as _;

/// The change of an item with the value apply would write (validated and
/// normalised, e.g. whitespace runs of a multi-value sysctl made one space).
fn as_applied(i: &PlanItem) -> Change {
    crate::tune::kinds::as_applied(&i.change, i.new.as_deref())
}

/// The changes `tune apply` would make, in plan order.
pub fn changes(plan: &Plan) -> Vec<Change> {
    plan.items
        .iter()
        .filter(|i| i.status == Status::Apply)
        .map(as_applied)
        .collect()
}

/// Stdout form: each file after a `# ==> path <==` line.
pub fn to_stdout(files: &[ExportFile]) -> String {
    let mut out = String::new();
    for f in files {
        out.push_str(&format!("# ==> {} <==\n", f.path.display()));
        out.push_str(&f.contents);
    }
    out
}

fn write_into(dir: &Path, files: &[ExportFile]) -> anyhow::Result<()> {
    for f in files {
        let path = dir.join(&f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create '{}'", parent.display()))?;
        }
        std::fs::write(&path, &f.contents)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
        crate::note!("nastune: wrote '{}'", path.display());
    }
    Ok(())
}

pub fn run(a: &ExportArgs, global: &crate::cli::GlobalArgs) -> anyhow::Result<ExitCode> {
    let root = open_root(&a.select.root)?;
    let store = crate::cmd::open_store_to_read(global)?;
    let plan = make_plan(&a.select, &root, store.as_ref())?;
    for i in plan.items.iter().filter(|i| i.status == Status::Skip) {
        crate::note!(
            "nastune: not exported: {} ({})",
            i.setting,
            i.reason.as_deref().unwrap_or("skipped")
        );
    }
    super::refuse_if_every_set_rejected(&plan)?;
    let files = export::render(&changes(&plan), a.format)?;
    if a.output.as_os_str() == "-" {
        crate::output::write_stdout(to_stdout(&files).as_bytes())?;
    } else {
        write_into(&a.output, &files)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::root::Root;
    use crate::tune::export::ExportFormat;
    use crate::tune::plan::{build, manual, parse_set};

    #[test]
    fn exports_the_values_apply_would_write_and_only_applied_items() {
        let d = crate::tune::test_tree::tree(&[
            ("proc/sys/vm/swappiness", "60\n"),
            ("proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n"),
        ]);
        let root = Root::tree(d.path()).unwrap();
        let plan = build(
            &root,
            [
                "sysctl:vm.swappiness=60",
                "sysctl:net.ipv4.tcp_rmem=4096  87380   16777216",
            ]
            .iter()
            .map(|s| manual(parse_set(s).unwrap()))
            .collect(),
        );
        let c = changes(&plan);
        assert_eq!(
            c,
            [Change::Sysctl {
                key: "net.ipv4.tcp_rmem".into(),
                value: "4096 87380 16777216".into()
            }]
        );
        let files = export::render(&c, ExportFormat::Sysctl).unwrap();
        let text = to_stdout(&files);
        assert!(
            text.starts_with("# ==> etc/sysctl.d/99-zz-nastune.conf <==\n# sysctl.d"),
            "{text}"
        );
        assert!(
            text.ends_with("net.ipv4.tcp_rmem = 4096 87380 16777216\n"),
            "{text}"
        );
    }
}
