//! Cold open: `Store::open` + `session` + `build_context` of a store on disk, closed again
//! each iteration. Sizes scale with GROVE_BENCH_SCALE.

mod common;

use common::{config, ok};
use criterion::{criterion_group, criterion_main, Criterion};
use grove::{Durability, Store, StoreConfig};
use grove_benches::{generate, scaled, GenSpec};

fn open(c: &mut Criterion) {
    let mut group = c.benchmark_group("open");
    for (name, spec) in [
        (
            "linear",
            GenSpec::linear(scaled(10_000), 11).compaction_every(100),
        ),
        ("bushy", GenSpec::bushy(scaled(10_000), scaled(100), 12)),
    ] {
        let generated = generate(&spec);
        let dir = ok(tempfile::tempdir());
        {
            let config = StoreConfig::new(dir.path()).durability(Durability::None);
            let store = ok(Store::open_with(config));
            // A session in use: its context built once, the view written by the flush.
            ok(ok(grove_benches::import(&store, &generated)).build_context());
            ok(store.flush());
        }
        let id = generated.session_id.clone();
        group.bench_function(format!("{name}_{}", generated.ids.len()), |b| {
            b.iter(|| {
                let store = ok(Store::open(dir.path()));
                let session = ok(store.session(&id));
                ok(session.build_context()).messages.len()
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = config(5);
    targets = open
}
criterion_main!(benches);
