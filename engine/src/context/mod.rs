//! Contexts: what the model sees at a leaf (messages, model, thinking level, active tools).
//! [`build`] has one entry point for each way of reading a context, [`plan`] decides which
//! runs of the log a context needs, [`views`] keeps incremental materialized context views.
//!
//! May call: [`crate::tree`], [`crate::log`], [`crate::core`], [`crate::kv`].

pub mod build;
pub mod plan;
pub mod read;
pub mod views;
