//! The one progress bar of long operations (bench disk, crypto and net,
//! check). It is drawn on stderr only when stderr is a terminal (and TERM is
//! not "dumb"), so logs, pipes and `--json` consumers get nothing; it is plain
//! characters without colour, so NO_COLOR has nothing to turn off.

use std::io::{IsTerminal, Write};

/// Characters of the bar itself.
const WIDTH: usize = 30;
/// Characters of the label, so the line fits an 80-column terminal.
const LABEL: usize = 40;

pub struct Progress {
    on: bool,
    drawn: bool,
}

impl Progress {
    /// A bar on stderr when it is an interactive terminal, else a silent one.
    pub fn stderr() -> Self {
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Progress {
            on: std::io::stderr().is_terminal() && !dumb,
            drawn: false,
        }
    }

    /// Redraws the line: `label` and `fraction` (0.0 to 1.0) done.
    pub fn draw(&mut self, label: &str, fraction: f64) {
        if !self.on {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{}", line(&crate::escape::shown(label), fraction));
        let _ = err.flush();
        self.drawn = true;
    }

    /// Wipes the line, so what is printed next starts on a clean one.
    pub fn clear(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r{:80}\r", "");
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

/// `[#######.......]  50% label`, the label cut or padded to a fixed width.
pub fn line(label: &str, fraction: f64) -> String {
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let filled = (f * WIDTH as f64) as usize;
    let label: String = label.chars().take(LABEL).collect();
    format!(
        "[{}{}] {:>3.0}% {label:<LABEL$}",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        f * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_is_fixed_width_and_clamped() {
        assert_eq!(
            line("crypto", 0.5),
            format!(
                "[{}{}]  50% {:<40}",
                "#".repeat(15),
                ".".repeat(15),
                "crypto"
            )
        );
        let long = "é".repeat(100);
        for (f, pct) in [(-1.0, "  0%"), (2.0, "100%"), (f64::NAN, "  0%")] {
            let l = line(&long, f);
            assert_eq!(l.chars().count(), 1 + WIDTH + 2 + 4 + 1 + LABEL, "{l}");
            assert!(l.contains(pct), "{l}");
        }
    }
}
