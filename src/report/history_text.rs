//! Text for `nastune history`.

use std::fmt::Write;

use super::format::shown;
use crate::runs::{Doc, RunDocs};
use crate::store::{DISTURBED, RunRecord};

// Every string of a run record may come from another box's export file
// (`history import`), so each is printed through `shown`.

pub fn render_list(runs: &[RunRecord]) -> String {
    if runs.is_empty() {
        return "no runs stored yet; 'nastune probe' makes the first one\n".into();
    }
    let mut out = format!(
        "{:>6}  {:<20}  {:<12}  {:<9}  {}\n",
        "RUN", "STARTED (UTC)", "KIND", "STATUS", "COMMAND"
    );
    for r in runs {
        let _ = writeln!(
            out,
            "{:>6}  {:<20}  {:<12}  {:<9}  {}",
            r.id,
            crate::time::rfc3339_utc(r.started_unix.max(0) as u64),
            shown(&r.kind),
            status(&r.status),
            shown(&r.command)
        );
    }
    out
}

pub fn render_run(r: &RunRecord, documents: &[&str]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "run        {}", r.id);
    let _ = writeln!(out, "kind       {}", shown(&r.kind));
    let _ = writeln!(out, "status     {}", status(&r.status));
    let _ = writeln!(
        out,
        "started    {}",
        crate::time::rfc3339_utc(r.started_unix.max(0) as u64)
    );
    if let Some(f) = r.finished_unix {
        let _ = writeln!(
            out,
            "finished   {} ({} s)",
            crate::time::rfc3339_utc(f.max(0) as u64),
            f - r.started_unix
        );
    }
    let _ = writeln!(out, "host       {}", shown(&r.host_id));
    let _ = writeln!(out, "version    {}", shown(&r.tool_version));
    let _ = writeln!(out, "command    {}", shown(&r.command));
    let documents: Vec<_> = documents.iter().map(|d| shown(d)).collect();
    let _ = writeln!(out, "documents  {}", documents.join(", "));
    out
}

/// A run's status; a disturbed one in capitals, as its validity line says it.
fn status(s: &str) -> std::borrow::Cow<'_, str> {
    if s == DISTURBED {
        "DISTURBED".into()
    } else {
        shown(s)
    }
}

/// The results of a stored run as its command printed them: each document
/// through its own text renderer. A bench or check run's snapshot of the box
/// was not printed by its command, so it is shown only for a run that has
/// nothing else (a probe); a check's measurements are within its summary.
pub fn render_documents(run: &RunRecord, docs: &RunDocs) -> String {
    let check = docs.check().is_some();
    let only_snapshot = docs.0.iter().all(|d| matches!(d, Doc::Snapshot(_)));
    let mut parts = Vec::new();
    for d in &docs.0 {
        let text = match d {
            Doc::Snapshot(s) if only_snapshot => super::probe_text::render(s),
            Doc::Snapshot(_) => continue,
            Doc::Check(c) => super::check_text::render(c, Some(run.id)),
            _ if check => continue,
            Doc::Findings(f) => super::advise_text::render_findings(&f.findings),
            Doc::Disk(d) => super::bench_disk_text::render(d, Some(run.id)),
            Doc::Crypto(c) => super::crypto_text::render(c),
            Doc::Net(n) => super::net_text::summary(n),
            Doc::Http(h) => super::http_text::render(h),
            Doc::Smb(s) => super::smb_text::render(s),
            Doc::TunePlan(p) => super::tune_text::render_plan(p),
            Doc::TuneTry(t) => super::tune_try_text::render(t),
            Doc::Watch(w) => super::watch_text::summary(w, &[]),
        };
        parts.push(text);
    }
    parts.join("\n")
}
