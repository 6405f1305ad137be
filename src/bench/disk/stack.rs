//! `bench disk --stack PATH`: the same read at every layer under PATH — the
//! file, then each block device of its stack (dm-crypt, md, partition, disk),
//! members of one layer also all together — and what each layer costs
//! against the one below. Reads only, so it is safe on a live box.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::measure::{self, Chosen, MeasureError, Prepared};
use super::plan::Plan;
use super::shared::totals;
use super::target::TargetKind;
use super::{DiskBench, TestResult};
use crate::bench::diskstats::Layer;
use crate::bench::interrupt;
use crate::root::Root;

/// One row of the layer walk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerRun {
    /// "file", a block device's name, or the members joined by "+" for a
    /// layer's devices run together.
    pub name: String,
    /// "file", "partition", "dm", "md", "loop", "disk", or "together".
    pub kind: String,
    /// 0 for PATH itself, growing towards the disks.
    pub depth: u32,
    /// What was read (the members' paths for "together").
    pub paths: Vec<PathBuf>,
    /// One result per path.
    pub tests: Vec<TestResult>,
    /// Read + write bandwidth, summed over `tests`.
    pub bw_bytes: f64,
    pub iops: f64,
    /// Bandwidth this layer loses against the layer below it, in percent
    /// (`(below - this) / below × 100`); `None` at the bottom or when the
    /// layer below is several devices never run together.
    pub cost_pct: Option<f64>,
}

/// The row a layer at `depth` is measured against: the "together" row one
/// level down, else the only row there.
fn below(rows: &[LayerRun], depth: u32) -> Option<&LayerRun> {
    let next: Vec<&LayerRun> = rows.iter().filter(|r| r.depth == depth + 1).collect();
    next.iter()
        .find(|r| r.kind == "together")
        .copied()
        .or_else(|| (next.len() == 1).then(|| next[0]))
}

/// Fills each row's `cost_pct` from the rows' bandwidths. Pure.
pub fn costs(rows: &mut [LayerRun]) {
    let pct: Vec<Option<f64>> = rows
        .iter()
        .map(|r| {
            if r.kind == "together" {
                return None;
            }
            below(rows, r.depth)
                .filter(|b| b.bw_bytes > 0.0)
                .map(|b| (b.bw_bytes - r.bw_bytes) / b.bw_bytes * 100.0)
        })
        .collect();
    for (r, p) in rows.iter_mut().zip(pct) {
        r.cost_pct = p;
    }
}

fn row(
    name: String,
    kind: &str,
    depth: u32,
    paths: Vec<PathBuf>,
    tests: Vec<TestResult>,
) -> LayerRun {
    let (bw_bytes, iops) = tests
        .iter()
        .map(totals)
        .fold((0.0, 0.0), |a, t| (a.0 + t.0, a.1 + t.1));
    LayerRun {
        name,
        kind: kind.to_string(),
        depth,
        paths,
        tests,
        bw_bytes,
        iops,
        cost_pct: None,
    }
}

/// Walks the stack under `plan.path`; `None` when interrupted while opening.
pub(super) fn measure(
    root: &Root,
    plan: &Plan,
    chosen: Chosen,
) -> Result<Option<DiskBench>, MeasureError> {
    let Some(top) = measure::prepare(root, plan, &plan.path, None)? else {
        return Ok(None);
    };
    let mut rows = Vec::new();
    // A file is a layer of its own; a device PATH is the stack's first layer.
    let file_depth = u32::from(top.target.kind != TargetKind::BlockDevice);
    if file_depth == 1 {
        let r = measure::alone(root, plan, &chosen, &top, true, String::new());
        rows.push(row(
            "file".into(),
            "file",
            0,
            vec![top.target.path.clone()],
            vec![r],
        ));
    }
    // `None`: the layer is PATH itself (a device), already open as `top`.
    let mut opened: Vec<(Layer, Option<Prepared>)> = Vec::new();
    for layer in &top.layers {
        if interrupt::interrupted() {
            break;
        }
        let own = if layer.depth == 0 && file_depth == 0 {
            None
        } else {
            let path = PathBuf::from(format!("/dev/{}", layer.name));
            match measure::prepare(root, plan, &path, None)? {
                Some(p) => Some(p),
                None => return Ok(None),
            }
        };
        let p = own.as_ref().unwrap_or(&top);
        let r = measure::alone(root, plan, &chosen, p, rows.is_empty(), String::new());
        rows.push(row(
            layer.name.clone(),
            &layer.kind,
            layer.depth + file_depth,
            vec![p.target.path.clone()],
            vec![r],
        ));
        opened.push((layer.clone(), own));
    }
    // Members of one layer (an array's disks, a mapping's slaves) all at once.
    let depths: BTreeSet<u32> = opened.iter().map(|(l, _)| l.depth).collect();
    for d in depths {
        let members: Vec<(&Layer, &Prepared)> = opened
            .iter()
            .filter(|(l, _)| l.depth == d)
            .map(|(l, p)| (l, p.as_ref().unwrap_or(&top)))
            .collect();
        if members.len() < 2 || interrupt::interrupted() {
            continue;
        }
        let pairs: Vec<_> = members
            .iter()
            .map(|(_, p)| (&p.target, p.layers.as_slice()))
            .collect();
        let tests = measure::run_together(root, chosen.kind, &pairs, &members[0].1.tests[0]);
        let name = members
            .iter()
            .map(|(l, _)| l.name.as_str())
            .collect::<Vec<_>>()
            .join("+");
        let paths = members.iter().map(|(_, p)| p.target.path.clone()).collect();
        rows.push(row(name, "together", d + file_depth, paths, tests));
    }
    rows.sort_by_key(|r| r.depth);
    costs(&mut rows);
    let results = rows.first().map(|r| r.tests.clone()).unwrap_or_default();
    let mut doc = measure::document(root, plan, chosen, &top.target, top.layers.clone(), results);
    doc.validity = crate::bench::validity::Validity::worst(
        rows.iter()
            .flat_map(|r| &r.tests)
            .filter_map(|t| t.validity.as_ref()),
    );
    doc.stack = rows;
    Ok(Some(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, kind: &str, depth: u32, bw: f64) -> LayerRun {
        LayerRun {
            bw_bytes: bw,
            ..row(name.into(), kind, depth, Vec::new(), Vec::new())
        }
    }

    #[test]
    fn each_layer_costs_against_the_one_below() {
        // file on dm-crypt on md0 over two disks: the array against its
        // members together, not against either alone.
        let mut rows = vec![
            r("file", "file", 0, 80.0),
            r("dm-0", "dm", 1, 100.0),
            r("md0", "md", 2, 160.0),
            r("sda", "disk", 3, 110.0),
            r("sdb", "disk", 3, 90.0),
            r("sda+sdb", "together", 3, 200.0),
        ];
        costs(&mut rows);
        let c: Vec<Option<f64>> = rows.iter().map(|r| r.cost_pct).collect();
        assert_eq!(c, [Some(20.0), Some(37.5), Some(20.0), None, None, None]);
    }

    #[test]
    fn several_members_never_run_together_give_no_cost() {
        let mut rows = vec![
            r("md0", "md", 0, 100.0),
            r("sda", "disk", 1, 60.0),
            r("sdb", "disk", 1, 60.0),
        ];
        costs(&mut rows);
        assert_eq!(rows[0].cost_pct, None);
        // A faster layer above (read-ahead, cache) is a negative cost, kept as is.
        let mut rows = vec![r("file", "file", 0, 120.0), r("loop0", "loop", 1, 100.0)];
        costs(&mut rows);
        assert_eq!(rows[0].cost_pct, Some(-20.0));
    }
}
