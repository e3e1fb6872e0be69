//! cli tests.
