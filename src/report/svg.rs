//! Hand-written inline SVG: grouped horizontal bars and line charts. Every
//! piece of text goes through `escape`, so labels cannot break the markup.

use std::fmt::Write;

const WIDTH: f64 = 900.0;
const LEFT: f64 = 330.0;
const RIGHT: f64 = 110.0;
const PALETTE: [&str; 6] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1",
];

/// Escapes text for XML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even when escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// One named series of values, one per category (`None`: not measured).
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// Grouped horizontal bars: one group per category, one bar per series.
/// `fmt` turns a value into its label.
pub fn bar_chart(
    s: &mut impl Write,
    title: &str,
    categories: &[String],
    series: &[Series],
    fmt: &dyn Fn(f64) -> String,
) {
    let bar_h = 16.0;
    let group_h = bar_h * series.len().max(1) as f64 + 10.0;
    let legend_h = 20.0;
    let height = 40.0 + legend_h + group_h * categories.len() as f64 + 10.0;
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0_f64, |m, v| m.max(*v));
    let scale = if max > 0.0 {
        (WIDTH - LEFT - RIGHT) / max
    } else {
        0.0
    };
    open(s, title, height);
    legend(s, series.iter().map(|x| x.name.as_str()), 40.0);
    for (ci, cat) in categories.iter().enumerate() {
        let y0 = 40.0 + legend_h + group_h * ci as f64;
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="label">{}</text>"#,
            LEFT - 8.0,
            y0 + group_h / 2.0,
            escape(cat)
        );
        for (si, ser) in series.iter().enumerate() {
            let y = y0 + bar_h * si as f64;
            let color = PALETTE[si % PALETTE.len()];
            match ser.values.get(ci).copied().flatten() {
                Some(v) => {
                    let w = (v.max(0.0) * scale).max(1.0);
                    let _ = write!(
                        s,
                        r#"<rect x="{LEFT:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{color}"><title>{}: {}</title></rect><text x="{:.1}" y="{:.1}" class="value">{}</text>"#,
                        bar_h - 2.0,
                        escape(&ser.name),
                        escape(&fmt(v)),
                        LEFT + w + 4.0,
                        y + bar_h - 5.0,
                        escape(&fmt(v))
                    );
                }
                None => {
                    let _ = write!(
                        s,
                        r#"<text x="{:.1}" y="{:.1}" class="value">not measured</text>"#,
                        LEFT + 4.0,
                        y + bar_h - 5.0
                    );
                }
            }
        }
    }
    let _ = s.write_str("</svg>");
}

/// One named line of (x, y) points.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Lines over shared axes; `x_ticks` are (position, label) pairs, y starts at 0.
pub fn line_chart(
    s: &mut impl Write,
    title: &str,
    y_label: &str,
    lines: &[Line],
    x_ticks: &[(f64, String)],
    fmt_y: &dyn Fn(f64) -> String,
) {
    let legend_h = 20.0 * lines.len().div_ceil(3) as f64;
    let (top, plot_h) = (40.0 + legend_h, 260.0);
    let height = top + plot_h + 50.0;
    let (left, right) = (90.0, WIDTH - 30.0);
    let xs = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .chain(x_ticks.iter().map(|t| t.0));
    let (xmin, xmax) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    // y on a log scale between whole decades: latencies span 100 µs at p50
    // to 50 ms at p99.99, and a linear axis drew p50 flat on the floor.
    let ys = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|y| *y > 0.0);
    let (ymin, ymax) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    let (lo, hi) = if ymax >= ymin {
        let lo = ymin.log10().floor();
        (lo, ymax.log10().ceil().max(lo + 1.0))
    } else {
        (0.0, 1.0)
    };
    let xspan = if xmax > xmin { xmax - xmin } else { 1.0 };
    let px = |x: f64| left + (x - xmin) / xspan * (right - left);
    let py = |y: f64| top + plot_h - (y.max(10f64.powf(lo)).log10() - lo) / (hi - lo) * plot_h;
    open(s, title, height);
    legend_rows(s, lines.iter().map(|l| l.name.as_str()), 40.0);
    let decades: Vec<f64> = (lo as i32..=hi as i32).map(|e| 10f64.powi(e)).collect();
    axes(s, (left, right), (top, plot_h), &decades, &py, fmt_y);
    for (i, (x, label)) in x_ticks.iter().enumerate() {
        x_label(s, px(*x), top + plot_h + 16.0, label, i, x_ticks.len());
    }
    let _ = write!(
        s,
        r#"<text x="{left}" y="{:.1}" class="label">{}</text>"#,
        top + plot_h + 38.0,
        escape(y_label)
    );
    for (i, l) in lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        polyline(s, l.points.iter().map(|(x, y)| (px(*x), py(*y))), color);
        for (x, y) in &l.points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"><title>{}: {}</title></circle>"#,
                px(*x),
                py(*y),
                escape(&l.name),
                escape(&fmt_y(*y))
            );
        }
    }
    let _ = s.write_str("</svg>");
}

/// One quantity over wall-clock time: a polyline of (Unix seconds, value)
/// with y from 0, and each event a dashed vertical mark whose tooltip names it.
pub fn time_chart(
    s: &mut impl Write,
    title: &str,
    y_label: &str,
    points: &[(f64, f64)],
    events: &[(f64, &str)],
    fmt_y: &dyn Fn(f64) -> String,
) {
    let (top, plot_h) = (34.0, 150.0);
    let height = top + plot_h + 44.0;
    let (left, right) = (90.0, WIDTH - 30.0);
    let ts = points.iter().map(|p| p.0).chain(events.iter().map(|e| e.0));
    let (tmin, tmax) = ts.fold((f64::MAX, f64::MIN), |(a, b), t| (a.min(t), b.max(t)));
    let span = if tmax > tmin { tmax - tmin } else { 1.0 };
    let ticks = nice_ticks(points.iter().map(|p| p.1).fold(0.0_f64, f64::max), 4);
    let ymax = ticks.last().copied().unwrap_or(1.0);
    let px = |t: f64| left + (t - tmin) / span * (right - left);
    let py = |y: f64| top + plot_h - y / ymax * plot_h;
    open(s, title, height);
    axes(s, (left, right), (top, plot_h), &ticks, &py, fmt_y);
    if tmax >= tmin {
        for i in 0..=4u32 {
            let t = tmin + span * f64::from(i) / 4.0;
            x_label(
                s,
                px(t),
                top + plot_h + 16.0,
                &time_label(t, span),
                i as usize,
                5,
            );
        }
    }
    let _ = write!(
        s,
        r#"<text x="{left}" y="{:.1}" class="label">{}</text>"#,
        top + plot_h + 36.0,
        escape(y_label)
    );
    for (t, name) in events {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{top:.1}" x2="{0:.1}" y2="{1:.1}" class="event" stroke="#e15759" stroke-dasharray="4 3"><title>{2} at {3}</title></line>"##,
            px(*t),
            top + plot_h,
            escape(name),
            escape(&crate::time::rfc3339_utc(t.max(0.0) as u64))
        );
    }
    polyline(s, points.iter().map(|(t, y)| (px(*t), py(*y))), PALETTE[0]);
    let _ = s.write_str("</svg>");
}

/// A line through `points` (in pixels), written as it goes: a chart of every
/// run's curve holds no list of them.
fn polyline(s: &mut impl Write, points: impl Iterator<Item = (f64, f64)>, color: &str) {
    let _ = s.write_str(r#"<polyline points=""#);
    for (i, (x, y)) in points.enumerate() {
        let _ = write!(s, "{}{x:.1},{y:.1}", if i > 0 { " " } else { "" });
    }
    let _ = write!(s, r#"" fill="none" stroke="{color}" stroke-width="2"/>"#);
}

/// UTC time for an axis: the date and minutes over long spans, seconds over short ones.
fn time_label(t: f64, span: f64) -> String {
    let full = crate::time::rfc3339_utc(t.max(0.0) as u64);
    let cut = if span < 600.0 { 19 } else { 16 };
    full.get(5..cut).unwrap_or(&full).replace('T', " ")
}

/// The x and y axis lines and a label at each of `ticks` (values), placed
/// by `py`.
fn axes(
    s: &mut impl Write,
    (left, right): (f64, f64),
    (top, plot_h): (f64, f64),
    ticks: &[f64],
    py: &dyn Fn(f64) -> f64,
    fmt_y: &dyn Fn(f64) -> String,
) {
    let bottom = top + plot_h;
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{bottom:.1}" x2="{right}" y2="{bottom:.1}" class="axis" stroke="#888"/><line x1="{left}" y1="{top:.1}" x2="{left}" y2="{bottom:.1}" class="axis" stroke="#888"/>"##
    );
    for y in ticks {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="value">{}</text>"#,
            left - 6.0,
            py(*y) + 4.0,
            escape(&fmt_y(*y))
        );
    }
}

/// An x-axis label: the first starts at its tick and the last ends at it,
/// so neither runs past the picture's edge (a centred last time label was
/// cut off at the right).
fn x_label(s: &mut impl Write, x: f64, y: f64, label: &str, i: usize, n: usize) {
    let anchor = match i {
        0 => "start",
        i if i + 1 == n => "end",
        _ => "middle",
    };
    let _ = write!(
        s,
        r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" class="value">{}</text>"#,
        escape(label)
    );
}

/// Ticks from 0 to at least `max` in steps of 1, 2 or 5 times a power of
/// ten, about `n` of them: 0, 10 000, 20 000, 30 000 for a maximum of 27 615
/// instead of 0, 13 808, 27 615.
pub fn nice_ticks(max: f64, n: u32) -> Vec<f64> {
    if !(max.is_finite() && max > 0.0) {
        return vec![0.0, 1.0];
    }
    let raw = max / f64::from(n.max(1));
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let steps = (max / step - 1e-9).ceil().max(1.0) as u32;
    (0..=steps).map(|i| step * f64::from(i)).collect()
}

/// A duration in nanoseconds with the unit its size calls for, no needless
/// decimals: `100 µs`, `1 ms`, `2.5 s`.
pub fn duration_ns(ns: f64) -> String {
    let (v, unit) = match ns.abs() {
        a if a >= 1e9 => (ns / 1e9, "s"),
        a if a >= 1e6 => (ns / 1e6, "ms"),
        a if a >= 1e3 => (ns / 1e3, "µs"),
        _ => (ns, "ns"),
    };
    let text = format!("{v:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

fn open(s: &mut impl Write, title: &str, height: f64) {
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" role="img"><title>{0}</title><text x="10" y="22" class="title">{0}</text>"#,
        escape(title)
    );
}

fn legend<'a>(s: &mut impl Write, names: impl Iterator<Item = &'a str>, y: f64) {
    let mut x = LEFT;
    for (i, n) in names.enumerate() {
        swatch(s, i, x, y, n);
        x += 24.0 + 7.0 * n.chars().count() as f64;
    }
}

fn legend_rows<'a>(s: &mut impl Write, names: impl Iterator<Item = &'a str>, y: f64) {
    for (i, n) in names.enumerate() {
        swatch(
            s,
            i,
            90.0 + 270.0 * (i % 3) as f64,
            y + 20.0 * (i / 3) as f64,
            n,
        );
    }
}

fn swatch(s: &mut impl Write, i: usize, x: f64, y: f64, name: &str) {
    let _ = write!(
        s,
        r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{y:.1}" class="value">{}</text>"#,
        y - 10.0,
        PALETTE[i % PALETTE.len()],
        x + 16.0,
        escape(name)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a chart writes, as one string.
    fn drawn(chart: impl FnOnce(&mut String)) -> String {
        let mut s = String::new();
        chart(&mut s);
        s
    }

    const HOSTILE: &str = "<script>alert('x')</script> & \"q\" \u{1}";

    #[test]
    fn escape_covers_markup_and_control_characters() {
        assert_eq!(
            escape(HOSTILE),
            "&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; &quot;q&quot;  "
        );
    }

    #[test]
    fn charts_are_well_formed_xml_even_with_hostile_labels() {
        let bars = drawn(|s| {
            bar_chart(
                s,
                HOSTILE,
                &[HOSTILE.to_string(), "b".into()],
                &[
                    Series {
                        name: HOSTILE.into(),
                        values: vec![Some(10.0), None],
                    },
                    Series {
                        name: "run 2".into(),
                        values: vec![Some(5.0), Some(0.0)],
                    },
                ],
                &|v| format!("{v} <u>"),
            )
        });
        let lines = drawn(|s| {
            line_chart(
                s,
                HOSTILE,
                HOSTILE,
                &[Line {
                    name: HOSTILE.into(),
                    points: vec![(1.0, 2.0), (2.0, 8.0)],
                }],
                &[(1.0, "p50".into()), (2.0, "<p99>".into())],
                &|v| format!("{v}"),
            )
        });
        let times = drawn(|s| {
            time_chart(
                s,
                HOSTILE,
                HOSTILE,
                &[(1_790_000_000.0, 0.0), (1_790_007_200.0, 3.0)],
                &[(1_790_003_600.0, HOSTILE)],
                &|v| format!("{v} <u>"),
            )
        });
        for svg in [&bars, &lines, &times] {
            let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
            assert_eq!(doc.root_element().tag_name().name(), "svg");
            assert!(!svg.contains("<script>"));
        }
        let doc = roxmltree::Document::parse(&bars).expect("well-formed SVG");
        // Two series over two categories: three bars and one "not measured".
        assert_eq!(
            doc.descendants().filter(|n| n.has_tag_name("rect")).count(),
            2 + 3
        );
        assert!(bars.contains("not measured"));
    }

    #[test]
    fn time_chart_draws_every_point_and_marks_events() {
        let points: Vec<(f64, f64)> = (0..7)
            .map(|i| (1_790_000_000.0 + 7200.0 * f64::from(i), f64::from(i)))
            .collect();
        let svg = drawn(|s| {
            time_chart(
                s,
                "drops",
                "increase",
                &points,
                &[(1_790_007_200.0, "wrap"), (1_790_014_400.0, "reset")],
                &|v| format!("{v}"),
            )
        });
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let line = doc
            .descendants()
            .find(|n| n.has_tag_name("polyline"))
            .expect("a polyline");
        let pts: Vec<(f64, f64)> = line
            .attribute("points")
            .unwrap()
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert_eq!(pts.len(), 7);
        // Left to right, rising (SVG y grows downwards), inside the picture.
        assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 > w[1].1));
        assert_eq!((pts[0].0, pts[6].0), (90.0, WIDTH - 30.0));
        let marks: Vec<_> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("event"))
            .collect();
        assert_eq!(marks.len(), 2);
        assert!(svg.contains("wrap at 2026-09-21T"), "{svg}");
        assert!(
            svg.contains(">09-21 14:13<"),
            "x labels are UTC times: {svg}"
        );
    }

    /// (x, y, anchor, text) of every text element.
    fn texts(svg: &str) -> Vec<(f64, f64, String, String)> {
        let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| {
                let num = |a: &str| n.attribute(a).and_then(|v| v.parse().ok()).unwrap_or(0.0);
                (
                    num("x"),
                    num("y"),
                    n.attribute("text-anchor").unwrap_or("start").to_string(),
                    n.text().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// The watch chart of a counter at 27 615: ticks at round values from
    /// 0, and the last time label ends inside the picture.
    #[test]
    fn time_chart_ticks_are_round_and_labels_stay_inside() {
        let points: Vec<(f64, f64)> = [0.0, 9000.0, 12000.0, 20000.0, 27615.0]
            .iter()
            .enumerate()
            .map(|(i, v)| (1_790_000_000.0 + i as f64, *v))
            .collect();
        let svg = drawn(|s| time_chart(s, "x", "increase", &points, &[], &|v| format!("{v}")));
        let t = texts(&svg);
        let y_labels: Vec<&str> = t
            .iter()
            .filter(|(x, ..)| *x == 84.0)
            .map(|(.., s)| s.as_str())
            .collect();
        assert_eq!(y_labels, ["0", "10000", "20000", "30000"], "{svg}");
        let times: Vec<&(f64, f64, String, String)> =
            t.iter().filter(|(.., s)| s.starts_with("09-21")).collect();
        assert_eq!(times.len(), 5, "{svg}");
        assert_eq!(times[0].2, "start");
        let last = times.last().unwrap();
        assert_eq!((last.0, last.2.as_str()), (WIDTH - 30.0, "end"), "{svg}");
    }

    /// Latencies from 200 µs at p50 to 47 ms at p99.99 on a log axis: p50
    /// is well off the floor, and the ticks are whole decades in one word.
    #[test]
    fn latency_axis_is_logarithmic_with_decade_ticks() {
        let line = Line {
            name: "run 1 RND4K Q32T1 read".into(),
            points: vec![(0.3, 210_000.0), (1.0, 280_000.0), (4.0, 47_000_000.0)],
        };
        let svg =
            drawn(|s| line_chart(s, "lat", "p", &[line], &[(0.3, "p50".into())], &duration_ns));
        let t = texts(&svg);
        let ticks: Vec<&str> = t
            .iter()
            .filter(|(x, _, a, _)| *x == 84.0 && a == "end")
            .map(|(.., s)| s.as_str())
            .collect();
        assert_eq!(ticks, ["100 µs", "1 ms", "10 ms", "100 ms"], "{svg}");
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let ys: Vec<f64> = doc
            .descendants()
            .filter(|n| n.has_tag_name("circle"))
            .map(|n| n.attribute("cy").unwrap().parse().unwrap())
            .collect();
        // The plot's floor is at 60 + 260: on a linear axis to 47 ms, p50
        // sat 1.2 px above it and p90 0.4 px higher; on the log one p50 is
        // 28 px up and p90 11 px above that.
        let floor = 60.0 + 260.0;
        assert!(floor - ys[0] > 20.0 && ys[0] - ys[1] > 5.0, "{ys:?}");
    }

    #[test]
    fn nice_ticks_and_durations() {
        assert_eq!(nice_ticks(27_615.0, 4), [0.0, 10_000.0, 20_000.0, 30_000.0]);
        assert_eq!(nice_ticks(396.0, 4), [0.0, 100.0, 200.0, 300.0, 400.0]);
        assert_eq!(nice_ticks(7.0, 4), [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(nice_ticks(0.0, 4), [0.0, 1.0]);
        assert_eq!(duration_ns(0.0), "0 ns");
        assert_eq!(duration_ns(100_000.0), "100 µs");
        assert_eq!(duration_ns(23_680_000.0), "23.68 ms");
        assert_eq!(duration_ns(1e9), "1 s");
    }
}
