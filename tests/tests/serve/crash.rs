//! The server killed with SIGKILL at random moments while clients append at sync and group
//! durability — exact entries, compare-and-swap appends, and batches over several sessions
//! (`POST /v1/appends`, acknowledged by one flush): after a restart every acknowledged append
//! is there, exactly once, each session's path is one chain, and the store verifies.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{user_line, Server, TOKEN};

const CYCLES: usize = 20;
const WRITERS: usize = 3;
/// Sessions the batch writer spreads its batches over.
const BATCHED: usize = 3;

/// A client of its own for one writer thread; transport errors are values.
struct Client {
    agent: ureq::Agent,
    url: String,
}

impl Client {
    fn post(&self, path: &str, body: &str) -> Result<(u16, String), String> {
        let r = self
            .agent
            .post(&format!("{}{path}", self.url))
            .set("authorization", &format!("Bearer {TOKEN}"))
            .set("content-type", "application/json")
            .send_string(body);
        match r {
            Ok(resp) => Ok((
                resp.status(),
                resp.into_string().map_err(|e| e.to_string())?,
            )),
            Err(ureq::Error::Status(code, resp)) => {
                Ok((code, resp.into_string().unwrap_or_default()))
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A small deterministic generator (the test needs no cryptographic randomness).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn sigkill_loses_no_acknowledged_append() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // acked[w]: the ids writer w had acknowledged, in order (each writer's chain).
    let acked: Arc<Mutex<Vec<Vec<String>>>> = Arc::new(Mutex::new(vec![Vec::new(); WRITERS]));
    // The shared session's chain, appended to through compare-and-swap: every acknowledged
    // append, and each unacknowledged one a conflict revealed as the leaf.
    let shared_acked: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    // batched[b]: the ids of session b{b} acknowledged by `POST /v1/appends`, in order.
    let batched: Arc<Mutex<Vec<Vec<String>>>> = Arc::new(Mutex::new(vec![Vec::new(); BATCHED]));
    let mut batch_rng = Rng(0x2545_f491_4f6c_dd1d);
    for cycle in 0..CYCLES {
        let durability = if cycle % 2 == 0 { "sync" } else { "group" };
        let s = Server::start_with(dir.path(), &["--durability", durability], &[]);
        if cycle == 0 {
            for w in 0..WRITERS {
                s.ok(
                    201,
                    "POST",
                    "/v1/sessions",
                    Some(&format!(r#"{{"id":"w{w}"}}"#)),
                );
            }
            s.ok(201, "POST", "/v1/sessions", Some(r#"{"id":"shared"}"#));
            for b in 0..BATCHED {
                s.ok(
                    201,
                    "POST",
                    "/v1/sessions",
                    Some(&format!(r#"{{"id":"b{b}"}}"#)),
                );
            }
        }
        // Everything acknowledged before is there.
        check(&s, &acked.lock().unwrap(), &shared_acked.lock().unwrap());
        check_batched(&s, &batched.lock().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for w in 0..WRITERS {
            let client = Client {
                agent: ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(30))
                    .build(),
                url: s.url.clone(),
            };
            let acked = acked.clone();
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let parent = acked.lock().unwrap()[w].last().cloned();
                    let id = format!("c{cycle:02}w{w}n{n:04}");
                    n += 1;
                    let line = user_line(&id, parent.as_deref(), &id);
                    match client.post(&format!("/v1/sessions/w{w}/entries/exact"), &line) {
                        Ok((201, _)) => acked.lock().unwrap()[w].push(id),
                        Ok((code, text)) => panic!("writer {w}: {code} {text}"),
                        Err(_) => break, // the server is gone: not acknowledged
                    }
                }
            }));
        }
        {
            let client = Client {
                agent: ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(30))
                    .build(),
                url: s.url.clone(),
            };
            let shared_acked = shared_acked.clone();
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let expected = shared_acked.lock().unwrap().last().cloned();
                    let id = format!("c{cycle:02}s{n:04}");
                    n += 1;
                    let body = serde_json::json!({
                        "expectedLeaf": expected,
                        "entry": {"type": "custom", "customType": "cas", "data": {"n": id}},
                    })
                    .to_string();
                    match client.post("/v1/sessions/shared/entries/if", &body) {
                        Ok((200, text)) => {
                            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                            if v["appended"] == true {
                                shared_acked
                                    .lock()
                                    .unwrap()
                                    .push(v["id"].as_str().unwrap().to_owned());
                            } else {
                                // An append in flight at a kill landed unacknowledged: it is
                                // the leaf now; retry on it (compare-and-swap).
                                let leaf = v["leaf"].as_str().unwrap().to_owned();
                                shared_acked.lock().unwrap().push(leaf);
                            }
                        }
                        Ok((code, text)) => panic!("shared: {code} {text}"),
                        Err(_) => break,
                    }
                }
            }));
        }
        {
            let client = Client {
                agent: ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(30))
                    .build(),
                url: s.url.clone(),
            };
            let batched = batched.clone();
            let stop = stop.clone();
            let mut rng = Rng(batch_rng.next() | 1);
            threads.push(std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    // 1 to 8 items over the sessions in a random order (repeats included).
                    let items: Vec<(usize, String)> = (0..1 + rng.next() % 8)
                        .map(|_| {
                            n += 1;
                            ((rng.next() % BATCHED as u64) as usize, format!("c{cycle:02}n{n:05}"))
                        })
                        .collect();
                    let body = serde_json::json!({ "appends": items.iter().map(|(b, id)| serde_json::json!({
                        "session": format!("b{b}"),
                        "id": id,
                        "entry": {"role": "user", "content": id, "timestamp": 1},
                    })).collect::<Vec<_>>() })
                    .to_string();
                    match client.post("/v1/appends", &body) {
                        Ok((200, text)) => {
                            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                            let results = v["results"].as_array().unwrap();
                            assert_eq!(results.len(), items.len(), "{text}");
                            let mut batched = batched.lock().unwrap();
                            for ((b, id), r) in items.iter().zip(results) {
                                assert_eq!(r["id"].as_str(), Some(id.as_str()), "{text}");
                                batched[*b].push(id.clone());
                            }
                        }
                        Ok((code, text)) => panic!("batches: {code} {text}"),
                        Err(_) => break,
                    }
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(100 + rng.next() % 400));
        s.kill();
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
    }
    let s = Server::start(dir.path(), &[]);
    check(&s, &acked.lock().unwrap(), &shared_acked.lock().unwrap());
    check_batched(&s, &batched.lock().unwrap());
    let total: usize = acked.lock().unwrap().iter().map(Vec::len).sum();
    assert!(total > 0, "some appends were acknowledged");
    let total: usize = batched.lock().unwrap().iter().map(Vec::len).sum();
    assert!(total > 0, "some batched appends were acknowledged");
    let report = s.ok(200, "POST", "/v1/verify", None);
    assert_eq!(report["ok"], true, "{report}");
}

/// Each writer's session holds its acknowledged ids as one chain, in order, each once (an
/// append in flight at the kill may be there too, at the end); so does the shared session.
fn check(s: &Server, acked: &[Vec<String>], shared: &[String]) {
    for (w, ids) in acked.iter().enumerate() {
        if ids.is_empty() {
            continue;
        }
        let path = s.lines(&format!(
            "/v1/sessions/w{w}/path?from={}",
            ids.last().unwrap()
        ));
        let got: Vec<&str> = path.iter().map(|v| v["id"].as_str().unwrap()).collect();
        assert_eq!(
            got, *ids,
            "writer {w}: every acknowledged append, once, one chain"
        );
        let all = s.lines(&format!("/v1/sessions/w{w}/entries"));
        // An append in flight at a kill may have landed unacknowledged: one per cycle.
        assert!(
            all.len() <= ids.len() + CYCLES,
            "writer {w}: nothing doubled"
        );
        let mut seen = std::collections::HashSet::new();
        for e in &all {
            assert!(
                seen.insert(e["id"].as_str().unwrap().to_owned()),
                "writer {w}: an id twice"
            );
        }
    }
    if !shared.is_empty() {
        let path = s.lines(&format!(
            "/v1/sessions/shared/path?from={}",
            shared.last().unwrap()
        ));
        let got: Vec<&str> = path.iter().map(|v| v["id"].as_str().unwrap()).collect();
        assert_eq!(
            got, *shared,
            "shared: every acknowledged append, once, one chain"
        );
    }
}

/// Each batched session is one chain holding its acknowledged ids in order, each once; items
/// of a batch in flight at a kill (unacknowledged) may lie between them, each once too.
fn check_batched(s: &Server, batched: &[Vec<String>]) {
    for (b, ids) in batched.iter().enumerate() {
        let path = s.lines(&format!("/v1/sessions/b{b}/path"));
        let got: Vec<&str> = path.iter().map(|v| v["id"].as_str().unwrap()).collect();
        let all = s.lines(&format!("/v1/sessions/b{b}/entries"));
        assert_eq!(got.len(), all.len(), "b{b}: one chain, no branch");
        let mut seen = std::collections::HashSet::new();
        assert!(got.iter().all(|id| seen.insert(*id)), "b{b}: an id twice");
        let mut acked = ids.iter().peekable();
        for id in &got {
            if acked.peek().is_some_and(|a| a.as_str() == *id) {
                acked.next();
            }
        }
        assert!(
            acked.peek().is_none(),
            "b{b}: acknowledged {:?} missing or out of order ({} entries on the path)",
            acked.next(),
            got.len()
        );
    }
}
