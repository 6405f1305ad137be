//! Text for `nastune history`.

use std::fmt::Write;

use super::format::shown;
use crate::store::RunRecord;

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
            shown(&r.status),
            shown(&r.command)
        );
    }
    out
}

pub fn render_run(r: &RunRecord, documents: &[&str]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "run        {}", r.id);
    let _ = writeln!(out, "kind       {}", shown(&r.kind));
    let _ = writeln!(out, "status     {}", shown(&r.status));
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
