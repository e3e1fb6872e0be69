//! Workload generators and comparison harnesses for grove (see docs/benchmarks.md).
#![forbid(unsafe_code)]
