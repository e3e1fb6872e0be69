//! Keeping a store sound: verification ([`verify`]), salvage ([`salvage`]), payload
//! collection ([`gc`]), the rewrite of its files ([`rewrite`]) and retention ([`retain`]).
//!
//! May call: [`crate::exchange`] and every layer below it.

pub mod gc;
pub mod report;
pub mod retain;
pub mod rewrite;
pub mod salvage;
pub mod verify;
