//! Throughput over time in the HTML report: per disk test, the rate per
//! interval, the device's own completions beside it, dirty memory against
//! the dirty limit, and a mark where the cliff or stall began.

use std::fmt::Write;

use super::runs::{PageOut, PageWriter, ReportRun};
use super::svg::{escape, nice_ticks};
use crate::timeline::Timeline;

const WIDTH: f64 = 900.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 820.0;
const TOP: f64 = 60.0;
const PLOT_H: f64 = 220.0;
const COLORS: [&str; 3] = ["#4e79a7", "#59a14f", "#f28e2b"];

/// One chart: x in seconds, MB/s on the left axis, dirty memory (MiB) on the right.
pub fn chart(title: &str, t: &Timeline) -> String {
    let height = TOP + PLOT_H + 50.0;
    let xmax = t
        .points
        .last()
        .map_or(1.0, |p| p.t_ms as f64 / 1000.0)
        .max(0.001);
    let mb = |b: f64| b / 1e6;
    // A last interval of a few ms holds a few I/Os: its rate is noise, drawn
    // as a spike (47 MB/s on a disk doing 4), so the lines leave it out.
    let full = |p: &&crate::timeline::Point| p.ms * 2 >= t.interval_ms;
    let ours: Vec<(f64, f64)> = t
        .points
        .iter()
        .filter(full)
        .map(|p| ((p.t_ms - p.ms / 2) as f64 / 1000.0, mb(p.rate())))
        .collect();
    let dev: Vec<(f64, f64)> = t
        .points
        .iter()
        .filter(full)
        .filter_map(|p| {
            let b = p.counters.dev_bytes? as f64 * 1000.0 / p.ms.max(1) as f64;
            Some(((p.t_ms - p.ms / 2) as f64 / 1000.0, mb(b)))
        })
        .collect();
    let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
    let dirty: Vec<(f64, f64)> = t
        .points
        .iter()
        .filter_map(|p| {
            let d = p.counters.dirty_bytes? + p.counters.writeback_bytes.unwrap_or(0);
            Some((p.t_ms as f64 / 1000.0, mib(d)))
        })
        .collect();
    let yticks = nice_ticks(ours.iter().chain(&dev).map(|p| p.1).fold(0.0, f64::max), 4);
    let ymax = yticks.last().copied().unwrap_or(1.0);
    let limit = t.dirty.as_ref().map(|d| mib(d.limit_bytes));
    let dticks = nice_ticks(
        dirty.iter().map(|p| p.1).chain(limit).fold(0.0, f64::max),
        4,
    );
    let dmax = dticks.last().copied().unwrap_or(1.0);
    let px = |x: f64| LEFT + x / xmax * (RIGHT - LEFT);
    let py = |y: f64| TOP + PLOT_H - y / ymax * PLOT_H;
    let pd = |y: f64| TOP + PLOT_H - y / dmax * PLOT_H;
    let bottom = TOP + PLOT_H;
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" role="img"><title>{0}</title><text x="10" y="22" class="title">{0}</text><line x1="{LEFT}" y1="{bottom:.1}" x2="{RIGHT}" y2="{bottom:.1}" class="axis" stroke="#888"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom:.1}" class="axis" stroke="#888"/>"##,
        escape(title)
    );
    for y in &yticks {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="value">{y} MB/s</text>"#,
            LEFT - 6.0,
            py(*y) + 4.0
        );
    }
    if !dirty.is_empty() {
        for y in &dticks {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="value">{y} MiB</text>"#,
                RIGHT + 6.0,
                pd(*y) + 4.0
            );
        }
    }
    for i in 0..=5u32 {
        let x = xmax * f64::from(i) / 5.0;
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="value">{x:.1} s</text>"#,
            px(x),
            bottom + 16.0
        );
    }
    let mut legend = vec![("throughput (MB/s)", COLORS[0])];
    let mut line = |pts: &[(f64, f64)], color: &str, f: &dyn Fn(f64) -> f64, dash: &str| {
        let p: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), f(*y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
            p.join(" ")
        );
    };
    line(&ours, COLORS[0], &py, "");
    if !dev.is_empty() {
        line(&dev, COLORS[1], &py, r#" stroke-dasharray="2 2""#);
        legend.push(("device completed (MB/s)", COLORS[1]));
    }
    if !dirty.is_empty() {
        line(&dirty, COLORS[2], &pd, "");
        legend.push(("dirty + writeback (MiB, right)", COLORS[2]));
    }
    if let (Some(l), false) = (limit, dirty.is_empty()) {
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{RIGHT}" y2="{0:.1}" stroke="{1}" stroke-dasharray="6 4"><title>dirty limit {l:.0} MiB</title></line><text x="{2:.1}" y="{3:.1}" text-anchor="end" class="value">dirty limit {l:.0} MiB</text>"##,
            pd(l),
            COLORS[2],
            RIGHT - 4.0,
            pd(l) - 4.0
        );
    }
    if let Some(e) = &t.event {
        let x = px(e.start_ms as f64 / 1000.0);
        // Only "cliff at 5.0 s" beside the marker: the whole line (rates,
        // longest stall) is ~90 characters, wider than the plot right of a
        // cliff past its middle, so it goes in the caption under the chart.
        let short = match e.kind {
            crate::timeline::EventKind::Cliff => "cliff",
            crate::timeline::EventKind::Stall => "stall",
        };
        let (lx, anchor) = if x > (LEFT + RIGHT) / 2.0 {
            (x - 4.0, "end")
        } else {
            (x + 4.0, "start")
        };
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom:.1}" stroke="#e15759" stroke-dasharray="4 3"/><text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" class="label" fill="#e15759">{short} at {:.1} s</text>"##,
            TOP + 12.0,
            e.start_ms as f64 / 1000.0,
        );
    }
    let mut lx = LEFT;
    for (name, color) in legend {
        let _ = write!(
            s,
            r#"<rect x="{lx:.1}" y="34" width="14" height="10" fill="{color}"/><text x="{:.1}" y="44" class="label">{}</text>"#,
            lx + 18.0,
            escape(name)
        );
        lx += 40.0 + 7.0 * name.len() as f64;
    }
    s.push_str("</svg>");
    s
}

/// The "Throughput over time" section's charts of one run: one per disk
/// test with a timeline, per sequential SMB workload with one and per
/// direction of a judged network run, each with its cause and fix under it.
/// `started` tells whether an earlier run already wrote the section's heading.
pub fn section<O: PageOut>(h: &mut PageWriter<O>, r: &ReportRun, started: &mut bool) {
    each(r, &mut |title, tl| figure(h, started, &title, tl));
}

/// Whether `r` has a chart for the section.
pub fn has_any(r: &ReportRun) -> bool {
    let mut any = false;
    each(r, &mut |_, _| any = true);
    any
}

/// Each timeline of `r` with its chart's title.
fn each(r: &ReportRun, f: &mut dyn FnMut(String, &Timeline)) {
    for t in r.docs.disks().flat_map(|d| &d.tests) {
        let Some(tl) = t.timeline.as_ref().filter(|tl| !tl.points.is_empty()) else {
            continue;
        };
        f(format!("run {} {}", r.id, t.label()), tl);
    }
    for smb in r.docs.smbs() {
        for run in &smb.runs {
            for w in &run.results {
                let Some(tl) = w.timeline.as_ref().filter(|tl| !tl.points.is_empty()) else {
                    continue;
                };
                let title = format!(
                    "run {} smb {} {} {}",
                    r.id,
                    smb.settings.target,
                    run.security.name(),
                    w.label()
                );
                f(title, tl);
            }
        }
    }
    // A network run's series are its interval reports, drawn when the
    // run judged them (runs stored before that keep their report).
    for n in r.docs.nets() {
        for nt in &n.end.timelines {
            let tl = nt.timeline(&n.intervals);
            if tl.points.is_empty() {
                continue;
            }
            let title = format!(
                "run {} net to {} {}",
                r.id,
                n.start.connecting_to.host,
                nt.direction.name()
            );
            f(title, &tl);
        }
    }
}

/// One chart with its cause and fix under it, after the section's heading
/// when it is the first.
fn figure<O: PageOut>(h: &mut PageWriter<O>, started: &mut bool, title: &str, tl: &Timeline) {
    if !*started {
        h.push_str("<h2 id=\"timeline\">Throughput over time</h2>\n");
        *started = true;
    }
    let _ = writeln!(h, "<figure>{}</figure>", chart(title, tl));
    if let Some(line) = super::timeline_text::event_line(tl) {
        let _ = writeln!(h, "<p><b>over time</b>: {}</p>", escape(&line));
    }
    if let Some(c) = &tl.cause {
        let _ = writeln!(h, "<p><b>cause</b>: {}</p>", escape(&c.summary));
        if let Some(fix) = &c.fix {
            let _ = writeln!(h, "<p><b>fix</b>: <code>{}</code></p>", escape(fix));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::timeline_text;
    use crate::timeline::detect::tests::series;
    use crate::timeline::{Context, counters::Sampled};

    /// One-second points judged as direct writes (no dirty-page context).
    fn judged(points: Vec<crate::timeline::Point>) -> Timeline {
        Timeline::judge(
            std::time::Duration::from_secs(1),
            points,
            Sampled::default(),
            Context {
                buffered_writes: false,
            },
        )
    }

    #[test]
    fn the_chart_marks_the_cliff_and_escapes_its_title() {
        let mut pts = series(1000, &[100.0, 100.0, 10.0, 10.0, 10.0]);
        for p in &mut pts {
            p.counters.dirty_bytes = Some(1 << 20);
        }
        let t = judged(pts);
        let svg = chart("<test> & co", &t);
        assert!(svg.contains("&lt;test&gt; &amp; co"), "{svg}");
        assert!(
            svg.contains(
                r##"text-anchor="start" class="label" fill="#e15759">cliff at 2.0 s</text>"##
            ),
            "{svg}"
        );
        assert!(
            timeline_text::event_line(&t)
                .unwrap()
                .starts_with("cliff at 2.0 s after 190.7 MiB"),
        );
        // The cliff's mark sits at 2 s of 5 on the axis.
        let x = LEFT + 2.0 / 5.0 * (RIGHT - LEFT);
        assert!(
            svg.contains(&format!(r#"<line x1="{x:.1}" y1="{TOP}""#)),
            "{svg}"
        );
        assert!(svg.contains("dirty + writeback"));
    }

    #[test]
    fn a_late_cliffs_label_ends_at_its_mark_inside_the_plot() {
        let t = judged(series(
            1000,
            &[100.0, 100.0, 100.0, 100.0, 100.0, 10.0, 10.0, 10.0],
        ));
        let svg = chart("late", &t);
        assert!(
            svg.contains(
                r##"text-anchor="end" class="label" fill="#e15759">cliff at 5.0 s</text>"##
            ),
            "{svg}"
        );
    }
}
