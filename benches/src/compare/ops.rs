//! Per-operation scenarios: random moves on the huge bushy session, `build_context` after
//! an append at a great and a small depth.

use std::path::Path;
use std::time::Instant;

use grove::{Durability, NewEntry, Store, StoreConfig};
use grove_codec::writer::leaf_line;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::measure::{fmt_count, fmt_duration, fmt_ratio, measure, wait_for_release, Stats};
use super::report::{Table, Target};
use super::resume::Fixture;
use super::{progress, Ctx};
use crate::baseline::jsonl::JsonlStore;
use crate::baseline::sqlite::SqliteStore;
use crate::gen::GenSpec;
use crate::Result;

const TIMESTAMP: &str = "2027-01-01T00:00:00.000Z";
const WARM_OPS: usize = 10;

fn user_entry() -> NewEntry {
    NewEntry::Message {
        message: "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Continue with \
                  the next step.\"}],\"timestamp\":1798761600000}"
            .to_owned(),
    }
}

/// Ids for lines the baselines write: `x` + 7 hex digits never meets a generated id.
struct Ids(u32);

impl Ids {
    fn next(&mut self) -> String {
        self.0 += 1;
        format!("x{:07x}", self.0)
    }
}

pub(super) fn grove_writer(dir: &Path) -> Result<Store> {
    Ok(Store::open_with(
        StoreConfig::new(dir).durability(Durability::None),
    )?)
}

pub(super) fn remove_sqlite(path: &Path) {
    for s in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{s}", path.display()));
    }
}

/// `move_to` a random entry + `build_context`, warm, on the huge bushy session.
pub(crate) fn moves(cx: &mut Ctx, f: &Fixture) -> Result<()> {
    let n = cx.sizes.moves;
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let ids = &f.gen.ids;
    let targets: Vec<&str> = (0..n + WARM_OPS)
        .map(|_| ids[rng.random_range(0..ids.len())].as_str())
        .collect();
    let session_id = f.gen.session_id.as_str();
    let (mut g, mut s, mut j) = (0, 0, 0);
    progress(&format!("{}: moves, grove", f.label));
    let grove = {
        let store = grove_writer(&f.grove)?;
        let session = store.session(session_id)?;
        let mut it = targets.iter();
        measure(WARM_OPS, n, || {
            let target = it.next().ok_or("out of targets")?;
            let t = Instant::now();
            session.move_to(Some(target))?;
            let ctx = session.build_context()?;
            let d = t.elapsed();
            g += ctx.messages.len();
            Ok(d)
        })?
    };
    wait_for_release(&f.grove)?;
    progress(&format!("{}: moves, SQLite", f.label));
    let sqlite = {
        let mut db = SqliteStore::open(&f.sqlite)?;
        let mut leaf = db.leaf(session_id)?;
        let mut it = targets.iter();
        let mut new_ids = Ids(0);
        measure(WARM_OPS, n, || {
            let target = it.next().ok_or("out of targets")?;
            let t = Instant::now();
            let line = leaf_line(&new_ids.next(), leaf.as_deref(), TIMESTAMP, Some(target));
            db.append_line(session_id, &line)?;
            leaf = Some((*target).to_owned());
            let ctx = db.build_context(session_id)?;
            let d = t.elapsed();
            s += ctx.len();
            Ok(d)
        })?
    };
    progress(&format!(
        "{}: moves, JSONL (loading the file first)",
        f.label
    ));
    let jsonl = {
        let mut store = JsonlStore::open(&f.jsonl)?;
        let mut it = targets.iter();
        let mut new_ids = Ids(0);
        measure(WARM_OPS, n, || {
            let target = it.next().ok_or("out of targets")?;
            let t = Instant::now();
            let line = leaf_line(&new_ids.next(), store.leaf(), TIMESTAMP, Some(target));
            store.append_line(&line)?;
            let count = store.build_context()?.len();
            let d = t.elapsed();
            j += count;
            Ok(d)
        })?
    };
    cx.check(&format!("moves on {}", f.label), g, s, j);
    let mut table = Table::new(
        "move_to a random entry + build_context (warm)",
        "One operation = move the leaf to a random entry (a leaf record is written) and build \
         the context there. grove and SQLite are open stores; the JSONL store has the whole \
         session parsed in memory (its load is not timed) and appends a `leaf` line.",
        &[
            "session",
            "operations",
            "grove",
            "SQLite",
            "pi JSONL (in memory)",
            "grove / SQLite",
        ],
    );
    table.row(vec![
        f.label.clone(),
        fmt_count(n as u64),
        spread(&grove),
        spread(&sqlite),
        spread(&jsonl),
        fmt_ratio(grove.secs() / sqlite.secs()),
    ]);
    cx.tables.push(table);
    cx.targets.push(Target {
        measurement: format!("move_to + build_context, {}", f.label),
        target: "median ≤ 1 ms".to_owned(),
        result: fmt_duration(grove.median),
        met: grove.secs() <= 0.001,
    });
    Ok(())
}

fn spread(s: &Stats) -> String {
    format!(
        "{} ({}–{})",
        fmt_duration(s.median),
        fmt_duration(s.min),
        fmt_duration(s.max)
    )
}

/// One append + `build_context`, in the three stores.
fn append_then_context(cx: &mut Ctx, f: &Fixture) -> Result<[Stats; 3]> {
    let (runs, warmup) = (cx.sizes.op_runs, cx.sizes.warmup);
    let session_id = f.gen.session_id.as_str();
    let (mut g, mut s, mut j) = (0, 0, 0);
    progress(&format!("{}: append + build_context, grove", f.label));
    let grove = {
        let store = grove_writer(&f.grove)?;
        let session = store.session(session_id)?;
        let (warmup, runs) = (cx.sizes.grove_op_warmup, cx.sizes.grove_op_runs);
        // The baselines run fewer operations: compare the message count after as many.
        let compared = cx.sizes.warmup + cx.sizes.op_runs;
        let mut done = 0;
        measure(warmup, runs, || {
            let t = Instant::now();
            session.append(user_entry())?;
            let ctx = session.build_context()?;
            let d = t.elapsed();
            done += 1;
            if done == compared {
                g = ctx.messages.len();
            }
            Ok(d)
        })?
    };
    wait_for_release(&f.grove)?;
    progress(&format!("{}: append + build_context, SQLite", f.label));
    let entry = user_entry();
    let sqlite = {
        let mut db = SqliteStore::open(&f.sqlite)?;
        let mut leaf = db.leaf(session_id)?;
        let mut ids = Ids(0);
        measure(warmup, runs, || {
            let t = Instant::now();
            let id = ids.next();
            let line = entry.to_line(&id, leaf.as_deref(), TIMESTAMP)?;
            db.append_line(session_id, &line)?;
            leaf = Some(id);
            let ctx = db.build_context(session_id)?;
            let d = t.elapsed();
            s = ctx.len();
            Ok(d)
        })?
    };
    progress(&format!("{}: append + build_context, JSONL", f.label));
    let jsonl = {
        let mut store = JsonlStore::open(&f.jsonl)?;
        let mut ids = Ids(0);
        measure(warmup, runs, || {
            let t = Instant::now();
            let line = entry.to_line(&ids.next(), store.leaf(), TIMESTAMP)?;
            store.append_line(&line)?;
            let count = store.build_context()?.len();
            let d = t.elapsed();
            j = count;
            Ok(d)
        })?
    };
    cx.check(&format!("append + context on {}", f.label), g, s, j);
    Ok([grove, sqlite, jsonl])
}

/// `build_context` after an append at a great and a small depth.
pub(crate) fn context_after_append(cx: &mut Ctx) -> Result<()> {
    let s = cx.sizes.clone();
    let deep_label = format!("linear, depth {}", fmt_count(s.deep as u64));
    let shallow_label = format!("linear, depth {}", fmt_count(s.shallow as u64));
    let deep_spec = GenSpec::linear(s.deep, 21).compaction_every(s.compaction_every);
    let shallow_spec = GenSpec::linear(s.shallow, 22).compaction_every(s.compaction_every);
    let deep = Fixture::prepare(cx, "deep", &deep_label, &deep_spec)?;
    let rd = append_then_context(cx, &deep)?;
    let mut deep = deep;
    deep.measure_zstd(cx)?;
    cx.fixtures.push(deep.stats());
    deep.remove();
    let shallow = Fixture::prepare(cx, "shallow", &shallow_label, &shallow_spec)?;
    let rs = append_then_context(cx, &shallow)?;
    shallow.remove();
    let mut table = Table::new(
        "build_context after an append (warm)",
        &format!(
            "One operation = append a user message at the leaf and build the context. Small \
             payloads, a compaction every {} entries, so both contexts hold about the same \
             messages; only the depth differs.",
            s.compaction_every
        ),
        &[
            "session",
            "grove",
            "SQLite",
            "pi JSONL (in memory)",
            "grove / SQLite",
        ],
    );
    for (label, r) in [(&deep_label, &rd), (&shallow_label, &rs)] {
        table.row(vec![
            label.clone(),
            spread(&r[0]),
            spread(&r[1]),
            spread(&r[2]),
            fmt_ratio(r[0].secs() / r[1].secs()),
        ]);
    }
    let ratios: Vec<String> = (0..3)
        .map(|i| fmt_ratio(rd[i].secs() / rs[i].secs()))
        .collect();
    table.row(vec![
        "deep / shallow".to_owned(),
        ratios[0].clone(),
        ratios[1].clone(),
        ratios[2].clone(),
        String::new(),
    ]);
    cx.tables.push(table);
    let r = rd[0].secs() / rs[0].secs();
    cx.targets.push(Target {
        measurement: format!("append + build_context, {deep_label} vs {shallow_label}"),
        target: "≤ 2× (cost follows the context, not the depth)".to_owned(),
        result: format!(
            "{} ({} vs {})",
            fmt_ratio(r),
            fmt_duration(rd[0].median),
            fmt_duration(rs[0].median)
        ),
        met: r <= 2.0,
    });
    Ok(())
}
