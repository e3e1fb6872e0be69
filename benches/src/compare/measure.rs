//! Timing (medians over repeated runs after warm-up), sizes on disk, and number formatting.

use std::path::Path;
use std::time::Duration;

use crate::Result;

/// The spread of repeated runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Median.
    pub median: Duration,
    /// Fastest run.
    pub min: Duration,
    /// Slowest run.
    pub max: Duration,
    /// Measured runs (warm-up excluded).
    pub runs: usize,
}

impl Stats {
    /// The spread of `times` (at least one).
    pub fn of(mut times: Vec<Duration>) -> Stats {
        if times.is_empty() {
            times.push(Duration::ZERO);
        }
        times.sort();
        let n = times.len();
        let median = if n % 2 == 1 {
            times[n / 2]
        } else {
            (times[n / 2 - 1] + times[n / 2]) / 2
        };
        Stats {
            median,
            min: times[0],
            max: times[n - 1],
            runs: n,
        }
    }

    /// Median seconds.
    pub fn secs(&self) -> f64 {
        self.median.as_secs_f64()
    }
}

/// Runs `once` `warmup` times unmeasured, then `runs` times; each call returns the duration
/// of its own measured part (setup and teardown excluded).
pub fn measure(
    warmup: usize,
    runs: usize,
    mut once: impl FnMut() -> Result<Duration>,
) -> Result<Stats> {
    for _ in 0..warmup {
        once()?;
    }
    let mut times = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        times.push(once()?);
    }
    Ok(Stats::of(times))
}

/// The sum of the sizes of the files under `dir`.
pub fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for item in std::fs::read_dir(&d)? {
            let item = item?;
            let meta = item.metadata()?;
            if meta.is_dir() {
                stack.push(item.path());
            } else {
                total += meta.len();
            }
        }
    }
    Ok(total)
}

/// Waits until sled has released the file lock of the database in `dir`. sled lets go of it
/// from a background thread after the last handle is dropped, while its last writes finish;
/// waiting keeps that work out of the next measurement and lets the next open succeed.
pub fn wait_for_release(dir: &Path) -> Result<()> {
    let db = dir.join("db");
    let start = std::time::Instant::now();
    loop {
        let file = match std::fs::OpenOptions::new().read(true).write(true).open(&db) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
        }
        drop(file);
        if start.elapsed() > Duration::from_secs(300) {
            return Err(format!("{}: sled still holds its lock after 300 s", db.display()).into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The size of a file, 0 when absent.
pub fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// A duration with a unit that suits it: `812 µs`, `3.41 ms`, `1.27 s`.
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// Bytes as `512 B`, `3.4 KiB`, `12.0 MiB`, `1.25 GiB`.
pub fn fmt_bytes(b: u64) -> String {
    let f = b as f64;
    if f >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", f / (1u64 << 30) as f64)
    } else if f >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", f / (1u64 << 20) as f64)
    } else if f >= 1024.0 {
        format!("{:.1} KiB", f / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// A rate with thousands separators: `123,456/s`.
pub fn fmt_rate(per_sec: f64) -> String {
    format!("{}/s", fmt_count(per_sec.round() as u64))
}

/// An integer with thousands separators.
pub fn fmt_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A ratio as `0.42×` / `12.3×` / `1,234×`.
pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() {
        "–".to_owned()
    } else if r >= 100.0 {
        format!("{}×", fmt_count(r.round() as u64))
    } else if r >= 10.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.2}×")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_formats() {
        let mut t = [5u64, 1, 3].into_iter();
        let s = measure(0, 3, || Ok(Duration::from_millis(t.next().unwrap_or(0)))).unwrap();
        assert_eq!(s.median, Duration::from_millis(3));
        assert_eq!(s.min, Duration::from_millis(1));
        assert_eq!(fmt_count(1_234_567), "1,234,567");
        assert_eq!(fmt_count(12), "12");
        assert_eq!(fmt_duration(Duration::from_micros(1500)), "1.50 ms");
        assert_eq!(fmt_bytes(3 << 20), "3.0 MiB");
        assert_eq!(fmt_ratio(0.5), "0.50×");
    }
}
