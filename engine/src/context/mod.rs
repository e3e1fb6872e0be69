//! Contexts: what the model sees at a leaf (messages, model, thinking level, active tools).
//! [`read`] has one entry point for each way of reading a context, [`build`] folds one,
//! [`plan`] decides which runs of the log a streamed read needs, [`views`] keeps incremental
//! materialized context views, [`foreign`] builds the contexts of other tools' transcripts by
//! their rules. Files, bottom to top: `build`, `foreign`, `views`, `plan`, `read`.
//!
//! May call: [`crate::tree`], [`crate::log`], [`crate::core`], [`crate::kv`].

pub mod build;
pub mod foreign;
pub mod plan;
pub mod read;
pub mod views;
