//! etcd v3 through its JSON gateway (`/v3/kv/range`, `/v3/kv/put`, `/v3/kv/deleterange`,
//! `/v3/kv/txn`, `/v3/lease/grant`, `/v3/lease/keepalive`, `/v3/lease/revoke`; keys and values
//! in base64, 64-bit numbers as JSON strings), over ureq's blocking HTTP client.
//!
//! Several endpoints (the members of one cluster) are tried in turn: a request goes to the
//! member that answered last, and to the next one when a member cannot be reached or answers
//! with a server error (a member cut off from its quorum refuses linearizable reads and
//! writes). A 4xx answer is the request's own fault and is not retried elsewhere.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};

/// What talking to etcd can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EtcdError {
    /// No endpoint was given.
    #[error("no etcd endpoint given")]
    NoEndpoints,
    /// An endpoint is not an `http://HOST:PORT` URL.
    #[error("'{0}' is not an etcd endpoint (http://HOST:PORT)")]
    BadEndpoint(String),
    /// Every endpoint failed; the last failure is named.
    #[error("no etcd member answered {path} (tried {tried}): {last}")]
    Unreachable {
        /// The gateway path asked.
        path: &'static str,
        /// The endpoints tried.
        tried: String,
        /// The last failure.
        last: String,
    },
    /// A member refused the request itself (a 4xx answer).
    #[error("etcd at {url} refused {path}: {status} {body}")]
    Refused {
        /// The member.
        url: String,
        /// The gateway path.
        path: &'static str,
        /// The HTTP status.
        status: u16,
        /// Its body.
        body: String,
    },
    /// An answer is not what etcd's API documents.
    #[error("etcd's answer to {path} is malformed: {what}")]
    Malformed {
        /// The gateway path.
        path: &'static str,
        /// What is wrong with it.
        what: String,
    },
}

/// A key and its value as etcd holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value's bytes.
    pub value: Vec<u8>,
    /// The revision of its last change.
    pub mod_revision: i64,
}

/// One condition of a transaction.
#[derive(Debug, Clone)]
pub enum Compare {
    /// The key does not exist.
    Absent(String),
    /// The key was last changed at this revision.
    ModRevision(String, i64),
}

/// One write of a transaction.
#[derive(Debug, Clone)]
pub enum Op {
    /// Put the value, attached to a lease when one is given.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: Vec<u8>,
        /// The lease the key lives under.
        lease: Option<i64>,
    },
    /// Delete the key.
    Delete(String),
}

/// A client of one etcd cluster.
pub struct Etcd {
    endpoints: Vec<String>,
    /// The index of the endpoint that answered last.
    current: AtomicUsize,
    agent: ureq::Agent,
}

impl Etcd {
    /// A client of the cluster whose members answer at `endpoints` (comma-separated
    /// `http://HOST:PORT` URLs).
    pub fn new(endpoints: &str) -> Result<Etcd, EtcdError> {
        let mut list = Vec::new();
        for url in endpoints
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
        {
            let rest = url
                .strip_prefix("http://")
                .ok_or_else(|| EtcdError::BadEndpoint(url.to_owned()))?;
            if rest.is_empty() || rest.contains('/') && !rest.ends_with('/') {
                return Err(EtcdError::BadEndpoint(url.to_owned()));
            }
            list.push(url.trim_end_matches('/').to_owned());
        }
        if list.is_empty() {
            return Err(EtcdError::NoEndpoints);
        }
        Ok(Etcd {
            endpoints: list,
            current: AtomicUsize::new(0),
            agent: ureq::AgentBuilder::new()
                .timeout_connect(Duration::from_secs(2))
                .timeout(Duration::from_secs(5))
                .build(),
        })
    }

    /// The endpoints, as given.
    #[cfg(test)]
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// Posts `body` to `path`, trying each member in turn from the one that answered last.
    fn call(&self, path: &'static str, body: &Value) -> Result<Value, EtcdError> {
        let n = self.endpoints.len();
        let start = self.current.load(Ordering::Relaxed) % n;
        let mut last = String::new();
        for i in 0..n {
            let at = (start + i) % n;
            let url = &self.endpoints[at];
            match self.agent.post(&format!("{url}{path}")).send_json(body) {
                Ok(resp) => {
                    let value: Value = resp.into_json().map_err(|e| EtcdError::Malformed {
                        path,
                        what: e.to_string(),
                    })?;
                    self.current.store(at, Ordering::Relaxed);
                    return Ok(value);
                }
                Err(ureq::Error::Status(status, resp)) if status < 500 => {
                    return Err(EtcdError::Refused {
                        url: url.clone(),
                        path,
                        status,
                        body: resp.into_string().unwrap_or_default(),
                    })
                }
                Err(ureq::Error::Status(status, resp)) => {
                    last = format!("{url}: {status} {}", resp.into_string().unwrap_or_default());
                }
                Err(e) => last = format!("{url}: {e}"),
            }
        }
        Err(EtcdError::Unreachable {
            path,
            tried: self.endpoints.join(", "),
            last,
        })
    }

    /// Every key starting with `prefix`, in key order, and the revision they were read at.
    pub fn range_prefix(&self, prefix: &str) -> Result<(i64, Vec<KeyValue>), EtcdError> {
        let end = prefix_end(prefix.as_bytes());
        let answer = self.call(
            "/v3/kv/range",
            &json!({ "key": B64.encode(prefix), "range_end": B64.encode(end) }),
        )?;
        let revision = number(&answer["header"]["revision"]);
        let mut out = Vec::new();
        if let Some(kvs) = answer["kvs"].as_array() {
            for kv in kvs {
                out.push(key_value("/v3/kv/range", kv)?);
            }
        }
        Ok((revision, out))
    }

    /// Applies `ops` if every comparison holds: `Some(revision written at)`, or `None` when a
    /// comparison failed and nothing was written.
    pub fn txn(&self, compare: &[Compare], ops: &[Op]) -> Result<Option<i64>, EtcdError> {
        let compare: Vec<Value> = compare
            .iter()
            .map(|c| match c {
                Compare::Absent(key) => json!({
                    "key": B64.encode(key), "target": "CREATE", "result": "EQUAL",
                    "create_revision": "0",
                }),
                Compare::ModRevision(key, rev) => json!({
                    "key": B64.encode(key), "target": "MOD", "result": "EQUAL",
                    "mod_revision": rev.to_string(),
                }),
            })
            .collect();
        let success: Vec<Value> = ops
            .iter()
            .map(|op| match op {
                Op::Put { key, value, lease } => {
                    let mut put = json!({ "key": B64.encode(key), "value": B64.encode(value) });
                    if let Some(lease) = lease {
                        put["lease"] = json!(lease.to_string());
                    }
                    json!({ "request_put": put })
                }
                Op::Delete(key) => json!({ "request_delete_range": { "key": B64.encode(key) } }),
            })
            .collect();
        let answer = self.call(
            "/v3/kv/txn",
            &json!({ "compare": compare, "success": success, "failure": [] }),
        )?;
        // proto3's JSON leaves out false booleans.
        Ok((answer["succeeded"] == Value::Bool(true))
            .then(|| number(&answer["header"]["revision"])))
    }

    /// Grants a lease of `ttl` seconds; its id.
    pub fn grant(&self, ttl: u64) -> Result<i64, EtcdError> {
        let answer = self.call("/v3/lease/grant", &json!({ "TTL": ttl.to_string() }))?;
        match number(&answer["ID"]) {
            0 => Err(EtcdError::Malformed {
                path: "/v3/lease/grant",
                what: format!("no lease id in {answer}"),
            }),
            id => Ok(id),
        }
    }

    /// Renews a lease once; false when it had expired.
    pub fn keep_alive(&self, lease: i64) -> Result<bool, EtcdError> {
        let answer = self.call("/v3/lease/keepalive", &json!({ "ID": lease.to_string() }))?;
        Ok(number(&answer["result"]["TTL"]) > 0)
    }

    /// Ends a lease: the keys under it are deleted.
    pub fn revoke(&self, lease: i64) -> Result<(), EtcdError> {
        self.call("/v3/lease/revoke", &json!({ "ID": lease.to_string() }))
            .map(drop)
    }
}

/// The first key after every key starting with `prefix` (etcd's `range_end` of a prefix).
pub(super) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff (or empty): to the end of the key space.
    vec![0]
}

/// A 64-bit number of etcd's JSON: a string (proto3's int64), a number, or absent (zero).
fn number(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

fn key_value(path: &'static str, kv: &Value) -> Result<KeyValue, EtcdError> {
    let decode = |field: &str| -> Result<Vec<u8>, EtcdError> {
        match kv[field].as_str() {
            None => Ok(Vec::new()),
            Some(text) => B64.decode(text).map_err(|e| EtcdError::Malformed {
                path,
                what: format!("{field} is not base64: {e}"),
            }),
        }
    };
    let key = String::from_utf8(decode("key")?).map_err(|_| EtcdError::Malformed {
        path,
        what: "a key is not UTF-8".to_owned(),
    })?;
    Ok(KeyValue {
        key,
        value: decode("value")?,
        mod_revision: number(&kv["mod_revision"]),
    })
}
