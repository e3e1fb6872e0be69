//! The engine's and tools' import structure (issue 29): no import circle between files, none
//! between the children of any folder, and the engine's layers importing only downward.
//!
//! `source` reads a crate's module tree and its crate-internal paths into file -> file edges,
//! `check` finds circles and upward imports, `synthetic` tests both on small trees.

mod check;
mod source;
mod synthetic;

use std::path::Path;

/// The engine's layers, bottom first: each a top-level module of engine/src (a folder `kv/` or
/// a file `open.rs`); names in one slot are peers that may import each other. A file may import
/// only its own layer and those below it. docs/design.md describes the same order.
const ENGINE_LAYERS: &[&[&str]] = &[
    &["kv"],
    &["core"],
    &["log"],
    &["tree"],
    &["context"],
    &["ops"],
    &["exchange"],
    &["maintain"],
    &["search"],
    &["open"],
    &["session"],
    &["store"],
];

/// Every import problem of the crate whose sources are in `src` (shown as `label`), the layer
/// order checked when given.
fn problems(src: &Path, label: &str, layers: Option<&[&[&str]]>) -> Vec<String> {
    match source::Crate::load(src, label) {
        Ok(krate) => check::check(&krate, layers),
        Err(error) => vec![error],
    }
}

#[test]
fn engine_has_no_import_circles_and_its_layers_point_down() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest.parent().unwrap_or(manifest);
    let found = problems(
        &workspace.join("engine/src"),
        "engine/src",
        Some(ENGINE_LAYERS),
    );
    assert!(
        found.is_empty(),
        "{} import problems (docs/design.md has the layers):\n\n{}\n",
        found.len(),
        found.join("\n\n")
    );
}

#[test]
fn tools_have_no_import_circles() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest.parent().unwrap_or(manifest);
    let found = problems(&workspace.join("tools/src"), "tools/src", None);
    assert!(
        found.is_empty(),
        "{} import problems:\n\n{}\n",
        found.len(),
        found.join("\n\n")
    );
}
