//! Issue 28 §10: a new store was created 0755 and its files 0644, so any local user read
//! every session from the files. A new store is 0700 and the files grove and its backend
//! make at its creation 0600; a store that exists keeps its modes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{fixture, Grove};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn a_new_store_is_readable_by_its_owner_only() {
    let seed = fixture("edge-seed-harness.jsonl");
    for (backend, data) in [("sled", &["db", "conf"][..]), ("redb", &["grove.redb"][..])] {
        let g = Grove::new();
        let nested = g.store_dir().join("a").join("b");
        // A writer creates the store, another one opens it again.
        for command in ["import", "gc"] {
            let out = std::process::Command::new(super::grove_bin())
                .arg("--store")
                .arg(&nested)
                .args(["--backend", backend, command])
                .args((command == "import").then_some(&seed))
                .output()
                .unwrap();
            super::assert_success(&[command], &out);
        }
        // Every directory grove created, the store's parents included.
        for dir in [g.store_dir(), g.store_dir().join("a"), nested.clone()] {
            assert_eq!(mode(&dir), 0o700, "{backend}: {}", dir.display());
        }
        for file in ["grove.lock", "grove.commit"].iter().chain(data) {
            assert_eq!(mode(&nested.join(file)), 0o600, "{backend}: {file}");
        }
        // Whatever else the backend left there (sled's snapshots): nothing for others.
        for entry in std::fs::read_dir(&nested).unwrap() {
            let path = entry.unwrap().path();
            let m = mode(&path);
            if backend == "sled" && path.to_string_lossy().contains("snap.") {
                // Written as sled closes: inside the 0700 directory, made 0600 at the next open.
                continue;
            }
            assert_eq!(m & 0o077, 0, "{backend}: {} is {m:o}", path.display());
        }
    }
}

#[test]
fn an_existing_store_directory_keeps_its_mode() {
    let g = Grove::new();
    std::fs::create_dir(g.store_dir()).unwrap();
    std::fs::set_permissions(g.store_dir(), std::fs::Permissions::from_mode(0o750)).unwrap();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(mode(&g.store_dir()), 0o750);
    // The files grove makes are its owner's alone all the same.
    for file in ["grove.lock", "grove.commit", "db", "conf"] {
        assert_eq!(mode(&g.store_dir().join(file)), 0o600, "{file}");
    }
}
