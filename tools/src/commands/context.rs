//! `grove context`: what the model sees at the leaf (or another entry).

use std::io::Write;

use clap::ValueEnum;
use grove::{Context, ContextOptions};
use serde_json::Value;

use crate::env::Env;
use crate::error::CmdResult;
use crate::output::{message_preview, role_of};

/// Show the context a model would be given at the active leaf: the messages and the
/// settings (model, thinking level, active tools).
///
/// Human output: a settings line, then one `role: preview` line per message. With --json:
/// exactly {"messages": [...], "model": {"provider", "modelId"} | null, "thinkingLevel":
/// "...", "activeToolNames": [...] | null}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique id prefix).
    session: String,
    /// Whose rules build the context: `grove` (settings survive compaction, tails used,
    /// null content normalized), `harness` (exactly pi's harness `buildContext`) or `cli`
    /// (exactly pi-CLI's `buildSessionContext`).
    #[arg(long, value_enum, default_value_t = Preset::Grove)]
    preset: Preset,
    /// Build the context at this entry instead of the leaf: an id or unique prefix, `@`,
    /// `@-` or `root`.
    #[arg(long, value_name = "ID")]
    from: Option<String>,
    #[command(flatten)]
    at: super::at::AtArgs,
    /// Print the context as JSON.
    #[arg(long)]
    json: bool,
}

/// `--preset` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Preset {
    Grove,
    Harness,
    Cli,
}

pub fn run(args: Args, env: &mut Env<'_>) -> CmdResult {
    let (_store, session) = env.read_session(&args.session)?;
    let options = match args.preset {
        Preset::Grove => ContextOptions::grove(),
        Preset::Harness => ContextOptions::pi_harness(),
        Preset::Cli => ContextOptions::pi_cli(),
    };
    let leaf = super::at::resolve_from_at(&session, args.from.as_deref(), &args.at)?;
    if leaf.is_none() {
        let ctx = empty_context();
        return match args.json {
            true => Ok(writeln!(env.out, "{}", ctx.to_json())?),
            false => render(&ctx, env.out),
        };
    }
    if args.json {
        // Streamed: the memory it takes is one entry, whatever the size of the context.
        session.write_context(leaf.as_deref(), options, env.out)?;
        writeln!(env.out)?;
        return Ok(());
    }
    // The settings line comes first: the previews wait for it (a line each).
    let mut previews = Vec::new();
    let settings = session.for_each_message(leaf.as_deref(), options, &mut |m| {
        previews.push(preview_line(m));
        Ok(())
    })?;
    writeln!(env.out, "{}", settings_line(&settings))?;
    for line in previews {
        writeln!(env.out, "{line}")?;
    }
    Ok(())
}

/// The context at the root position.
fn empty_context() -> Context {
    Context::empty()
}

/// The settings line, then one `role: preview` line per message.
pub fn render(ctx: &Context, out: &mut dyn Write) -> CmdResult {
    writeln!(out, "{}", settings_line(ctx))?;
    for m in ctx.messages.iter() {
        writeln!(out, "{}", preview_line(m))?;
    }
    Ok(())
}

/// `model: …  thinking: …  tools: …`.
fn settings_line(ctx: &Context) -> String {
    let raw = |s: &Option<String>| {
        s.as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .unwrap_or_else(|| "?".to_owned())
    };
    let model = match &ctx.model {
        None => "none".to_owned(),
        Some(m) => format!("{}/{}", raw(&m.provider), raw(&m.model_id)),
    };
    let thinking = raw(&Some(ctx.thinking_level.clone()));
    let tools = match &ctx.active_tool_names {
        None => "default".to_owned(),
        Some(t) => serde_json::from_str::<Vec<Value>>(t)
            .map(|names| {
                names
                    .iter()
                    .map(|n| n.as_str().map_or_else(|| n.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_else(|_| t.clone()),
    };
    format!("model: {model}  thinking: {thinking}  tools: {tools}")
}

/// `role: preview` of one message.
fn preview_line(m: &str) -> String {
    match serde_json::from_str::<Value>(m) {
        Ok(v) => format!("{}: {}", role_of(&v), message_preview(&v)),
        Err(_) => format!("?: {}", crate::output::clip(m)),
    }
}
