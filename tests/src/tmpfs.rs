//! A small tmpfs mounted by a test, for a disk that fills up and gets room again (a full
//! disk: tests/engine/full_disk.rs, tests/serve/health.rs). Mounting needs root, which CI
//! runs as; without it the test fails, never skips.

use std::path::Path;
use std::process::Command;

/// A tmpfs of some MiB mounted on a new temporary directory, unmounted when dropped.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `mib` MiB; panics when it cannot (not root).
    pub fn mount(mib: u64) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap_or_else(|e| panic!("running mount: {e}"));
        assert!(
            status.success(),
            "mounting a tmpfs failed: this test needs root (CI runs as root)"
        );
        Tmpfs { dir }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}
