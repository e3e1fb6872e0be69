//! grove's integration tests: one test binary (faster to link than one per file).
#![forbid(unsafe_code)]

mod cli;
mod codec;
mod crash;
mod engine;
mod layers;
mod oracle;
mod oracle_ops;
mod serve;
