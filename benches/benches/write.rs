//! Write paths: append, append_many, import, fork. Sizes scale with GROVE_BENCH_SCALE.

mod common;

use std::io::Cursor;

use common::{config, ok};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use grove::{ForkMode, ForkOptions, ForkPosition, ImportOptions, Store};
use grove_benches::{entries_of, generate, scaled, GenSpec, Payload};

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Elements(1));
    for (name, payload) in [("small", Payload::Small), ("realistic", Payload::Realistic)] {
        let entries = entries_of(&GenSpec::linear(scaled(2_000), 1).payload(payload));
        let store = ok(Store::temporary());
        let session = ok(store.create_session(Default::default()));
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                let entry = entries[i % entries.len()].clone();
                i += 1;
                ok(session.append(entry))
            })
        });
    }
    group.finish();
}

fn append_many(c: &mut Criterion) {
    let mut group = c.benchmark_group("append_many");
    let entries = entries_of(&GenSpec::linear(scaled(10_000), 2));
    for batch in [10usize, 100] {
        let store = ok(Store::temporary());
        let session = ok(store.create_session(Default::default()));
        let chunks: Vec<_> = entries.chunks(batch).collect();
        let mut i = 0;
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_function(format!("batch_{batch}"), |b| {
            b.iter(|| {
                let chunk = chunks[i % chunks.len()];
                i += 1;
                ok(session.append_many(chunk))
            })
        });
    }
    group.finish();
}

fn import(c: &mut Criterion) {
    let mut group = c.benchmark_group("import");
    let n = scaled(5_000);
    let generated = generate(&GenSpec::bushy(n, n / 100, 3).compaction_every(100));
    group.throughput(Throughput::Bytes(generated.bytes));
    group.bench_function(format!("bushy_{n}"), |b| {
        b.iter_batched(
            || ok(Store::temporary()),
            |store| {
                let input = Cursor::new(&generated.jsonl[..]);
                ok(store.import_reader(input, ImportOptions::default()));
                store
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn fork(c: &mut Criterion) {
    let mut group = c.benchmark_group("fork");
    let n = scaled(10_000);
    let generated = generate(&GenSpec::bushy(n, n / 100, 4));
    let store = ok(Store::temporary());
    let session = ok(grove_benches::import(&store, &generated));
    let tips = &generated.tips;
    let mut i = 0;
    group.bench_function(format!("path_at_tip_{n}"), |b| {
        b.iter(|| {
            let tip = &tips[i % tips.len()];
            i += 1;
            let options = ForkOptions {
                entry: Some(tip.clone()),
                position: ForkPosition::At,
                mode: ForkMode::Path,
                ..ForkOptions::default()
            };
            ok(store.fork(&session, options))
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = config(3);
    targets = append, append_many, import, fork
}
criterion_main!(benches);
