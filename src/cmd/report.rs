//! `nastune report [RUN...] --html FILE | --markdown FILE`: stored runs as a
//! page to look at or a post to paste.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use crate::cli::GlobalArgs;
use crate::cli::report::ReportArgs;
use crate::report::counter_series::{self, CounterSeries};
use crate::report::runs::{Page, PageOut, ReportRun};
use crate::store::{RunId, RunKind, Store};
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
    let (path, html) = match (&args.html, &args.markdown) {
        (Some(p), _) => (p, true),
        (None, Some(p)) => (p, false),
        (None, None) => bail!("give --html FILE or --markdown FILE"),
    };
    // Every run is read here once, before the file is created: an unknown
    // run or a document that does not decode stops the report with the old
    // file as it was. Only what the page shows across runs is kept.
    let mut page = Page::default();
    for id in ids {
        page.add(&read_run(&store, id, false)?);
    }
    if path.as_os_str() == "-" {
        let out = io::BufWriter::with_capacity(64 << 10, io::stdout().lock());
        write_page(&store, &page, html, out, None)?;
    } else {
        let file = std::fs::File::create(path)
            .with_context(|| format!("cannot write the report to '{}'", path.display()))?;
        write_page(&store, &page, html, io::BufWriter::new(file), Some(path))?;
        crate::note!("nastune: wrote '{}'", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Renders `page` into `w`, flushed at the end; `path` is the file's, `None`
/// for stdout, whose text is shown safe for a terminal.
fn write_page<W: Write>(
    store: &Store,
    page: &Page,
    html: bool,
    w: W,
    path: Option<&Path>,
) -> anyhow::Result<()> {
    let mut out = Out { store, w, path };
    if html {
        crate::report::html::render(page, &mut out)?;
    } else {
        crate::report::markdown::render(page, &mut out)?;
    }
    out.w.flush().map_err(|e| out.write_error(e))
}

/// A page written as it is rendered, through a buffer: the whole page is
/// never one string.
struct Out<'a, W> {
    store: &'a Store,
    w: W,
    path: Option<&'a Path>,
}

impl<W> Out<'_, W> {
    /// A write error as itself, so that a closed pipe is still seen as one,
    /// with the file's name when there is a file.
    fn write_error(&self, e: io::Error) -> anyhow::Error {
        match self.path {
            Some(p) => anyhow::Error::new(e)
                .context(format!("cannot write the report to '{}'", p.display())),
            None => e.into(),
        }
    }
}

impl<W: Write> PageOut for Out<'_, W> {
    type Error = anyhow::Error;

    fn run(&mut self, id: RunId) -> anyhow::Result<ReportRun> {
        read_run(self.store, id, true)
    }

    fn write(&mut self, piece: &str) -> anyhow::Result<()> {
        // Fields came from trees, servers and imported runs: on stdout every
        // control character but line breaks and tabs is escaped, as
        // `output::write_text` does (a piece never splits a character).
        let r = if self.path.is_some() {
            self.w.write_all(piece.as_bytes())
        } else {
            let shown = crate::report::format::shown_text(piece, false);
            self.w.write_all(shown.as_bytes())
        };
        r.map_err(|e| self.write_error(e))
    }
}

/// Run `id` with its documents, and with `counters` its counter series when
/// it is a watch run.
fn read_run(store: &Store, id: RunId, counters: bool) -> anyhow::Result<ReportRun> {
    let rec = store.run(id)?;
    let docs = crate::runs::load(store, id)?;
    let (counters, counters_left_out) = if counters && rec.kind == RunKind::Watch.as_str() {
        load_counters(store, id, &docs)?
    } else {
        (Vec::new(), 0)
    };
    Ok(ReportRun {
        id,
        kind: rec.kind,
        started: crate::time::rfc3339_utc(rec.started_unix.max(0) as u64),
        docs,
        counters,
        counters_left_out,
    })
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
