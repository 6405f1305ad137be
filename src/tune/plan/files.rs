//! The files a plan writes: nastune's own sysctl.d, udev rules and IRQ affinity
//! unit files (their
//! network content deferred to `tune confirm`) and one whole-file write per
//! edited configuration file, and the order of all steps.

use super::{FilePlan, Persist, PlanItem, Status, read_text};
use crate::root::Root;
use crate::tune::action::{Action, Step, read_meta};
use crate::tune::boot_unit;
use crate::tune::edit_file::{self, Edit};
use crate::tune::sysctl_d;
use crate::tune::udev_rules;

/// The files nastune owns, each merged with what a plan's items persist in it.
#[derive(Clone, Copy, PartialEq)]
enum Owned {
    Sysctl,
    Udev,
    /// The IRQ affinity unit (and, when it is new, the drop-in that wants it).
    Boot,
}

impl Owned {
    fn path(self) -> &'static str {
        match self {
            Owned::Sysctl => sysctl_d::OWNED_FILE,
            Owned::Udev => udev_rules::OWNED_FILE,
            Owned::Boot => boot_unit::UNIT_FILE,
        }
    }

    fn holds(self, p: &Persist) -> bool {
        matches!(
            (self, p),
            (Owned::Sysctl, Persist::Sysctl(..))
                | (Owned::Udev, Persist::Udev(_))
                | (Owned::Boot, Persist::Boot(_))
        )
    }

    /// The file with the group's settings merged into `existing`.
    fn render(self, existing: Option<&str>, group: &[&Persist]) -> Result<String, String> {
        fn each<T>(group: &[&Persist], f: impl Fn(&Persist) -> Option<T>) -> Vec<T> {
            group.iter().filter_map(|p| f(p)).collect()
        }
        match self {
            Owned::Sysctl => {
                let set = each(group, |p| match p {
                    Persist::Sysctl(k, v) => Some((k.clone(), v.clone())),
                    _ => None,
                });
                sysctl_d::render(existing, &set).map_err(|e| e.to_string())
            }
            Owned::Udev => {
                let rules = each(group, |p| match p {
                    Persist::Udev(r) => Some(r.clone()),
                    _ => None,
                });
                udev_rules::render(existing, &rules).map_err(|e| e.to_string())
            }
            Owned::Boot => {
                let set = each(group, |p| match p {
                    Persist::Boot(a) => Some(a.clone()),
                    _ => None,
                });
                boot_unit::render(existing, &set).map_err(|e| e.to_string())
            }
        }
    }
}

/// Builds the owned files (non-network content first, then network content,
/// which waits for `tune confirm`) and the ordered steps.
pub(super) fn persistence(root: &Root, items: &mut [PlanItem]) -> (Vec<FilePlan>, Vec<Step>) {
    let mut files = Vec::new();
    let mut file_steps: [Vec<Step>; 2] = [Vec::new(), Vec::new()];
    for owned in [Owned::Sysctl, Owned::Udev, Owned::Boot] {
        let path = owned.path();
        let belongs = |i: &PlanItem| i.status == Status::Apply && owned.holds(&i.persist);
        if !items.iter().any(belongs) {
            continue;
        }
        let existing = match read_text(root, path) {
            Ok(e) => e,
            Err(e) => {
                skip_all(items, &belongs, &e);
                continue;
            }
        };
        let mut content = existing.clone();
        for network in [false, true] {
            let group: Vec<&Persist> = items
                .iter()
                .filter(|i| belongs(i) && i.network == network)
                .map(|i| &i.persist)
                .collect();
            if group.is_empty() {
                continue;
            }
            let text = match owned.render(content.as_deref(), &group) {
                Ok(t) => t,
                Err(e) => {
                    skip_all(items, &belongs, &e);
                    break;
                }
            };
            let mut write = |path: &str, existed: bool, text: String| {
                files.push(FilePlan {
                    path: format!("/{path}"),
                    existed,
                    network,
                    deferred: network,
                    content: text.clone(),
                });
                file_steps[network as usize].push(Step {
                    action: Action::File {
                        path: path.to_string(),
                        content: text.into_bytes(),
                    },
                    setting: format!("file:/{path}"),
                    rule_id: None,
                    network,
                    deferred: network,
                });
            };
            write(path, existing.is_some(), text.clone());
            // The unit runs at boot only when multi-user.target wants it.
            if owned == Owned::Boot && content.is_none() {
                let existed = matches!(read_text(root, boot_unit::WANTS_FILE), Ok(Some(_)));
                write(boot_unit::WANTS_FILE, existed, boot_unit::wants());
            }
            content = Some(text);
        }
    }
    let runtime = |network: bool| {
        items
            .iter()
            .filter(move |i| i.status == Status::Apply && i.network == network)
            .flat_map(|i| {
                i.runtime.iter().map(|(path, value)| Step {
                    action: Action::Runtime {
                        path: path.clone(),
                        value: value.clone(),
                    },
                    setting: if value.is_some() {
                        i.setting.clone()
                    } else {
                        format!("companion:{path}")
                    },
                    rule_id: i.rule_id.clone(),
                    network,
                    deferred: false,
                })
            })
            .collect::<Vec<_>>()
    };
    let netdev_steps = items
        .iter()
        .filter(|i| i.status == Status::Apply)
        .flat_map(|i| {
            i.netdev.iter().map(|(path, value)| Step {
                action: Action::Netdev {
                    path: path.clone(),
                    value: value.clone(),
                },
                setting: i.setting.clone(),
                rule_id: i.rule_id.clone(),
                // Network device settings are network items; a dm-crypt flag is not.
                network: i.network,
                deferred: false,
            })
        })
        .collect::<Vec<_>>();
    let (local, network) = (runtime(false), runtime(true));
    let mut steps = local;
    steps.append(&mut file_steps[0]);
    steps.extend(edits(root, items, &mut files));
    steps.extend(network);
    steps.extend(netdev_steps);
    steps.append(&mut file_steps[1]);
    (files, steps)
}

/// One whole-file write per edited file, its edits applied in plan order; an edit
/// that fails on top of the earlier ones skips its item, a file the validator
/// (findmnt, testparm) likes less than before skips every item on it.
fn edits(root: &Root, items: &mut [PlanItem], files: &mut Vec<FilePlan>) -> Vec<Step> {
    let mut steps = Vec::new();
    for file in Edit::FILES {
        let on_file = |i: &PlanItem| {
            i.status == Status::Apply && matches!(&i.persist, Persist::Edit(e) if e.file() == file)
        };
        let Ok(Some(original)) = read_text(root, file) else {
            continue;
        };
        let mut content = original.clone();
        for i in items.iter_mut().filter(|i| on_file(i)) {
            let Persist::Edit(edit) = &i.persist else {
                continue;
            };
            match edit.apply(&content) {
                Ok(t) => content = t,
                Err(e) => {
                    i.status = Status::Skip;
                    i.reason = Some(e);
                }
            }
        }
        if content == original {
            continue;
        }
        // The validator's copies get the file's own permission bits.
        let mode = read_meta(root, file)
            .ok()
            .flatten()
            .map_or(0o600, |m| m.mode & 0o777);
        if let Some(why) = edit_file::validate(file, &original, &content, mode) {
            skip_all(items, &on_file, &why);
            continue;
        }
        files.push(FilePlan {
            path: format!("/{file}"),
            existed: true,
            network: false,
            deferred: false,
            content: content.clone(),
        });
        steps.push(Step {
            action: Action::File {
                path: file.to_string(),
                content: content.into_bytes(),
            },
            setting: format!("file:/{file}"),
            rule_id: None,
            network: false,
            deferred: false,
        });
    }
    steps
}

fn skip_all(items: &mut [PlanItem], belongs: &dyn Fn(&PlanItem) -> bool, reason: &str) {
    for i in items.iter_mut() {
        if belongs(i) {
            i.status = Status::Skip;
            i.reason = Some(reason.to_string());
        }
    }
}
