//! `nastune tune try --folklore`: each recipe of [`crate::tune::folklore`]
//! that applies to this box, tried one after another through the very same
//! trial as a single `tune try` ([`Trial::measure`]): its own plan, journal
//! session and stored `tune-try` run. Nothing is kept unless `--keep-helpful`;
//! a recipe no judge exercises is listed as skipped with the reason.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Context as _;

use super::{ask, json, need_store, open_root};
use crate::cli::GlobalArgs;
use crate::cli::tune::TryArgs;
use crate::report::tune_folklore_text;
use crate::root::Root;
use crate::tune::folklore::{self, Candidate, FolkloreReport, Row, RowResult};
use crate::tune::plan::{self, Plan, PlanItem};
use crate::tune::trial::engine::{Trial, check_exercised, the_change};
use crate::tune::trial::judge::{Judge, JudgeError, MetricName, PreparedJudge};

/// A judge given with --bench, ready, with the metric it is judged by.
struct Ready<'a> {
    judge: &'a Judge,
    prepared: PreparedJudge,
    metric: MetricName,
}

/// A recipe that can be tried now: its plan, the change, and the judge.
struct Go {
    plan: Plan,
    item: PlanItem,
    judge: usize,
}

/// Why a recipe is skipped, with the old value when a plan read it.
struct Skip {
    reason: String,
    old: Option<String>,
}

/// The plan of one candidate on `root` as it is now, and the first judge that
/// exercises it; or why not.
fn decide(c: &Candidate, root: &Root, judges: &[Ready], smb_read: bool) -> Result<Go, Skip> {
    if let Some(reason) = c.skip(root) {
        return Err(Skip { reason, old: None });
    }
    let plan = plan::build(
        root,
        vec![plan::Source {
            finding: None,
            rule_id: None,
            title: format!("folklore recipe {} ({})", c.recipe.name, c.recipe.source),
            risk: crate::tune::kinds::kind(&c.change).manual_risk(),
            change: c.change.clone(),
        }],
    );
    let item = match the_change(&plan, c.recipe.name) {
        Ok(i) => i.clone(),
        Err(e) => {
            // The plan's own reason ("already '10'") says it without the preamble.
            let first = plan.items.first();
            return Err(Skip {
                reason: first
                    .and_then(|i| i.reason.clone())
                    .unwrap_or_else(|| e.to_string()),
                old: first.and_then(|i| i.old.clone()),
            });
        }
    };
    // A judge of the right kind that misses the device or interface says why
    // better than the kind's general need.
    let mut reason = None;
    for (n, r) in judges.iter().enumerate() {
        if c.recipe.needs.unmet_by(r.judge, smb_read).is_some() {
            continue;
        }
        match check_exercised(
            root,
            &r.judge.to_string(),
            &r.prepared,
            &plan,
            &item.setting,
        ) {
            Ok(()) => {
                return Ok(Go {
                    plan,
                    item,
                    judge: n,
                });
            }
            Err(e) => {
                reason.get_or_insert(e.to_string());
            }
        }
    }
    Err(Skip {
        reason: reason.unwrap_or_else(|| c.recipe.needs.wants().to_string()),
        old: item.old,
    })
}

fn row(c: &Candidate, old: Option<String>, result: RowResult) -> Row {
    Row {
        recipe: c.recipe.name.to_string(),
        rule: c.recipe.rule.map(str::to_string),
        setting: Some(crate::tune::kinds::kind(&c.change).setting()),
        on: Some(c.on.clone()).filter(|o| !o.is_empty()),
        old,
        new: c.recipe.value.to_string(),
        source: c.recipe.source.to_string(),
        now: c.recipe.now.to_string(),
        result,
    }
}

pub fn run(a: &TryArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let store = need_store(global, "try")?;
    let (settings, command) = (a.settings(), crate::cmd::command_line());
    let opts = a.judge_options()?;
    let picked = a
        .bench
        .iter()
        .map(|j| Ok((j, j.pick(&opts, a.metric)?)))
        .collect::<Result<Vec<_>, JudgeError>>()?;
    for (j, m) in &picked {
        a.plan(j.metric(*m).better)?;
    }
    let root = open_root(&a.root)?;
    // The judges measure the real system, whatever tree the changes go to.
    let judges = picked
        .into_iter()
        .map(|(judge, metric)| {
            Ok(Ready {
                judge,
                prepared: judge.prepare(&opts)?,
                metric,
            })
        })
        .collect::<Result<Vec<_>, JudgeError>>()?;
    let (candidates, absent) = folklore::candidates(&root);
    let n = candidates
        .iter()
        .filter(|c| decide(c, &root, &judges, opts.smb_read).is_ok())
        .count();
    if n > 0 && !a.yes && !ask(n)? {
        crate::note!("nastune: nothing tried");
        return Ok(ExitCode::SUCCESS);
    }
    // From here Ctrl-C ends the recipe in progress at its next run boundary, reverted.
    crate::bench::interrupt::install()?;
    let progress = std::io::stderr().is_terminal();
    let mut rows = Vec::new();
    for c in &candidates {
        // Decided again: a recipe kept before may have changed this one's ground.
        let go = match decide(c, &root, &judges, opts.smb_read) {
            Ok(go) => go,
            Err(s) => {
                rows.push(row(c, s.old, RowResult::Skipped { reason: s.reason }));
                continue;
            }
        };
        if progress {
            crate::note!("nastune: recipe {}: {}", c.recipe.name, go.item.setting);
        }
        let r = &judges[go.judge];
        let trial = Trial {
            a: &settings,
            command: &command,
            store: &store,
            root: &root,
            judge: r.judge,
            prepared: &r.prepared,
            metric_name: r.metric,
            keep: a.keep_helpful,
        };
        // A failed trial is rolled back by itself; the recipes before it are stored runs.
        let report = trial.measure(&go.plan, &go.item).with_context(|| {
            format!(
                "folklore recipe '{}' ({}); the recipes before it are stored as tune-try runs",
                c.recipe.name, go.item.setting
            )
        });
        let report = match report {
            Ok(r) => r,
            Err(e) => return super::interrupted_exit(&e).ok_or(e),
        };
        rows.push(row(
            c,
            go.item.old.clone(),
            RowResult::Measured {
                trial: Box::new(report),
            },
        ));
    }
    for (r, why) in absent {
        rows.push(Row {
            recipe: r.name.to_string(),
            rule: r.rule.map(str::to_string),
            setting: None,
            on: None,
            old: None,
            new: r.value.to_string(),
            source: r.source.to_string(),
            now: r.now.to_string(),
            result: RowResult::Skipped { reason: why },
        });
    }
    let report = FolkloreReport {
        judges: a.bench.iter().map(Judge::to_string).collect(),
        keep_helpful: a.keep_helpful,
        rows,
    };
    let out = if a.json {
        json(&report)?
    } else {
        tune_folklore_text::render(&report)
    };
    crate::output::write_result(&out, a.json)?;
    Ok(ExitCode::SUCCESS)
}
