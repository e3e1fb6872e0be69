//! Keeping a store sound: verification ([`verify`]), salvage ([`salvage`]) and payload
//! collection ([`gc`]).
//!
//! May call: [`crate::exchange`] and every layer below it.

pub mod gc;
pub mod report;
pub mod rewrite;
pub mod salvage;
pub mod verify;
