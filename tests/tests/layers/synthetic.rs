//! The checker on small source trees written to a temporary folder: each test asserts the
//! exact problems found, so a checker that finds nothing cannot pass.

use super::problems;

/// The problems of the crate made of `files` (path below `src`, text), shown as `src/...`.
#[expect(
    clippy::expect_used,
    reason = "the test's own setup: a temporary folder that cannot be written fails the test"
)]
fn found(files: &[(&str, &str)], layers: Option<&[&[&str]]>) -> Vec<String> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (path, text) in files {
        let path = dir.path().join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("a folder of the tree");
        }
        std::fs::write(&path, text).expect("a file of the tree");
    }
    problems(dir.path(), "src", layers)
}

#[test]
fn a_two_file_circle_through_use_names_both_lines() {
    let problems = found(
        &[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::{B, self as bee};\npub struct A;\n"),
            (
                "b.rs",
                "pub struct B;\n\npub(crate) use crate::a::A as Ay;\n",
            ),
        ],
        None,
    );
    assert_eq!(
        problems,
        [concat!(
            "import circle between 2 files: src/a.rs, src/b.rs\n",
            "  circle: src/a.rs -> src/b.rs -> src/a.rs\n",
            "  src/a.rs:1: use crate::b::B (-> src/b.rs) (and 1 more)\n",
            "  src/b.rs:3: pub(crate) use crate::a::A (-> src/a.rs)",
        )]
    );
}

#[test]
fn a_circle_through_inline_paths_in_code_and_macros() {
    let problems = found(
        &[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            (
                "a.rs",
                "pub fn f() -> u8 {\n    super::b::g()\n}\n",
            ),
            (
                "b.rs",
                "pub fn g() -> u8 {\n    let v: Vec<u8> = vec![];\n    format!(\"{}\", crate::c::N).len() as u8\n}\n",
            ),
            ("c.rs", "pub const N: u8 = 1;\npub fn h() -> Option<crate::a::F> { None }\n"),
        ],
        None,
    );
    assert_eq!(
        problems,
        [concat!(
            "import circle between 3 files: src/a.rs, src/b.rs, src/c.rs\n",
            "  circle: src/a.rs -> src/b.rs -> src/c.rs -> src/a.rs\n",
            "  src/a.rs:2: super::b::g (-> src/b.rs)\n",
            "  src/b.rs:3: crate::c::N in format! (-> src/c.rs)\n",
            "  src/c.rs:2: crate::a::F (-> src/a.rs)",
        )]
    );
}

#[test]
fn a_folder_face_re_exporting_its_children_is_no_edge() {
    let problems = found(
        &[
            ("lib.rs", "mod kv;\n"),
            (
                "kv/mod.rs",
                "//! The face.\nmod disk;\nmod mem;\npub use mem::Mem;\npub(crate) use self::disk::{Disk, self};\n",
            ),
            ("kv/mem.rs", "use super::Disk;\npub struct Mem(Disk);\n"),
            ("kv/disk.rs", "pub struct Disk;\npub fn size(_: &super::Mem) {}\n"),
        ],
        None,
    );
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn a_folder_face_calling_its_child_is_an_edge() {
    let problems = found(
        &[
            ("lib.rs", "mod kv;\n"),
            (
                "kv/mod.rs",
                "mod mem;\npub use mem::Mem;\npub fn make() -> Mem {\n    mem::Mem::new()\n}\npub struct Config;\n",
            ),
            ("kv/mem.rs", "pub struct Mem(super::Config);\n"),
        ],
        None,
    );
    assert_eq!(
        problems,
        [concat!(
            "import circle between 2 files: src/kv/mem.rs, src/kv/mod.rs\n",
            "  circle: src/kv/mem.rs -> src/kv/mod.rs -> src/kv/mem.rs\n",
            "  src/kv/mem.rs:1: super::Config (-> src/kv/mod.rs)\n",
            "  src/kv/mod.rs:4: mem::Mem::new (-> src/kv/mem.rs)",
        )]
    );
}

#[test]
fn a_folder_circle_without_a_file_circle() {
    let problems = found(
        &[
            ("lib.rs", "mod x;\nmod y;\n"),
            ("x/mod.rs", "pub mod a;\npub mod b;\n"),
            ("x/a.rs", "use crate::y::c::C;\npub struct A(C);\n"),
            ("x/b.rs", "pub struct B;\n"),
            ("y/mod.rs", "pub mod c;\npub mod d;\n"),
            ("y/c.rs", "pub struct C;\n"),
            ("y/d.rs", "use crate::x;\npub struct D(x::b::B);\n"),
        ],
        None,
    );
    assert_eq!(
        problems,
        [concat!(
            "import circle between the children of src/: src/x/, src/y/\n",
            "  circle: src/x/ -> src/y/ -> src/x/\n",
            "  src/x/a.rs:1: use crate::y::c::C (-> src/y/c.rs)\n",
            "  src/y/d.rs:1: use crate::x (-> src/x/mod.rs) (and 1 more)",
        )]
    );
}

/// kv at the bottom, then store and session as peers.
const LAYERS: &[&[&str]] = &[&["kv"], &["store", "session"]];

#[test]
fn an_import_from_a_lower_layer_to_a_higher_one() {
    let problems = found(
        &[
            (
                "lib.rs",
                "pub mod kv;\nmod session;\nmod store;\npub use store::Durability;\n",
            ),
            ("kv/mod.rs", "mod mem;\npub use mem::Mem;\n"),
            (
                "kv/mem.rs",
                "use crate::Durability;\npub struct Mem;\npub fn open(_: crate::session::S) {}\n",
            ),
            ("store.rs", "pub enum Durability {}\npub struct Store;\n"),
            ("session.rs", "pub struct S(crate::store::Store);\n"),
        ],
        Some(LAYERS),
    );
    assert_eq!(
        problems,
        [
            "src/kv/mem.rs:1 imports src/store.rs, a higher layer (`kv` is in layer 0, `store` in layer 1): use crate::Durability",
            "src/kv/mem.rs:3 imports src/session.rs, a higher layer (`kv` is in layer 0, `session` in layer 1): crate::session::S",
        ]
    );
}

#[test]
fn a_module_in_no_layer_and_a_layer_of_no_module() {
    let problems = found(
        &[
            ("lib.rs", "mod kv;\nmod session;\nmod extra;\nmod tools;\n"),
            ("kv.rs", ""),
            ("session.rs", ""),
            ("extra.rs", ""),
            ("tools/mod.rs", ""),
        ],
        Some(LAYERS),
    );
    assert_eq!(
        problems,
        [
            "ENGINE_LAYERS names `store`, which is no top-level module of src",
            "src/extra.rs is in no layer: add it to ENGINE_LAYERS and docs/design.md",
            "src/tools/ is in no layer: add it to ENGINE_LAYERS and docs/design.md",
        ]
    );
}

#[test]
fn test_code_is_no_edge() {
    let problems = found(
        &[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::B;\npub fn f() {}\n"),
            (
                "b.rs",
                concat!(
                    "pub struct B;\n",
                    "#[cfg(test)]\n",
                    "use crate::a::f;\n",
                    "#[cfg(all(test, unix))]\n",
                    "mod tests {\n",
                    "    use crate::a;\n",
                    "}\n",
                    "#[cfg(test)]\n",
                    "mod more;\n",
                    "impl B {\n",
                    "    #[cfg(test)]\n",
                    "    fn t() { crate::a::f() }\n",
                    "}\n",
                    "#[test]\n",
                    "fn u() { super::a::f() }\n",
                    "pub fn v() {\n",
                    "    #[cfg(test)]\n",
                    "    let _ = crate::a::f();\n",
                    "}\n",
                ),
            ),
            ("b/more.rs", "use crate::a::f;\n"),
        ],
        None,
    );
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn comments_strings_and_chars_are_no_edge() {
    let problems = found(
        &[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            (
                "b.rs",
                concat!(
                    "//! Called by crate::a::A.\n",
                    "/// See [`crate::a::A`].\n",
                    "pub struct B<'a>(&'a str);\n",
                    "// crate::a::A\n",
                    "/* crate::a::A /* crate::a::A */ */\n",
                    "const S: &str = \"crate::a::A\";\n",
                    "const R: &str = r##\"crate::a::A \"# \"##;\n",
                    "const C: char = '\"';\n",
                    "pub fn f() -> String {\n",
                    "    format!(\"crate::a::A {}\", 'x')\n",
                    "}\n",
                ),
            ),
        ],
        None,
    );
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn an_unreadable_tree_is_a_problem_not_a_pass() {
    let problems = found(&[("lib.rs", "mod a;\n")], None);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].starts_with("src/lib.rs:1: `mod a;` finds neither"),
        "{problems:?}"
    );
    let problems = found(&[("lib.rs", "mod a;\n"), ("a.rs", "fn (\n")], None);
    assert_eq!(problems.len(), 1);
    assert!(problems[0].starts_with("src/a.rs:1:"), "{problems:?}");
}
