//! oracle tests.
