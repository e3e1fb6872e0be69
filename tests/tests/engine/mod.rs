//! engine tests.
