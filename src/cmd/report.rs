//! `nastune report [RUN...] --html FILE | --markdown FILE`: stored runs as a
//! page to look at or a post to paste.

use std::process::ExitCode;

use crate::cli::GlobalArgs;
use crate::cli::report::ReportArgs;
use crate::report::counter_series::{self, CounterSeries};
use crate::report::runs::ReportRun;
use crate::store::{RunId, Store};
use crate::watch::points::WatchPoint;
use anyhow::{Context, bail};

pub fn run(args: &ReportArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let Some(store) = super::open_store_to_read(global)? else {
        bail!("'report' reads the store; drop --no-store");
    };
    let ids = if args.runs.is_empty() {
        match store.runs_of(None, 1)?.first() {
            Some(r) => vec![r.id],
            None => bail!("no runs stored yet; 'nastune probe' or 'nastune bench' makes one"),
        }
    } else {
        args.runs.clone()
    };
    let mut runs = Vec::new();
    for id in ids {
        let rec = store.run(id)?;
        let docs = crate::runs::load(&store, id)?;
        let (counters, counters_left_out) = load_counters(&store, id, &docs)?;
        runs.push(ReportRun {
            id,
            kind: rec.kind.clone(),
            started: crate::time::rfc3339_utc(rec.started_unix.max(0) as u64),
            docs,
            counters,
            counters_left_out,
        });
    }
    let (path, body) = match (&args.html, &args.markdown) {
        (Some(p), _) => (p, crate::report::html::render(&runs)),
        (None, Some(p)) => (p, crate::report::markdown::render(&runs)),
        (None, None) => bail!("give --html FILE or --markdown FILE"),
    };
    if path.as_os_str() == "-" {
        crate::output::write_text(&body)?;
    } else {
        std::fs::write(path, body)
            .with_context(|| format!("cannot write the report to '{}'", path.display()))?;
        crate::note!("nastune: wrote '{}'", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The counter series a watch run stored, one series in memory at a time,
/// each downsampled for drawing; and how many were left out past the cap.
fn load_counters(
    store: &Store,
    id: RunId,
    docs: &crate::runs::RunDocs,
) -> anyhow::Result<(Vec<CounterSeries>, usize)> {
    let summary = docs.watch();
    let start = summary.and_then(|s| s.first_sample_unix_s);
    let end = summary.and_then(|s| s.last_sample_unix_s);
    let mut out = Vec::new();
    let mut left_out = 0;
    let mut current: Vec<WatchPoint> = Vec::new();
    let mut flush = |points: &mut Vec<WatchPoint>| {
        let Some(name) = points.first().map(|p| p.series.clone()) else {
            return;
        };
        if let Some(s) =
            counter_series::build(&name, points, start, end, counter_series::MAX_POINTS)
        {
            if out.len() < counter_series::MAX_CHARTS {
                out.push(s);
            } else {
                left_out += 1;
            }
        }
        points.clear();
    };
    store.watch_points(id, &mut |p| {
        if current.first().is_some_and(|c| c.series != p.series) {
            flush(&mut current);
        }
        current.push(p);
    })?;
    flush(&mut current);
    Ok((out, left_out))
}
