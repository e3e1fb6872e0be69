//! `grove replay`: a session's history in order, each record with its change to the context.

use crate::env::Env;
use crate::error::{CmdResult, CommandError};
use crate::remote::{segment, Server};

/// Replay a session's history as JSON lines: its operations and records in log order, each
/// record with the change it made to the active context (what the model sees), so a reader
/// can tell what the model saw at every step in one pass.
///
/// The first line is {"type":"start","op","seq","leaf","context"}: the session before the
/// first replayed operation. Then, per operation, {"type":"operation","op","kind","time",
/// "timeMs","actor","firstSeq","leafBefore"} followed by its records, each
/// {"type":"record","op","seq","id","leaf","entry","context":{"keep","append","messages"}}:
/// the context after the record is the first `keep` messages of the one before it, then
/// `append`; "model", "thinkingLevel" and "activeToolNames" appear when they changed.
///
/// --follow waits for new operations and prints them as they are committed; it reads a store
/// served by `grove serve` (--url), since only the server's process writes to it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Start at operation N (`grove log` numbers them; the operation count: only new ones).
    #[arg(long, value_name = "N")]
    from_op: Option<u64>,
    /// End after operation M.
    #[arg(long, value_name = "M")]
    until_op: Option<u64>,
    /// Wait for new operations instead of ending at the end of the log (needs --url).
    #[arg(long)]
    follow: bool,
    /// Read from a running `grove serve` instead of the store: unix:/path/to/socket or
    /// http://host:port.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The server's bearer token (for a TCP listener).
    #[arg(long, env = "GROVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    if let Some(url) = &args.url {
        let server = Server::new(url, args.token.clone())?;
        let mut query: Vec<(&str, String)> = Vec::new();
        if let Some(n) = args.from_op {
            query.push(("fromOp", n.to_string()));
        }
        if let Some(n) = args.until_op {
            query.push(("untilOp", n.to_string()));
        }
        if args.follow {
            query.push(("follow", "true".to_owned()));
        }
        let query = serde_urlencoded::to_string(&query)
            .map_err(|e| CommandError::invalid(format!("the replay query: {e}"), ""))?;
        let path = format!("/v1/sessions/{}/replay?{query}", segment(&args.session));
        return server.stream_to(&path, &mut *env.out);
    }
    if args.follow {
        return Err(CommandError::invalid(
            "--follow reads a served store: give --url",
            "start `grove serve` on the store and pass the address it prints (unix:/path or \
             http://host:port); a store this process opens gets no writes from elsewhere",
        ));
    }
    let (_store, session) = env.read_session(&args.session)?;
    let replay = session.replay(grove::ReplayOptions {
        from_op: args.from_op,
        until_op: args.until_op,
        ..grove::ReplayOptions::default()
    })?;
    for event in replay {
        writeln!(env.out, "{}", event?.to_json())?;
    }
    Ok(())
}
