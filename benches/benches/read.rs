//! Read paths and moves: branch, build_context after an append and after a move, move_to,
//! the common ancestor of two leaves. Sizes scale with GROVE_BENCH_SCALE.

mod common;

use common::{config, ok};
use criterion::{criterion_group, criterion_main, Criterion};
use grove::{NewEntry, Session, Store};
use grove_benches::{generate, scaled, GenSpec, GeneratedSession};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn load(spec: &GenSpec) -> (Store, Session, GeneratedSession) {
    let generated = generate(spec);
    let store = ok(Store::temporary());
    let session = ok(grove_benches::import(&store, &generated));
    (store, session, generated)
}

fn bushy() -> (Store, Session, GeneratedSession) {
    let n = scaled(10_000);
    load(&GenSpec::bushy(n, n / 100, 5))
}

/// Random picks from `items`, the same sequence every run.
fn picker<'a>(items: &'a [String], seed: u64) -> impl FnMut() -> &'a str {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    move || items[rng.random_range(0..items.len())].as_str()
}

fn branch(c: &mut Criterion) {
    let (_store, session, g) = bushy();
    c.bench_function(&format!("branch/active_path_{}", g.active_path_len), |b| {
        b.iter(|| ok(session.branch(None)))
    });
}

fn build_context(c: &mut Criterion) {
    let mut group = c.benchmark_group("build_context");
    let n = scaled(10_000);
    let (_s1, linear, _) = load(&GenSpec::linear(n, 6).compaction_every(100));
    let entry = NewEntry::Message {
        message: r#"{"role":"user","content":[{"type":"text","text":"next"}],"timestamp":1}"#
            .to_owned(),
    };
    group.bench_function(format!("after_append_depth_{n}"), |b| {
        b.iter(|| {
            ok(linear.append(entry.clone()));
            ok(linear.build_context())
        })
    });
    let (_s2, session, g) = bushy();
    let mut pick = picker(&g.ids, 7);
    group.bench_function(format!("after_move_bushy_{}", g.ids.len()), |b| {
        b.iter(|| {
            ok(session.move_to(Some(pick())));
            ok(session.build_context())
        })
    });
    group.finish();
}

fn move_to(c: &mut Criterion) {
    let (_store, session, g) = bushy();
    let mut pick = picker(&g.ids, 8);
    c.bench_function(&format!("move_to/bushy_{}", g.ids.len()), |b| {
        b.iter(|| ok(session.move_to(Some(pick()))))
    });
}

fn common_ancestor(c: &mut Criterion) {
    let (_store, session, g) = bushy();
    let mut a = picker(&g.tips, 9);
    let mut t = picker(&g.tips, 10);
    c.bench_function(&format!("common_ancestor/tips_of_{}", g.ids.len()), |b| {
        b.iter(|| {
            ok(session.collect_entries_for_branch_summary(Some(a()), t(), Default::default()))
        })
    });
}

criterion_group! {
    name = benches;
    config = config(3);
    targets = branch, build_context, move_to, common_ancestor
}
criterion_main!(benches);
