//! Text for `nastune tune`: the plan, what apply did, rollback and verify.

use crate::tune::apply::Applied;
use crate::tune::plan::{Plan, Status};
use crate::tune::rollback::{Restored, RolledBack};
use crate::tune::verify::{Check, State};

pub fn render_plan(plan: &Plan) -> String {
    let mut out = String::new();
    if plan.items.is_empty() {
        out.push_str("nothing to change: no finding recommends a change\n");
        return out;
    }
    for i in &plan.items {
        let from = i
            .finding
            .map(|f| format!("finding {f}, {}", i.rule_id.as_deref().unwrap_or("")))
            .unwrap_or_else(|| "--set".into());
        let mark = match i.status {
            Status::Apply => "apply",
            Status::Skip => "skip ",
        };
        out.push_str(&format!("{:>2}. [{mark}] {}", i.item, i.setting));
        if let (Some(old), Some(new)) = (&i.old, &i.new) {
            out.push_str(&format!(": '{old}' -> '{new}'"));
        } else if let Some(new) = &i.new {
            out.push_str(&format!(": -> '{new}'"));
        }
        out.push('\n');
        out.push_str(&format!("    why: {} ({from})\n", i.title));
        out.push_str(&format!(
            "    risk: {}",
            crate::report::advise_text::risk(i.risk)
        ));
        if i.network {
            out.push_str(", network: reverted unless confirmed");
        }
        out.push('\n');
        if let Some(p) = &i.persisted_in
            && i.status == Status::Apply
        {
            out.push_str(&format!("    persisted in: {p}\n"));
        }
        if let Some(r) = &i.reason {
            out.push_str(&format!("    skipped: {r}\n"));
        }
        for w in &i.warnings {
            out.push_str(&format!("    warning: {w}\n"));
        }
    }
    out.push_str(&format!(
        "\n{} of {} change(s) to apply\n",
        plan.to_apply(),
        plan.items.len()
    ));
    out
}

pub fn render_applied(a: &Applied) -> String {
    let mut out = format!(
        "session {}: {} write(s) done, old values journaled; undo with 'nastune tune rollback {}'\n",
        a.session, a.written, a.session
    );
    if let Some(deadline) = a.confirm_deadline_unix {
        let left = (deadline - crate::tune::deadman::now_unix_f64()).max(0.0);
        out.push_str(&format!(
            "network changes revert by themselves in {left:.0} s unless you run 'nastune tune confirm {}' (over a fresh connection)",
            a.session
        ));
        if a.deferred > 0 {
            out.push_str(&format!(
                "; their persistence ({} file write(s)) happens at confirm",
                a.deferred
            ));
        }
        out.push('\n');
    }
    out
}

pub fn render_restored(r: &Restored) -> String {
    let mut s = format!("  {} ({}): restored '{}'", r.setting, r.path, r.restored);
    if let Some(d) = &r.drifted_from {
        s.push_str(&format!(" (it had drifted to '{d}')"));
    }
    s.push('\n');
    s
}

pub fn render_rolled_back(r: &RolledBack) -> String {
    let mut out = format!(
        "session {}: rolled back {} entr{}\n",
        r.session,
        r.restored.len(),
        if r.restored.len() == 1 { "y" } else { "ies" }
    );
    for e in &r.restored {
        out.push_str(&render_restored(e));
    }
    if r.dropped > 0 {
        out.push_str(&format!(
            "  {} unconfirmed persistence write(s) dropped\n",
            r.dropped
        ));
    }
    out
}

pub fn render_verify(checks: &[Check]) -> String {
    if checks.is_empty() {
        return "nastune owns no setting here (nothing applied, or everything rolled back)\n"
            .into();
    }
    let mut out = String::new();
    for c in checks {
        let (word, detail) = match c.state {
            State::Applied => ("applied", String::new()),
            State::Drifted => (
                "drifted",
                format!(
                    ": now '{}', nastune wrote '{}' (left alone)",
                    c.current.as_deref().unwrap_or(""),
                    c.expected
                ),
            ),
            State::Unsupported => ("unsupported", ": no longer on this kernel or device".into()),
        };
        out.push_str(&format!(
            "{word:<11} {} ({}, session {}){detail}\n",
            c.setting, c.path, c.session
        ));
    }
    let count = |s: State| checks.iter().filter(|c| c.state == s).count();
    out.push_str(&format!(
        "\n{} applied, {} drifted, {} unsupported\n",
        count(State::Applied),
        count(State::Drifted),
        count(State::Unsupported)
    ));
    out
}

/// What `tune apply --reload` ran; a failed one says that the edit is in place.
pub fn render_reloads(reloads: &[crate::tune::reload::Reload]) -> String {
    let mut out = String::new();
    for r in reloads {
        let cmd = r.command.join(" ");
        match &r.error {
            None => out.push_str(&format!("reloaded: '{cmd}'\n")),
            Some(e) => out.push_str(&format!(
                "reload failed: '{cmd}': {e}\n  the edit is in place and journaled; fix the cause \
and run '{cmd}', or 'nastune tune rollback'\n"
            )),
        }
    }
    out
}
