//! What the criterion benches share: unwrapping setup results and the criterion settings.

use std::fmt::Debug;
use std::time::Duration;

use criterion::Criterion;

/// The value of a setup step; a failure ends the benchmark with its error.
pub fn ok<T, E: Debug>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e:?}"),
    }
}

/// 20 samples, 1 s of warm-up, `measure_secs` of measurement, no plots.
pub fn config(measure_secs: u64) -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(measure_secs))
        .without_plots()
}
