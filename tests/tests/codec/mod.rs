//! codec tests.
