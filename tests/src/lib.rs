//! Shared helpers of grove's integration tests: the pi-oracle fixtures and a JSON reader and
//! comparer that cope with what pi writes (lone UTF-16 surrogates, JavaScript number forms).
#![forbid(unsafe_code)]

pub mod campaign;
pub mod crash;
pub mod kv;
pub mod pg_cluster;
pub mod rows;
pub mod tmpfs;

/// Copies the directory `from` to `to`, subdirectories (sled's blobs) included.
///
/// # Panics
/// On any I/O error: a test's store that cannot be copied is a broken test.
#[expect(
    clippy::unwrap_used,
    reason = "a test helper: a failed copy fails the test"
)]
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The files under `dir` (recursively) whose bytes hold `needle`: the `grep -r` of the
/// redaction tests.
///
/// # Panics
/// When a directory cannot be read.
#[expect(
    clippy::unwrap_used,
    reason = "a test helper: an unreadable store directory fails the test"
)]
pub fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    out.push(path.display().to_string());
                }
            }
        }
    }
    out
}

pub mod oracle {
    //! Discovery of the pi-oracle fixtures (tests/fixtures/pi-oracle, see its README).

    use std::path::{Path, PathBuf};

    /// The directory holding the pi-oracle fixtures.
    pub fn fixtures_dir() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/pi-oracle"))
    }

    /// One fixture pair: `<name>.jsonl` and `<name>.expected.json`.
    #[derive(Debug, Clone)]
    pub struct FixturePaths {
        /// The case name.
        pub name: String,
        /// The session file.
        pub jsonl: PathBuf,
        /// What pi computed from it.
        pub expected: PathBuf,
    }

    /// Every case of the fixture directory, sorted by name. A `.jsonl` without its
    /// `.expected.json` (or the reverse) is an error, so a broken fixture set cannot pass
    /// silently.
    pub fn discover(dir: &Path) -> Result<Vec<FixturePaths>, String> {
        let read = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut names = Vec::new();
        for item in read {
            let item = item.map_err(|e| format!("{}: {e}", dir.display()))?;
            let file = item.file_name().to_string_lossy().into_owned();
            if let Some(name) = file.strip_suffix(".expected.json") {
                if !dir.join(format!("{name}.jsonl")).is_file() {
                    return Err(format!("{file} has no {name}.jsonl"));
                }
                names.push(name.to_owned());
            } else if let Some(name) = file.strip_suffix(".jsonl") {
                if !dir.join(format!("{name}.expected.json")).is_file() {
                    return Err(format!("{file} has no {name}.expected.json"));
                }
            }
        }
        names.sort();
        Ok(names
            .into_iter()
            .map(|name| FixturePaths {
                jsonl: dir.join(format!("{name}.jsonl")),
                expected: dir.join(format!("{name}.expected.json")),
                name,
            })
            .collect())
    }
}

pub mod json {
    //! Lenient JSON reading and value comparison.
    //!
    //! pi writes lone UTF-16 surrogates as `\udXXX` escapes, which serde_json refuses to put
    //! into a `String`. [`escape_lone_surrogates`] turns each such escape into the literal
    //! six-character text `\udXXX` (lowercase hex) before parsing, so both sides of a
    //! comparison stay distinguishable and comparable. Numbers are compared numerically, so
    //! `3e-05` equals `0.00003` and `5` equals `5.0`.

    use serde_json::Value;

    /// Rewrites, inside JSON string literals only, every `\uD800`-`\uDFFF` escape that is not
    /// part of a valid high+low pair into an escaped backslash followed by `udxxx`.
    pub fn escape_lone_surrogates(text: &str) -> String {
        let b = text.as_bytes();
        let mut out: Vec<u8> = Vec::with_capacity(b.len());
        let mut in_string = false;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if !in_string {
                in_string = c == b'"';
                out.push(c);
                i += 1;
                continue;
            }
            match c {
                b'"' => {
                    in_string = false;
                    out.push(c);
                    i += 1;
                }
                b'\\' if b.get(i + 1) == Some(&b'u') => {
                    let Some(unit) = hex4(b, i + 2) else {
                        // Malformed escape: keep it and let the parser report it.
                        out.extend_from_slice(&b[i..i + 2]);
                        i += 2;
                        continue;
                    };
                    if (0xD800..=0xDBFF).contains(&unit) {
                        let low = (b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u'))
                            .then(|| hex4(b, i + 8))
                            .flatten()
                            .filter(|l| (0xDC00..=0xDFFF).contains(l));
                        if low.is_some() {
                            out.extend_from_slice(&b[i..i + 12]);
                            i += 12;
                            continue;
                        }
                    }
                    if (0xD800..=0xDFFF).contains(&unit) {
                        out.extend_from_slice(format!("\\\\u{unit:04x}").as_bytes());
                    } else {
                        out.extend_from_slice(&b[i..i + 6]);
                    }
                    i += 6;
                }
                b'\\' => {
                    out.extend_from_slice(&b[i..(i + 2).min(b.len())]);
                    i += 2;
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        // Only ASCII was inserted and multi-byte sequences were copied whole.
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    fn hex4(b: &[u8], at: usize) -> Option<u16> {
        let digits = b.get(at..at + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        if !text.bytes().all(|d| d.is_ascii_hexdigit()) {
            return None;
        }
        u16::from_str_radix(text, 16).ok()
    }

    /// Parses JSON text after [`escape_lone_surrogates`].
    pub fn parse(text: &str) -> Result<Value, String> {
        serde_json::from_str(&escape_lone_surrogates(text)).map_err(|e| e.to_string())
    }

    /// Value equality with numbers compared numerically.
    pub fn json_eq(a: &Value, b: &Value) -> bool {
        diff(a, b).is_none()
    }

    fn num_eq(a: &serde_json::Number, b: &serde_json::Number) -> bool {
        if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
            return x == y;
        }
        if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
            return x == y;
        }
        match (a.as_f64(), b.as_f64()) {
            // serde_json's default float parser may be one ulp off for equal numbers written
            // differently (`3e-05` / `0.00003`); allow that and nothing more.
            (Some(x), Some(y)) => {
                x == y || (x - y).abs() <= 2.0 * f64::EPSILON * x.abs().max(y.abs())
            }
            _ => false,
        }
    }

    /// The first difference between `expected` and `actual`, as `path: expected … got …`.
    pub fn diff(expected: &Value, actual: &Value) -> Option<String> {
        // Iterative, so deep values cannot overflow the stack.
        let mut stack: Vec<(String, &Value, &Value)> = vec![("$".to_owned(), expected, actual)];
        while let Some((path, e, a)) = stack.pop() {
            let found = match (e, a) {
                (Value::Number(x), Value::Number(y)) => !num_eq(x, y),
                (Value::Array(x), Value::Array(y)) => {
                    if x.len() != y.len() {
                        return Some(format!(
                            "{path}: expected an array of {} items, got {}: expected {} got {}",
                            x.len(),
                            y.len(),
                            short(e),
                            short(a)
                        ));
                    }
                    for (i, (xe, ye)) in x.iter().zip(y).enumerate().rev() {
                        stack.push((format!("{path}[{i}]"), xe, ye));
                    }
                    false
                }
                (Value::Object(x), Value::Object(y)) => {
                    let missing: Vec<&String> = x.keys().filter(|k| !y.contains_key(*k)).collect();
                    let extra: Vec<&String> = y.keys().filter(|k| !x.contains_key(*k)).collect();
                    if !missing.is_empty() || !extra.is_empty() {
                        return Some(format!(
                            "{path}: keys missing {missing:?}, unexpected {extra:?}: expected {} got {}",
                            short(e),
                            short(a)
                        ));
                    }
                    let mut keys: Vec<&String> = x.keys().collect();
                    keys.sort();
                    for k in keys.into_iter().rev() {
                        if let (Some(xe), Some(ye)) = (x.get(k), y.get(k)) {
                            stack.push((format!("{path}.{k}"), xe, ye));
                        }
                    }
                    false
                }
                _ => e != a,
            };
            if found {
                return Some(format!("{path}: expected {} got {}", short(e), short(a)));
            }
        }
        None
    }

    /// A value's compact JSON, cut to 240 characters.
    pub fn short(v: &Value) -> String {
        let text = v.to_string();
        if text.chars().count() <= 240 {
            text
        } else {
            let cut: String = text.chars().take(240).collect();
            format!("{cut}…")
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn lone_surrogates_become_text() {
            let v = parse(r#"{"a":"x\ud83dy","b":"\ud83d\ude00","c":"\\ud83d","d":"\uDE00"}"#).ok();
            let v = v.unwrap_or_default();
            assert_eq!(v["a"], "x\\ud83dy");
            assert_eq!(v["b"], "\u{1F600}");
            assert_eq!(v["c"], "\\ud83d");
            assert_eq!(v["d"], "\\ude00");
        }

        #[test]
        fn numbers_compare_numerically() {
            let a = parse(r#"{"x":[3e-05,5,0.000105]}"#).unwrap_or_default();
            let b = parse(r#"{"x":[0.00003,5.0,1.05e-4]}"#).unwrap_or_default();
            assert!(json_eq(&a, &b));
            let c = parse(r#"{"x":[0.00003,5.0,1.06e-4]}"#).unwrap_or_default();
            assert!(!json_eq(&a, &c));
        }
    }
}

pub mod pg {
    //! The PostgreSQL server of the tests: `GROVE_TEST_PG` names it (`tools/pg-setup.sh` starts
    //! one and prints the variable; `tools/test-all.sh` does both). Without it a test of the
    //! postgres backend says so and passes on a developer's machine, and fails under CI
    //! (`CI` set), where the server must be there.

    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The server's URL, or None (outside CI) when there is none.
    pub fn url() -> Option<String> {
        match std::env::var("GROVE_TEST_PG") {
            Ok(url) if !url.is_empty() => Some(url),
            _ if std::env::var_os("CI").is_some() => {
                panic!("GROVE_TEST_PG is not set: CI must start PostgreSQL (tools/pg-setup.sh)")
            }
            _ => {
                eprintln!("GROVE_TEST_PG is not set: skipping a PostgreSQL test (tools/pg-setup.sh starts one)");
                None
            }
        }
    }

    /// A table of its own for one test, dropped when the value is.
    pub struct Table {
        /// The database's URL.
        pub url: String,
        /// The table's name.
        pub name: String,
    }

    impl Table {
        /// A new table name (the table is made by the backend when it opens), or None without
        /// a server (see [`url`]).
        pub fn new(label: &str) -> Option<Table> {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let url = url()?;
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let name = format!("t_{label}_{}_{n}", std::process::id());
            Some(Table { url, name })
        }

        /// The backend of a store in this table.
        pub fn backend(&self) -> grove::Backend {
            grove::Backend::Postgres {
                url: self.url.clone(),
                table: self.name.clone(),
            }
        }

        /// A store in this table at sync durability, with connections of its own (as
        /// another process's would be).
        pub fn open_sync(&self) -> grove::Store {
            let config = grove::StoreConfig::new("")
                .backend(self.backend())
                .durability(grove::Durability::Sync);
            match grove::Store::open_with(config) {
                Ok(store) => store,
                Err(e) => panic!("opening a store in table {}: {e}", self.name),
            }
        }
    }

    impl Drop for Table {
        fn drop(&mut self) {
            if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
                let _ = client.batch_execute(&format!("DROP TABLE IF EXISTS {}", self.name));
            }
        }
    }
}
