//! The path model checked against itself: when a file service was measured end
//! to end on a path, the model's prediction must come within
//! [`MODEL_MISS_PCT`] of it; a miss is reported, never hidden.

use super::bottleneck;
use super::path_model::MODEL_MISS_PCT;
use super::{Change, Finding, Risk, Rule, RuleInfo, Severity};

pub static RULES: &[&Rule] = &[&MODEL_MISS];

static MODEL_MISS: Rule = Rule {
    info: RuleInfo {
        id: "path-model-miss",
        area: "paths",
        title: "The bottleneck model does not explain a measured transfer",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "A path with an end-to-end figure (bench smb, check --smb, or bench net from \
                 this box to a peer) whose predicted ceiling — the lowest of the wire, \
                 storage, crypto and the shared CPU from the measured per-byte costs — is \
                 more than 25 % from what was measured: something the model does not see \
                 limits (or helps) the transfer.",
        // CM4 with LUKS: SMB 5-30x slower than the parts suggested — one CPU doing every stage.
        references: &["https://github.com/kubesail/pibox-os/issues/17"],
    },
    evaluate: |info, ctx| {
        bottleneck::analyse(ctx.snapshot, ctx.measurements)
            .iter()
            .filter_map(|p| {
                let m = p.model.as_ref()?;
                let miss = m.miss_pct.filter(|d| d.abs() > MODEL_MISS_PCT)?;
                let (predicted, measured) = (m.predicted_bytes_per_sec?, m.measured_bytes_per_sec?);
                let mut finding = Finding::of(
                    info,
                    format!(
                        "{}: the model predicts {:.0} MB/s, {} measured {:.0} MB/s ({miss:+.0} %)",
                        p.name,
                        predicted / 1e6,
                        m.measured_by,
                        measured / 1e6
                    ),
                    format!(
                        "The model does not explain this path: the prediction is {miss:+.0} % \
                         from the measurement, beyond the {MODEL_MISS_PCT:.0} % it is held to. \
                         A stage it does not count (page cache, writeback, a stage on another \
                         box, a disturbed run) decides the transfer."
                    ),
                )
                .evidence("predicted", format!("{:.1} MB/s", predicted / 1e6))
                .evidence("measured", format!("{:.1} MB/s", measured / 1e6))
                .change(Change::AdviceOnly {
                    action: "measure the missing stages (bench disk on the share's \
                             filesystem, bench net from a client) and run check --smb again"
                        .into(),
                });
                // Costs beyond the CPU's busy time: the copy lost its CPU to
                // something outside the box (a hypervisor), which the
                // prediction leaves out and the measurement does not.
                if let Some(scale) = m.cpu.as_ref().and_then(|c| c.scaled.as_ref()) {
                    finding = finding.evidence("costs scaled", scale.text());
                }
                Some(finding)
            })
            .collect()
    },
};
