//! `export -o` onto what is already at the path: devices, FIFOs, symbolic and hard links keep
//! being what they are, a file keeps its mode, and temporary files do not pile up.
//! (Issue 16 §5: `export -o /dev/null` run as root replaced /dev/null with a regular file of
//! mode 0600, and every killed export left its temporary file behind.)
#![cfg(target_os = "linux")]

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use super::{fixture, Grove};

/// A store holding `seed-harness`, and the bytes its export gives.
fn seeded() -> (Grove, Vec<u8>) {
    let g = Grove::new();
    let file = fixture("edge-seed-harness.jsonl");
    g.ok(&["import", file.to_str().unwrap()]);
    (g, fs::read(file).unwrap())
}

fn export_to(g: &Grove, path: &Path) -> String {
    let args = ["export", "seed-harness", "-o", path.to_str().unwrap()];
    let out = g.run(&args);
    super::assert_success(&args, &out);
    String::from_utf8(out.stderr).unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A character device to export onto: a private node of the null device (major 1, minor 3)
/// when this process may create one (root), else `/dev/null` itself, which a process that may
/// not create device nodes cannot replace either. (Never /dev/null as root: a broken export
/// would replace the machine's /dev/null.)
fn null_device(dir: &Path) -> std::path::PathBuf {
    let node = dir.join("null");
    let made = std::process::Command::new("mknod")
        .args(["-m", "666"])
        .arg(&node)
        .args(["c", "1", "3"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        node
    } else {
        Path::new("/dev/null").to_owned()
    }
}

#[test]
fn a_character_device_stays_a_character_device() {
    let (g, _) = seeded();
    let dir = tempfile::tempdir().unwrap();
    let null = null_device(dir.path());
    let before = fs::metadata(&null).unwrap();
    assert!(before.file_type().is_char_device());
    export_to(&g, &null);
    let after = fs::symlink_metadata(&null).unwrap();
    assert!(after.file_type().is_char_device(), "{after:?}");
    assert_eq!(after.ino(), before.ino());
    assert_eq!(after.mode(), before.mode());
    assert_eq!(after.rdev(), before.rdev());
}

#[test]
fn a_fifo_gets_the_bytes() {
    let (g, expected) = seeded();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // A second name for the FIFO, so that the reader can be released even when the export
    // does not open it (the reader waits in `open` until a writer comes).
    let keep = dir.path().join("pipe-keep");
    fs::hard_link(&fifo, &keep).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(fifo).unwrap())
    };
    export_to(&g, &fifo);
    // (Opening a FIFO for reading and writing never waits on Linux.)
    drop(
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&keep)
            .unwrap(),
    );
    assert_eq!(reader.join().unwrap(), expected);
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(dir.path()), ["pipe", "pipe-keep"]);
}

#[test]
fn a_symlink_stays_a_link_and_its_target_gets_the_content() {
    let (g, expected) = seeded();
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("real")).unwrap();
    let target = dir.path().join("real/session.jsonl");
    fs::write(&target, b"old\n").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink("real/session.jsonl", &link).unwrap();

    export_to(&g, &link);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::read_link(&link).unwrap(),
        Path::new("real/session.jsonl")
    );
    assert_eq!(fs::read(&target).unwrap(), expected);
    assert_eq!(fs::metadata(&target).unwrap().mode() & 0o777, 0o640);
    assert_eq!(names(dir.path()), ["link.jsonl", "real"]);
    assert_eq!(names(&dir.path().join("real")), ["session.jsonl"]);

    // A link to a file that does not exist yet creates the file; the link stays.
    let dangling = dir.path().join("new-link.jsonl");
    std::os::unix::fs::symlink("real/new.jsonl", &dangling).unwrap();
    export_to(&g, &dangling);
    assert!(fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::read(dir.path().join("real/new.jsonl")).unwrap(),
        expected
    );
}

#[test]
fn a_hard_link_stays_one_file() {
    let (g, expected) = seeded();
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    fs::write(&a, b"old content that is longer than nothing\n".repeat(100)).unwrap();
    fs::hard_link(&a, &b).unwrap();
    let before = fs::metadata(&a).unwrap();

    export_to(&g, &a);
    let after = fs::metadata(&a).unwrap();
    assert_eq!(after.ino(), before.ino(), "the same inode");
    assert_eq!(after.nlink(), 2);
    assert_eq!(fs::read(&a).unwrap(), expected);
    assert_eq!(fs::read(&b).unwrap(), expected, "the other link sees it");
    assert_eq!(names(dir.path()), ["a.jsonl", "b.jsonl"]);
}

#[test]
fn a_regular_file_keeps_its_mode() {
    let (g, expected) = seeded();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.jsonl");
    fs::write(&file, b"old\n").unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
    let before = fs::metadata(&file).unwrap();

    export_to(&g, &file);
    let after = fs::metadata(&file).unwrap();
    assert!(after.is_file());
    assert_eq!(after.mode() & 0o7777, 0o640);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_eq!(fs::read(&file).unwrap(), expected);

    // A new file is not private to its owner (0666 less the umask, here 022).
    let new = dir.path().join("new.jsonl");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"umask 022 && exec "$0" --store "$1" export seed-harness -o "$2""#)
        .arg(super::grove_bin())
        .arg(g.store_dir())
        .arg(&new)
        .output()
        .unwrap();
    super::assert_success(&["export", "-o", "(umask 022)"], &out);
    assert_eq!(fs::metadata(&new).unwrap().mode() & 0o777, 0o644);
}

#[test]
fn leftovers_of_dead_exports_are_removed() {
    let (g, expected) = seeded();
    let dir = tempfile::tempdir().unwrap();
    // A pid above the system's maximum: no such process can exist.
    let pid_max: u64 = fs::read_to_string("/proc/sys/kernel/pid_max")
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(4_194_304);
    let dead = dir
        .path()
        .join(format!(".other.jsonl.grove-export.{}.tmp", pid_max + 1));
    fs::write(&dead, b"partial").unwrap();
    // One of a running process (this test) is left alone.
    let alive = dir.path().join(format!(
        ".out.jsonl.grove-export.{}.tmp",
        std::process::id()
    ));
    fs::write(&alive, b"in progress").unwrap();
    let unrelated = dir.path().join(".notes.tmp");
    fs::write(&unrelated, b"mine").unwrap();

    let file = dir.path().join("out.jsonl");
    let stderr = export_to(&g, &file);
    assert_eq!(fs::read(&file).unwrap(), expected);
    assert!(!dead.exists(), "the dead process's file is removed");
    assert!(
        stderr.contains(&dead.display().to_string()) && stderr.contains("no longer running"),
        "{stderr}"
    );
    assert!(alive.exists() && unrelated.exists());
}

#[test]
fn a_failed_export_leaves_no_temporary_file_and_the_target_untouched() {
    let g = Grove::new();
    g.ok(&["import", fixture("edge-labels.jsonl").to_str().unwrap()]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.jsonl");
    fs::write(&file, b"old\n").unwrap();
    let (code, err) = g.fail(&[
        "export",
        "labels",
        "--flavor",
        "cli",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("error: ExportIncompatible"), "{err}");
    assert_eq!(fs::read(&file).unwrap(), b"old\n");
    assert_eq!(names(dir.path()), ["out.jsonl"]);

    // The same with a hard-linked target: it is not truncated.
    fs::hard_link(&file, dir.path().join("other.jsonl")).unwrap();
    g.fail(&[
        "export",
        "labels",
        "--flavor",
        "cli",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(fs::read(&file).unwrap(), b"old\n");
    assert_eq!(names(dir.path()), ["other.jsonl", "out.jsonl"]);
}

#[test]
fn a_directory_is_an_error() {
    let (g, _) = seeded();
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = g.fail(&["export", "seed-harness", "-o", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: Io") && err.contains("directory"),
        "{err}"
    );
    assert!(names(dir.path()).is_empty());
}
