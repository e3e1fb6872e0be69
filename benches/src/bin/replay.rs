//! "What did the model see at every step": the context after every record of a generated
//! session, three ways, on the same store: one replay pass (`Session::replay`, each record's
//! change to the context applied to a running copy), `build_context_with` at each step's leaf
//! in log order (the view cache reused from step to step), and `build_context_from_scratch`
//! at each step (sampled, extrapolated to every step). The sampled steps are also checked:
//! the replayed context equals the one built from scratch.
//!
//! `cargo run --release -p grove-benches --bin replay [-- --entries N --branches B --sample K]`
//! prints a Markdown table (docs/benchmarks.md, "Replay").

use std::time::{Duration, Instant};

use grove::{Context, ContextOptions, ReplayEvent, ReplayOptions, Store, StoreConfig};
use grove_benches::compare::measure::fmt_duration as fmt;
use grove_benches::gen::{generate, GenSpec};
use grove_benches::load::import;

type Res<T> = grove_benches::Result<T>;

struct Case {
    name: &'static str,
    spec: GenSpec,
}

fn arg(args: &[String], name: &str, default: usize) -> Res<usize> {
    match args.iter().position(|a| a == name) {
        Some(i) => Ok(args
            .get(i + 1)
            .ok_or(format!("{name} needs a value"))?
            .parse()?),
        None => Ok(default),
    }
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let entries = arg(&args, "--entries", 100_000)?;
    let branches = arg(&args, "--branches", 1_000)?;
    let sample = arg(&args, "--sample", 200)?.max(1);
    let cases = [
        Case {
            name: "linear, no compaction (the context grows to every message)",
            spec: GenSpec::linear(entries, 7),
        },
        Case {
            name: "bushy (branch points), a compaction every 100 entries",
            spec: GenSpec::bushy(entries, branches, 8).compaction_every(100),
        },
    ];
    println!(
        "| session | records | one replay pass | per step | build_context at each step (view reused) | ratio | from scratch at each step (extrapolated from {sample}) | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for case in cases {
        let dir = tempfile::tempdir()?;
        let generated = generate(&case.spec);
        let sid = {
            let store = Store::open_with(StoreConfig::new(dir.path()))?;
            let s = import(&store, &generated)?;
            store.flush()?;
            s.id().to_owned()
        };
        let store = Store::open_with(StoreConfig::new(dir.path()))?;
        let s = store.session(&sid)?;
        // One pass: every record's context, carried along.
        let t = Instant::now();
        let mut ctx = Context::empty();
        let mut leaves: Vec<Option<String>> = Vec::new();
        let mut seen_messages = 0usize;
        for event in s.replay(ReplayOptions::default())? {
            match event? {
                ReplayEvent::Start { context, .. } => ctx = context,
                ReplayEvent::Operation(_) => {}
                ReplayEvent::Record(r) => {
                    r.change.apply(&mut ctx);
                    seen_messages += ctx.messages.len();
                    leaves.push(r.leaf);
                }
            }
        }
        let replay = t.elapsed();
        let steps = leaves.len();
        // The public read at each step's leaf, in log order.
        let t = Instant::now();
        let mut built_messages = 0usize;
        for leaf in &leaves {
            built_messages += match leaf {
                Some(l) => s
                    .build_context_with(Some(l), ContextOptions::grove())?
                    .messages
                    .len(),
                None => 0,
            };
        }
        let per_step_view = t.elapsed();
        if built_messages != seen_messages {
            return Err(format!(
                "{}: the replay saw {seen_messages} messages over all steps, build_context \
                 {built_messages}",
                case.name
            )
            .into());
        }
        // From scratch at sampled steps, checked against the replay.
        let picks: Vec<usize> = (0..sample).map(|i| i * steps / sample).collect();
        let mut ctx = Context::empty();
        let mut replayed_at = Vec::new();
        let mut step = 0;
        for event in s.replay(ReplayOptions::default())? {
            if let ReplayEvent::Record(r) = event? {
                r.change.apply(&mut ctx);
                if picks.contains(&step) {
                    replayed_at.push((step, ctx.to_json()));
                }
                step += 1;
            }
        }
        let mut scratch = Duration::ZERO;
        for (step, want) in &replayed_at {
            let t = Instant::now();
            let built = match &leaves[*step] {
                Some(l) => s.build_context_from_scratch(Some(l), ContextOptions::grove())?,
                None => Context::empty(),
            };
            scratch += t.elapsed();
            if built.to_json() != *want {
                return Err(format!("{}: step {step} differs from scratch", case.name).into());
            }
        }
        let scratch_all = scratch.mul_f64(steps as f64 / replayed_at.len() as f64);
        println!(
            "| {} | {steps} | {} | {} | {} | {:.1}x | {} | {:.0}x |",
            case.name,
            fmt(replay),
            fmt(replay / steps.max(1) as u32),
            fmt(per_step_view),
            per_step_view.as_secs_f64() / replay.as_secs_f64(),
            fmt(scratch_all),
            scratch_all.as_secs_f64() / replay.as_secs_f64(),
        );
    }
    Ok(())
}
