//! Retention on a schedule (`grove serve --retain FILE --retain-every DURATION`, docs/cli.md):
//! the server applies the operator's policy every interval, first once the interval has
//! passed after the start. Each run is recorded in the store's operation log by the engine
//! (`GET /v1/retain/log` lists them) and reported on stderr: the sessions removed and their
//! bytes, those spared, those that failed, or the run's error. A failed run does not stop the
//! schedule, and a run does not outlive the server. The policy's ages are measured from each
//! run's time. This room owns the schedule; it calls the state (the stores served, the
//! blocking pool) and `crate::retain`.

use std::time::Duration;

use crate::serve::state::{blocking, State};
use crate::serve::stores::Stores;

/// Runs the policy `text` (the JSON of `--retain FILE`) every `every`, until the server stops.
pub async fn every(state: State, text: String, every: Duration) {
    let mut stopping = state.stopping();
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stopping.wait_for(|stopped| *stopped) => return,
        }
        let Some(Stores::One(store)) = state.current_stores() else {
            // Being reopened (a full disk): the next interval.
            continue;
        };
        let policy = serde_json::from_str::<crate::retain::PolicyJson>(&text)
            .map_err(|e| e.to_string())
            .and_then(|json| crate::retain::policy(json, crate::when::now_ms()));
        let policy = match policy {
            Ok(p) => p,
            Err(e) => {
                eprintln!("grove serve: retention: the policy no longer reads: {e}");
                continue;
            }
        };
        let store = store.with_actor("retention");
        match blocking(move || store.retain(&policy)).await {
            Ok(run) => eprintln!(
                "grove serve: retention run (store operation {}): {} session(s) removed ({} \
                 bytes), {} spared, {} failed{}",
                run.op,
                run.removed.len(),
                run.plan.bytes(),
                run.plan.spared.len(),
                run.failed.len(),
                run.failed
                    .iter()
                    .map(|(s, e)| format!("; {s}: {e}"))
                    .collect::<String>()
            ),
            Err(e) => eprintln!("grove serve: retention run failed: {}", e.message),
        }
    }
}
