//! Conformance of navigation, fork and branch-summary collection with pi's own code: the
//! `collectEntriesForBranchSummary`, `fork`, `forkAll` and `navigateTree` fields of every
//! pi-oracle case (tests/fixtures/pi-oracle/README.md), compared with the harness.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod collect;
mod fork;
mod navigate;

use grove::{LeafRule, Session, Strictness};
use serde_json::Value;

use crate::oracle::Case;

/// Ids as a JSON array.
pub(crate) fn id_list<'a>(ids: impl IntoIterator<Item = &'a str>) -> Value {
    Value::Array(
        ids.into_iter()
            .map(|s| Value::String(s.to_owned()))
            .collect(),
    )
}

/// A fresh strict import of the case, as the harness opened it.
pub(crate) fn fresh(case: &Case) -> Option<(grove::Store, Session)> {
    case.harness()?;
    let store = grove::Store::in_memory().ok()?;
    let report = store
        .import_file(
            &case.path,
            grove::ImportOptions {
                strictness: Strictness::Strict,
                leaf_rule: LeafRule::Auto,
                ..Default::default()
            },
        )
        .ok()?;
    let session = store.session(&report.session).ok()?;
    Some((store, session))
}

/// Resolves the oracle's `@leaf` placeholder.
pub(crate) fn resolve_leaf(v: &Value, session: &Session) -> Option<String> {
    match v.as_str() {
        Some("@leaf") => session.leaf().ok().flatten(),
        Some(s) => Some(s.to_owned()),
        None => None,
    }
}
