//! `--backend` and `--durability`: the global options that choose how the store is opened.

use std::process::{Command, Stdio};

use grove::{Backend, Store, StoreConfig};

use super::{fixture, grove_bin, Grove};

fn open_redb(g: &Grove) -> Store {
    let dir = g.store_dir();
    Store::open_with(StoreConfig::new(&dir).backend(Backend::Redb(dir.clone()))).unwrap()
}

#[test]
fn demo_then_ls_on_a_redb_store() {
    let g = Grove::new();
    g.ok(&["--backend", "redb", "demo"]);
    let listed = g.json(&["--backend", "redb", "ls", "--json"]);
    let sessions = listed.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["entries"], 6);
    // The store is redb's one file.
    assert!(g.store_dir().join(grove::kv::REDB_FILE).is_file());
    assert!(!g.store_dir().join("conf").exists());
    // The library reads what the tool wrote.
    let store = open_redb(&g);
    assert_eq!(store.backend_name(), "redb");
    let summary = &store.sessions().unwrap()[0];
    assert_eq!(sessions[0]["id"], summary.id.as_str());
}

#[test]
fn import_and_export_round_trip_on_redb_at_both_durabilities() {
    for durability in ["none", "sync"] {
        let g = Grove::new();
        let file = fixture("r000-harness.jsonl");
        let file = file.to_str().unwrap();
        let args = ["--backend", "redb", "--durability", durability];
        let imported = g.json(&[&args[..], &["import", "--json", file][..]].concat());
        let id = imported["session"].as_str().unwrap().to_owned();
        let exported = g.ok(&[&args[..], &["export", &id][..]].concat());
        assert_eq!(
            exported.as_bytes(),
            std::fs::read(file).unwrap(),
            "{durability}"
        );
    }
}

#[test]
fn backend_and_durability_come_from_the_environment() {
    let g = Grove::new();
    let run = |args: &[&str]| {
        Command::new(grove_bin())
            .arg("--store")
            .arg(g.store_dir())
            .args(args)
            .env("GROVE_BACKEND", "redb")
            .env("GROVE_DURABILITY", "none")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["demo"]);
    super::assert_success(&["demo"], &out);
    assert!(g.store_dir().join(grove::kv::REDB_FILE).is_file());
    let out = run(&["ls", "--json"]);
    super::assert_success(&["ls", "--json"], &out);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    // The flag wins over the environment.
    let out = run(&["--backend", "sled", "ls"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_store_of_one_backend_is_refused_by_the_other() {
    let g = Grove::new();
    g.ok(&["--backend", "redb", "demo"]);
    let (code, stderr) = g.fail(&["--backend", "sled", "ls"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("InvalidArgument"), "{stderr}");
    assert!(stderr.contains("redb store, not a sled store"), "{stderr}");
    assert!(stderr.contains("--backend redb"), "{stderr}");

    let g = Grove::new();
    g.ok(&["--backend", "sled", "demo"]);
    let (code, stderr) = g.fail(&["--backend", "redb", "ls"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("sled store, not a redb store"), "{stderr}");
    assert!(!g.store_dir().join(grove::kv::REDB_FILE).exists());
}

#[test]
fn bad_values_are_usage_errors() {
    let g = Grove::new();
    let (code, stderr) = g.fail(&["--backend", "lmdb", "ls"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, stderr) = g.fail(&["--durability", "sometimes", "ls"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn a_redb_store_open_elsewhere_is_a_storage_error() {
    let g = Grove::new();
    g.ok(&["--backend", "redb", "demo"]);
    let held = open_redb(&g);
    let (code, stderr) = g.fail(&["--backend", "redb", "ls"]);
    assert_eq!(code, 3, "{stderr}");
    drop(held);
    g.ok(&["--backend", "redb", "ls"]);
}

#[test]
fn a_database_that_cannot_be_reached_is_unavailable_with_the_storage_exit_code() {
    // Nothing listens on port 1: the error says so, is worth retrying, and exits 3.
    let g = Grove::new();
    let pg = [
        "--backend",
        "postgres",
        "--pg",
        "postgres://postgres@127.0.0.1:1/none",
    ];
    let (code, stderr) = g.fail(&[&pg[..], &["ls"][..]].concat());
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("Unavailable"), "{stderr}");
    assert!(stderr.contains("error connecting"), "{stderr}");
}

#[test]
fn imports_spool_in_the_store_directory_not_the_system_temp_dir() {
    // With TMPDIR pointing nowhere, an import into an on-disk store still works: its
    // spool file lives in the store directory (a small tmpfs /tmp must not cap imports).
    for backend in ["sled", "redb"] {
        let g = Grove::new();
        let out = Command::new(grove_bin())
            .args(["--store"])
            .arg(g.store_dir())
            .args(["--backend", backend, "import"])
            .arg(fixture("edge-seed-harness.jsonl"))
            .env_remove("GROVE_STORE")
            .env("TMPDIR", "/nonexistent/grove-tmp")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The spool is anonymous: nothing is left behind.
        let names: Vec<String> = std::fs::read_dir(g.store_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tmp"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }
}

#[test]
fn the_postgres_backend_takes_the_same_commands() {
    let Some(table) = grove_tests::pg::Table::new("cli") else {
        return;
    };
    let g = Grove::new();
    let pg = [
        "--backend",
        "postgres",
        "--pg",
        &table.url,
        "--pg-table",
        &table.name,
    ];
    g.ok(&[&pg[..], &["demo"]].concat());
    let file = fixture("r000-harness.jsonl");
    let file = file.to_str().unwrap();
    let imported = g.json(&[&pg[..], &["import", "--json", file]].concat());
    let id = imported["session"].as_str().unwrap().to_owned();
    let exported = g.ok(&[&pg[..], &["export", &id]].concat());
    assert_eq!(exported.as_bytes(), std::fs::read(file).unwrap());
    let listed = g.json(&[&pg[..], &["ls", "--json"]].concat());
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    g.ok(&[&pg[..], &["verify"]].concat());
    // Nothing went to the store directory.
    assert!(!g.store_dir().exists() || std::fs::read_dir(g.store_dir()).unwrap().next().is_none());
    // The library reads what the tool wrote.
    let store = Store::open_with(StoreConfig::new("").backend(table.backend())).unwrap();
    assert_eq!(store.backend_name(), "postgres");
    assert_eq!(store.sessions().unwrap().len(), 2);
    drop(store);
    // No URL: an error naming the option.
    let (code, stderr) = g.fail(&["--backend", "postgres", "ls"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("--pg"), "{stderr}");
}
