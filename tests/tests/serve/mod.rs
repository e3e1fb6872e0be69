//! `grove serve` as a process (issue 17): its routes, bad input, slow and half-closed
//! connections, tokens, SIGTERM and SIGKILL; three nodes over one PostgreSQL primary with a
//! synchronous standby (issue 20); requests from browsers and other hosts (issue 28). Each
//! test starts the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bad_input;
mod cluster;
mod crash;
mod guard;
mod health;
mod input_limits;
mod limits;
mod listing;
mod oplog;
mod payloads;
mod redact;
mod replay;
mod retain;
mod routes;
mod search;
mod shard;
mod turns;
mod view;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::cli::grove_bin;

pub const TOKEN: &str = "test-token-0123456789abcdef";

/// A running `grove serve` on a store in `dir`, listening on its unix socket and on TCP at
/// 127.0.0.1 with [`TOKEN`]. Killed when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The unix socket.
    pub socket: PathBuf,
    agent: ureq::Agent,
}

impl Server {
    /// Starts a server on the store `dir/store`; `extra` are more `serve` options.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Server::start_with(dir, &["--durability", "sync"], extra)
    }

    /// [`Server::start`] with global options `global` (before `serve`).
    pub fn start_with(dir: &Path, global: &[&str], extra: &[&str]) -> Server {
        let token_file = write_token_file(dir, TOKEN);
        let mut command = Command::new(grove_bin());
        command
            .arg("--store")
            .arg(dir.join("store"))
            .args(global)
            .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&token_file)
            .args(extra);
        let (child, rx) = spawn_lines(&mut command);
        let mut url = None;
        let mut socket = None;
        while url.is_none() || socket.is_none() {
            let line = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("the server printed where it listens");
            if let Some(rest) = line.strip_prefix("listening on unix:") {
                socket = Some(PathBuf::from(rest));
            } else if let Some(rest) = line.strip_prefix("listening on ") {
                url = Some(rest.to_owned());
            }
        }
        Server {
            child,
            url: url.unwrap_or_default(),
            socket: socket.unwrap_or_default(),
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(60))
                .build(),
        }
    }

    /// Sends a request with the token; the status and the body.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        self.call_as(Some(TOKEN), method, path, body)
    }

    /// Sends a request with `token` (none: no authorization header).
    pub fn call_as(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> (u16, String) {
        self.call_with(token, &[], method, path, body)
    }

    /// Sends a request with `token` and more `headers` (name, value).
    pub fn call_with(
        &self,
        token: Option<&str>,
        headers: &[(&str, &str)],
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> (u16, String) {
        let mut req = self
            .agent
            .request(method, &format!("{}{path}", self.url))
            .set("content-type", "application/json");
        if let Some(t) = token {
            req = req.set("authorization", &format!("Bearer {t}"));
        }
        for (name, value) in headers {
            req = req.set(name, value);
        }
        let result = match body {
            Some(b) => req.send_string(b),
            None => req.call(),
        };
        match result {
            Ok(resp) => (resp.status(), resp.into_string().unwrap()),
            Err(ureq::Error::Status(code, resp)) => (code, resp.into_string().unwrap()),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    /// A request that must succeed with `status`; its body as JSON.
    pub fn ok(&self, status: u16, method: &str, path: &str, body: Option<&str>) -> Value {
        let (code, text) = self.call(method, path, body);
        assert_eq!(code, status, "{method} {path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
    }

    /// A streamed read: its lines as JSON.
    pub fn lines(&self, path: &str) -> Vec<Value> {
        let (code, text) = self.call("GET", path, None);
        assert_eq!(code, 200, "GET {path}: {text}");
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// A failing request: the error's code, checked against `status`.
    pub fn err(&self, status: u16, method: &str, path: &str, body: Option<&str>) -> String {
        let (code, text) = self.call(method, path, body);
        assert_eq!(code, status, "{method} {path}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(
            v["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{text}"
        );
        v["code"].as_str().unwrap().to_owned()
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.child.wait().unwrap()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `token` to the token file `dir/token`, readable by its owner only (as `grove serve`
/// requires); its path.
pub fn write_token_file(dir: &Path, token: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("token");
    std::fs::write(&path, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// Starts `command` with its stdout piped; its lines arrive on the receiver as it prints them.
pub fn spawn_lines(command: &mut Command) -> (Child, mpsc::Receiver<String>) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// A pi user message entry line with `id` and `parent`.
pub fn user_line(id: &str, parent: Option<&str>, text: &str) -> String {
    serde_json::json!({
        "type": "message",
        "id": id,
        "parentId": parent,
        "timestamp": "2025-03-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
    })
    .to_string()
}
