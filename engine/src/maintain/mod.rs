//! Keeping a store sound: verification ([`verify`]) and salvage ([`salvage`]).
//!
//! May call: [`crate::exchange`] and every layer below it.

pub mod salvage;
pub mod verify;
