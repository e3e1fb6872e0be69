//! The streaming reads (`for_each_on_path`, `for_each_on_branch`, `write_context`) against
//! the materializing ones they stand in for, on every fixture session imported both ways and
//! at every entry: the same entries, the same bytes, the same error codes. The fixtures hold
//! the trees a plan finds hard: missing parents, parent cycles, duplicate ids, compactions
//! whose `firstKeptEntryId` is missing, not an ancestor, or itself a compaction.

use grove::{
    ContextOptions, LeafRule, NullContent, RetainedTail, SelectionPath, Session, SettingsScope,
    Strictness,
};

use super::{cases, Report};

/// Every combination of the context options.
pub(crate) fn all_options() -> Vec<ContextOptions> {
    let mut all = Vec::new();
    for settings_scope in [SettingsScope::Full, SettingsScope::Branch] {
        for selection_path in [SelectionPath::Full, SelectionPath::Branch] {
            for retained_tail in [RetainedTail::Use, RetainedTail::Ignore] {
                for null_content in [NullContent::Normalize, NullContent::Preserve] {
                    for report_active_tools in [true, false] {
                        all.push(ContextOptions {
                            settings_scope,
                            selection_path,
                            retained_tail,
                            null_content,
                            report_active_tools,
                        });
                    }
                }
            }
        }
    }
    all
}

/// Compares the streaming reads with the materializing ones at `from`; a description of
/// each difference.
pub(crate) fn differences(
    session: &Session,
    from: Option<&str>,
    options: &[ContextOptions],
) -> Vec<String> {
    let mut out = Vec::new();
    let ids = |r: grove::Result<Vec<grove::Entry>>| {
        r.map(|v| v.into_iter().map(|e| (e.seq, e.line)).collect::<Vec<_>>())
    };
    type Walk<'a> =
        &'a dyn Fn(&mut dyn FnMut(grove::Entry) -> grove::Result<()>) -> grove::Result<()>;
    let collect = |f: Walk<'_>| {
        let mut got = Vec::new();
        f(&mut |e| {
            got.push((e.seq, e.line));
            Ok(())
        })
        .map(|()| got)
    };
    let same =
        |a: &grove::Result<Vec<(u64, String)>>, b: &grove::Result<Vec<(u64, String)>>| match (a, b)
        {
            (Ok(a), Ok(b)) => a == b,
            (Err(a), Err(b)) => a.code() == b.code(),
            _ => false,
        };
    let path = collect(&|each| session.for_each_on_path(from, each));
    let want = ids(session.path_to_root(from));
    if !same(&path, &want) {
        out.push(format!("path from {from:?}: {path:?} vs {want:?}"));
    }
    let branch = collect(&|each| session.for_each_on_branch(from, each));
    let want = ids(session.branch(from));
    if !same(&branch, &want) {
        out.push(format!("branch from {from:?}: {branch:?} vs {want:?}"));
    }
    for &options in options {
        let mut bytes = Vec::new();
        let streamed = session
            .write_context(from, options, &mut bytes)
            .map(|()| String::from_utf8_lossy(&bytes).into_owned());
        let built = session
            .build_context_from_scratch(from, options)
            .map(|c| c.to_json());
        let equal = match (&streamed, &built) {
            (Ok(a), Ok(b)) => a == b,
            (Err(a), Err(b)) => a.code() == b.code(),
            _ => false,
        };
        if !equal {
            out.push(format!("context from {from:?} with {options:?}:\n  streamed {streamed:?}\n  built    {built:?}"));
        }
    }
    out
}

#[test]
fn streaming_reads_equal_the_materializing_ones_on_every_fixture() {
    let mut r = Report::new("streaming reads");
    let every = all_options();
    let presets = [
        ContextOptions::grove(),
        ContextOptions::pi_harness(),
        ContextOptions::pi_cli(),
    ];
    for case in cases() {
        for (strictness, rule) in [
            (Strictness::Strict, LeafRule::Auto),
            (Strictness::Lenient, LeafRule::LastLine),
        ] {
            let Ok((session, _)) = case.import(strictness, rule) else {
                continue;
            };
            r.checked();
            let entries: Vec<String> = session
                .entries()
                .filter_map(|e| e.ok())
                .map(|e| e.id().to_owned())
                .collect();
            // Every entry of a small session; some 12 spread over a large one.
            let step = match entries.len() {
                0..=200 => 1,
                n => n / 12,
            };
            let mut froms: Vec<Option<String>> = vec![None];
            froms.extend(entries.into_iter().step_by(step).map(Some));
            let mut found = Vec::new();
            for from in &froms {
                // Every combination of options at the leaf, the presets elsewhere.
                let options = match from {
                    None => &every[..],
                    Some(_) => &presets[..],
                };
                found.extend(differences(&session, from.as_deref(), options));
                if found.len() >= 3 {
                    break;
                }
            }
            for d in found.into_iter().take(3) {
                let clipped: String = d.chars().take(3000).collect();
                r.fail(&case.name, "streaming", clipped);
            }
        }
    }
    r.finish();
}
