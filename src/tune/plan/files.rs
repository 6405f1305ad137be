//! The files a plan writes: nastune's own sysctl.d and udev rules files (their
//! network content deferred to `tune confirm`) and one whole-file write per
//! edited configuration file, and the order of all steps.

use super::{FilePlan, Persist, PlanItem, Status, read_text};
use crate::root::Root;
use crate::tune::action::{Action, Step};
use crate::tune::edit_file::{self, Edit};
use crate::tune::sysctl_d;
use crate::tune::udev_rules::{self, Rule};

/// Builds the owned files (non-network content first, then network content,
/// which waits for `tune confirm`) and the ordered steps.
pub(super) fn persistence(root: &Root, items: &mut [PlanItem]) -> (Vec<FilePlan>, Vec<Step>) {
    let mut files = Vec::new();
    let mut file_steps: [Vec<Step>; 2] = [Vec::new(), Vec::new()];
    for sysctl in [true, false] {
        let path = if sysctl {
            sysctl_d::OWNED_FILE
        } else {
            udev_rules::OWNED_FILE
        };
        let belongs = |i: &PlanItem| {
            i.status == Status::Apply
                && match &i.persist {
                    Persist::Sysctl(..) => sysctl,
                    Persist::Udev(_) => !sysctl,
                    Persist::None | Persist::Edit(_) => false,
                }
        };
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
            let group: Vec<&PlanItem> = items
                .iter()
                .filter(|i| belongs(i) && i.network == network)
                .collect();
            if group.is_empty() {
                continue;
            }
            let rendered = if sysctl {
                let set: Vec<(String, String)> = group
                    .iter()
                    .filter_map(|i| match &i.persist {
                        Persist::Sysctl(k, v) => Some((k.clone(), v.clone())),
                        _ => None,
                    })
                    .collect();
                sysctl_d::render(content.as_deref(), &set).map_err(|e| e.to_string())
            } else {
                let rules: Vec<Rule> = group
                    .iter()
                    .filter_map(|i| match &i.persist {
                        Persist::Udev(r) => Some(r.clone()),
                        _ => None,
                    })
                    .collect();
                udev_rules::render(content.as_deref(), &rules).map_err(|e| e.to_string())
            };
            let text = match rendered {
                Ok(t) => t,
                Err(e) => {
                    skip_all(items, &belongs, &e);
                    break;
                }
            };
            files.push(FilePlan {
                path: format!("/{path}"),
                existed: existing.is_some(),
                network,
                deferred: network,
                content: text.clone(),
            });
            file_steps[network as usize].push(Step {
                action: Action::File {
                    path: path.to_string(),
                    content: text.clone().into_bytes(),
                },
                setting: format!("file:/{path}"),
                rule_id: None,
                network,
                deferred: network,
            });
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
        if let Some(why) = edit_file::validate(file, &original, &content) {
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
