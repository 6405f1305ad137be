//! Text for `nastune compare`. Both runs may be imports from another box,
//! so every name and setting value is printed through `shown`: the verdict
//! colours make this text keep its escape sequences on a terminal.

use std::fmt::Write;

use super::format::shown;

use crate::compare::{Comparison, Row, Verdict};

pub fn render(c: &Comparison, color: bool) -> String {
    let mut out = format!(
        "run {} (A) vs run {} (B), {:.0} % confidence intervals\n\n",
        c.run_a,
        c.run_b,
        c.confidence * 100.0
    );
    if c.rows.is_empty() {
        out.push_str("no benchmark appears in both runs\n");
    }
    let mut last = "";
    for r in &c.rows {
        if r.benchmark != last {
            let _ = writeln!(out, "{}", shown(&r.benchmark));
            last = &r.benchmark;
        }
        let _ = writeln!(
            out,
            "  {:<20} {:>14} -> {:>14}  {:>8}  {:<22} {}",
            shown(r.quantity),
            value(r.a.mean, r.unit),
            value(r.b.mean, r.unit),
            r.change_pct.map_or("-".into(), |p| format!("{p:+.1}%")),
            interval(r),
            paint(r.verdict, color)
        );
    }
    for (side, list) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        for k in list.iter() {
            let _ = writeln!(out, "only in {side}: {}", shown(k));
        }
    }
    for w in &c.validity_warnings {
        let _ = writeln!(out, "warning: {}", shown(w));
    }
    out.push_str("\nsettings that differ\n");
    match &c.settings.unavailable {
        Some(why) => {
            let _ = writeln!(out, "  unknown: {}", shown(why));
        }
        None if c.settings.changed.is_empty() => out.push_str("  none\n"),
        None => {
            for ch in &c.settings.changed {
                let _ = writeln!(
                    out,
                    "  {:<50} {} -> {}",
                    shown(&ch.setting),
                    shown(ch.a.as_deref().unwrap_or("(absent)")),
                    shown(ch.b.as_deref().unwrap_or("(absent)"))
                );
            }
        }
    }
    out
}

pub fn interval(r: &Row) -> String {
    match (r.ci_low_pct, r.ci_high_pct) {
        (Some(lo), Some(hi)) => format!("[{lo:+.1}%, {hi:+.1}%] n={}/{}", r.a.n, r.b.n),
        _ => format!("n={}/{}", r.a.n, r.b.n),
    }
}

/// A mean in its unit, scaled for reading.
pub fn value(v: f64, unit: &str) -> String {
    match unit {
        // Decimal MB/s, as bench disk, check and the pages say it: compare
        // gave run 4 as 180.5 MiB/s where bench disk said 189.3 MB/s.
        "bytes/s" => crate::report::format::rate(v),
        "bits/s" => super::net_text::bits(v),
        "ns" if v >= 1e6 => format!("{:.2} ms", v / 1e6),
        "ns" if v >= 1e3 => format!("{:.1} us", v / 1e3),
        "ns" => format!("{v:.0} ns"),
        _ => format!("{v:.0} {unit}"),
    }
}

fn paint(v: Verdict, color: bool) -> String {
    let code = match v {
        Verdict::Better => "32",
        Verdict::Worse => "31",
        Verdict::WithinNoise | Verdict::NeedsRepeats => "",
    };
    if color && !code.is_empty() {
        format!("\x1b[{code}m{}\x1b[0m", v.label())
    } else {
        v.label().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figure bench disk printed as 189.3 MB/s: compare and the page's
    /// charts say it the same way, not as 180.5 MiB/s or 0.2 GiB/s.
    #[test]
    fn rates_are_decimal_mb_per_second_like_bench_disk() {
        let bw = 189_300_000.0;
        assert_eq!(value(bw, "bytes/s"), "189.3 MB/s");
        assert_eq!(
            value(bw, "bytes/s"),
            crate::report::bench_disk_text::rate(bw)
        );
        assert_eq!(value(1.7429e9, "bytes/s"), "1742.9 MB/s");
    }
}
