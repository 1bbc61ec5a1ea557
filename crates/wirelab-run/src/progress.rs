//! `wirelab run`'s progress display: a bar on a terminal; with `--progress` and no
//! terminal (a log file, CI, `nohup`), a plain line every few seconds, since a bar redrawn
//! with `\r` is invisible or garbage there.
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Seconds between two plain lines.
const LINE_EVERY: Duration = Duration::from_secs(3);

/// How progress is shown.
pub(crate) enum Shown {
    /// Nothing (quiet, or no terminal and no `--progress`).
    Off,
    /// An indicatif bar on the terminal.
    Bar(indicatif::ProgressBar),
    /// Plain lines on stderr.
    Lines { start: Instant, last: Instant },
}

impl Shown {
    /// `enabled` = not quiet; `forced` = `--progress`.
    pub(crate) fn new(enabled: bool, forced: bool) -> Shown {
        if !enabled {
            return Shown::Off;
        }
        if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(1000);
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {msg} (eta {eta})").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            return Shown::Bar(b);
        }
        if forced {
            let now = Instant::now();
            return Shown::Lines { start: now, last: now };
        }
        Shown::Off
    }

    /// Simulated `t` of `total` seconds reached.
    pub(crate) fn update(&mut self, t: f64, total: f64) {
        match self {
            Shown::Off => {}
            Shown::Bar(b) => {
                b.set_position(((t / total) * 1000.0) as u64);
                b.set_message(format!("{t:.1}/{total:.1} s simulated"));
            }
            Shown::Lines { start, last } => {
                let now = Instant::now();
                if now.duration_since(*last) < LINE_EVERY {
                    return;
                }
                *last = now;
                let _ = writeln!(std::io::stderr().lock(), "{}", line(t, total, now.duration_since(*start).as_secs_f64()));
            }
        }
    }

    /// Clears the bar.
    pub(crate) fn finish(self) {
        if let Shown::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}

/// `progress: 12.0/60.0 s simulated (20%), 4 s wall, eta 16 s`.
fn line(t: f64, total: f64, wall: f64) -> String {
    let frac = if total > 0.0 { (t / total).clamp(0.0, 1.0) } else { 1.0 };
    let eta = if frac > 0.0 { format!("{:.0} s", wall * (1.0 - frac) / frac) } else { "?".into() };
    format!("progress: {t:.1}/{total:.1} s simulated ({:.0}%), {wall:.0} s wall, eta {eta}", frac * 100.0)
}

#[cfg(test)]
mod test {
    #[test]
    fn a_plain_line_says_where_the_run_is() {
        assert_eq!(super::line(12.0, 60.0, 4.0), "progress: 12.0/60.0 s simulated (20%), 4 s wall, eta 16 s");
        assert_eq!(super::line(0.0, 60.0, 1.0), "progress: 0.0/60.0 s simulated (0%), 1 s wall, eta ?");
    }
}
