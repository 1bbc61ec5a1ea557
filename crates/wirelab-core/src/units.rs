//! Rates, times, sizes and percentages spelled the way `tc(8)` spells them.
//!
//! Mirrors iproute2's `get_rate64`, `get_time`, `get_size` and `get_percent`
//! (tc/tc_util.c), with one deliberate deviation: a bare number is an error rather than
//! tc's silent default unit (bits/s for rates, microseconds for times), because a missing
//! unit in a scenario is almost always a mistake.
use crate::time::Duration;
use core::fmt;

/// A value that does not parse; the message says what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError {
    /// What was given.
    pub given: String,
    /// What was expected, e.g. "a rate like 10mbit".
    pub expected: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not {}", self.given, self.expected)
    }
}
impl std::error::Error for UnitError {}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit() || c == '.' || ((c == 'e' || c == 'E') && i > 0 && s[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')) || ((c == '-' || c == '+') && (i == 0 || matches!(s.as_bytes()[i - 1], b'e' | b'E'))))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let v: f64 = s[..end].parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, s[end..].trim()))
}

const RATE: &str = "a rate like 10mbit, 1.5mbit, 100kbit, 1gbit or 125kbps (tc units)";
const TIME: &str = "a time like 20ms, 1.5s, 250us or 100ns";
const SIZE: &str = "a size like 1500, 1500b, 64k, 64kb, 4mb or 8kbit (tc units, k = 1024)";
const PERCENT: &str = "a percentage like 1% or 0.5%";

/// Rate in bits per second. tc units: `bit`, `kbit`, `mbit`, `gbit`, `tbit` (SI,
/// ×1000), `kibit`… (×1024), and `bps`, `kbps`, `mbps`, `gbps` in **bytes** per second
/// as tc reads them.
pub fn parse_rate(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError { given: s.to_string(), expected: RATE };
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let unit = unit.to_ascii_lowercase();
    let mult: f64 = match unit.as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "kibit" => 1024.0,
        "mibit" => 1024.0 * 1024.0,
        "gibit" => 1024.0 * 1024.0 * 1024.0,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(err());
    }
    Ok((v * mult).round() as u64)
}

/// Time. Units `s`/`sec`/`secs`, `ms`/`msec`/`msecs`, `us`/`usec`/`usecs`,
/// `ns`/`nsec`/`nsecs`.
pub fn parse_time(s: &str) -> Result<Duration, UnitError> {
    let err = || UnitError { given: s.to_string(), expected: TIME };
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" => 1e9,
        "ms" | "msec" | "msecs" => 1e6,
        "us" | "usec" | "usecs" => 1e3,
        "ns" | "nsec" | "nsecs" => 1.0,
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(err());
    }
    Ok(Duration::from_nanos((v * mult).round() as u64))
}

/// Size in bytes. As tc's `get_size`: bare or `b` = bytes, `k`/`kb` = 1024 bytes,
/// `m`/`mb` = 1024², `g`/`gb` = 1024³, `kbit`/`mbit`/`gbit` = that many bits (÷8).
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError { given: s.to_string(), expected: SIZE };
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1024.0,
        "m" | "mb" => 1024.0 * 1024.0,
        "g" | "gb" => 1024.0 * 1024.0 * 1024.0,
        "kbit" => 1024.0 / 8.0,
        "mbit" => 1024.0 * 1024.0 / 8.0,
        "gbit" => 1024.0 * 1024.0 * 1024.0 / 8.0,
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(err());
    }
    Ok((v * mult).round() as u64)
}

/// Percentage as a fraction in `[0, 1]`: `"1%"` → 0.01.
pub fn parse_percent(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError { given: s.to_string(), expected: PERCENT };
    let (v, unit) = split_number(s).ok_or_else(err)?;
    if unit != "%" || !(0.0..=100.0).contains(&v) {
        return Err(err());
    }
    Ok(v / 100.0)
}

/// Formats a rate the way `tc` prints it (`10Mbit`, `1544Kbit`).
pub fn format_rate(bps: u64) -> String {
    if bps >= 1_000_000_000 && bps % 1_000_000 == 0 {
        if bps % 1_000_000_000 == 0 {
            format!("{}Gbit", bps / 1_000_000_000)
        } else {
            format!("{}Mbit", bps / 1_000_000)
        }
    } else if bps >= 1_000_000 && bps % 1000 == 0 {
        if bps % 1_000_000 == 0 {
            format!("{}Mbit", bps / 1_000_000)
        } else {
            format!("{}Kbit", bps / 1000)
        }
    } else if bps >= 1000 && bps % 1000 == 0 {
        format!("{}Kbit", bps / 1000)
    } else {
        format!("{}bit", bps)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10mbit").unwrap(), 10_000_000);
        assert_eq!(parse_rate("1.5mbit").unwrap(), 1_500_000);
        assert_eq!(parse_rate("1.544Mbit").unwrap(), 1_544_000);
        assert_eq!(parse_rate("38.8kbit").unwrap(), 38_800);
        assert_eq!(parse_rate("125kbps").unwrap(), 1_000_000);
        assert_eq!(parse_rate("1gbit").unwrap(), 1_000_000_000);
        assert!(parse_rate("10").is_err());
        assert!(parse_rate("10 megabits").is_err());
        assert!(parse_rate("fast").is_err());
        assert_eq!(format_rate(1_544_000), "1544Kbit");
        assert_eq!(format_rate(100_000_000), "100Mbit");
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("20ms").unwrap(), Duration::from_millis(20));
        assert_eq!(parse_time("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_time("1e-3s").unwrap(), Duration::from_millis(1));
        assert!(parse_time("20").is_err());
        assert!(parse_time("-3ms").is_err());
    }

    #[test]
    fn sizes_and_percent() {
        assert_eq!(parse_size("1500").unwrap(), 1500);
        assert_eq!(parse_size("64k").unwrap(), 65536);
        assert_eq!(parse_size("4mb").unwrap(), 4 << 20);
        assert_eq!(parse_size("8kbit").unwrap(), 1024);
        assert!(parse_size("64q").is_err());
        assert_eq!(parse_percent("1%").unwrap(), 0.01);
        assert_eq!(parse_percent("0.5%").unwrap(), 0.005);
        assert!(parse_percent("1").is_err());
        assert!(parse_percent("101%").is_err());
        let e = parse_rate("10mbps/s").unwrap_err();
        assert!(e.to_string().contains("10mbit"), "{e}");
    }
}
