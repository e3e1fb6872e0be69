//! Claude Code's conversation chain: which line of a transcript the conversation continues
//! from (its leaf) and which lines, root first, are its messages, by the rules the Claude Agent
//! SDK's `get_session_messages` / `getSessionMessages` applies to a transcript file
//! (`_build_conversation_chain`, `_recover_orphaned_parallel_tool_results` and
//! `_is_visible_message` in the Python SDK's `_internal/sessions.py`, 0.2.190; the TypeScript
//! SDK has the same). docs/format.md, "Foreign transcripts", states them.
//!
//! - The transcript entries are the lines of type `user`, `assistant`, `progress`, `system` or
//!   `attachment` with a string `uuid`; a `uuid` given twice names its last line.
//! - The leaf: from each entry no `parentUuid` names, walk `parentUuid` back to the nearest
//!   `user` or `assistant` entry; of those, the last in the file that is a main-chain one (not a
//!   sidechain's, a team's, or meta), else the last of all.
//! - The chain: from the leaf, `parentUuid` back to a root. `logicalParentUuid` (a compaction
//!   boundary's) is not followed: after a compaction the summary stands for what came before.
//!   A response that ran tools in parallel is written as one assistant line per content block,
//!   whose results fan out from different lines; the calls and results the walk did not reach
//!   are put back after the response's last line on the chain.
//! - The messages: the chain's `user` and `assistant` entries that are not meta, a sidechain's
//!   or a team's; each one's `message` object.
//!
//! Flags are tested as Python does (`true`, a non-empty string, array or object, a non-zero
//! number). It owns those rules and calls nothing but serde_json.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{text, Fields};

/// What the leaf rule reads of a transcript entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// `uuid`.
    pub uuid: String,
    /// `parentUuid`, when a non-empty string.
    pub parent: Option<String>,
    /// A `user` or `assistant` entry.
    pub message: bool,
    /// A main-chain one: not a sidechain's, not a team's, not meta.
    pub main: bool,
}

/// The line types that are transcript entries.
pub fn is_transcript_type(ty: &str) -> bool {
    matches!(
        ty,
        "user" | "assistant" | "progress" | "system" | "attachment"
    )
}

/// Python's truthiness of a JSON value (`None` for a missing field is false).
pub fn truthy(raw: Option<&RawValue>) -> bool {
    let Some(raw) = raw else {
        return false;
    };
    let t = raw.get().trim();
    match t.as_bytes().first() {
        Some(b'n') | Some(b'f') | None => false,
        Some(b't') => true,
        Some(b'"') => t.len() > 2,
        Some(b'[') | Some(b'{') => !t[1..t.len().saturating_sub(1)].trim().is_empty(),
        _ => t.parse::<f64>().is_ok_and(|n| n != 0.0),
    }
}

/// A transcript entry, as the chain and the messages read it.
#[derive(Debug, Clone)]
pub struct ChainEntry {
    /// The leaf rule's part.
    pub link: Link,
    /// `type` is `user`.
    pub user: bool,
    /// `type` is `assistant`.
    pub assistant: bool,
    /// `isSidechain`, truthy.
    pub sidechain: bool,
    /// `agentId` as JSON text (compared as the SDK compares it).
    pub agent_id: Option<String>,
    /// An assistant entry's `message.id`, when a non-empty string.
    pub message_id: Option<String>,
    /// An assistant entry's `message.model`, when a string.
    pub model: Option<String>,
    /// For a message the SDK returns (a `user` or `assistant` entry, not meta, not a
    /// sidechain's or a team's), its `message` as JSON text (`null` when it has none): what the
    /// context hands out, kept from the one parse of the line.
    pub message: Option<String>,
    /// The `id` of each `tool_use` block of `message.content`.
    pub tool_uses: Vec<String>,
    /// The `tool_use_id` of each `tool_result` block of `message.content`.
    pub tool_results: Vec<String>,
    /// A `user` entry with a parent whose content has a `tool_result` block.
    pub is_tool_result: bool,
    /// `sourceToolAssistantUUID`, when a string.
    pub source_tool_assistant: Option<String>,
    /// `timestamp`, when a string (else empty: the SDK's sort key).
    pub timestamp: String,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_use_id: Option<&'a RawValue>,
}

/// The flags of the leaf rule from a line's fields: `(message, main)`.
pub fn link_flags(
    ty: &str,
    sidechain: Option<&RawValue>,
    meta: Option<&RawValue>,
    team: Option<&RawValue>,
) -> (bool, bool) {
    let message = matches!(ty, "user" | "assistant");
    let main = message && !truthy(sidechain) && !truthy(team) && !truthy(meta);
    (message, main)
}

impl ChainEntry {
    /// The entry a line is, or `None` when it is not a transcript entry (another type, no
    /// string `uuid`, not a JSON object).
    pub fn parse(line: &[u8]) -> Option<ChainEntry> {
        let l: Fields<'_> = serde_json::from_slice(line).ok()?;
        let ty = text(l.ty)?;
        if !is_transcript_type(&ty) {
            return None;
        }
        let uuid = text(l.uuid)?;
        let parent = text(l.parent_uuid).filter(|p| !p.is_empty());
        let (message, main) = link_flags(&ty, l.is_sidechain, l.is_meta, l.team_name);
        let (user, assistant) = (ty == "user", ty == "assistant");
        let m: Option<Message<'_>> = l
            .message
            .and_then(|m| serde_json::from_str::<Message<'_>>(m.get()).ok());
        let blocks: Vec<Block<'_>> = m
            .as_ref()
            .and_then(|m| m.content)
            .and_then(|c| serde_json::from_str::<Vec<&RawValue>>(c.get()).ok())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|b| serde_json::from_str::<Block<'_>>(b.get()).ok())
            .collect();
        let of_type = |want: &'static str| {
            blocks
                .iter()
                .filter(move |b| text(b.ty).as_deref() == Some(want))
        };
        let message_id = match assistant {
            true => m
                .as_ref()
                .and_then(|m| text(m.id))
                .filter(|i| !i.is_empty()),
            false => None,
        };
        let tool_uses = match message_id {
            Some(_) => of_type("tool_use").filter_map(|b| text(b.id)).collect(),
            None => Vec::new(),
        };
        let tool_results: Vec<String> = of_type("tool_result")
            .filter_map(|b| text(b.tool_use_id))
            .collect();
        let is_tool_result = user && parent.is_some() && of_type("tool_result").next().is_some();
        let visible =
            message && !truthy(l.is_meta) && !truthy(l.is_sidechain) && !truthy(l.team_name);
        Some(ChainEntry {
            link: Link {
                uuid,
                parent,
                message,
                main,
            },
            user,
            assistant,
            sidechain: truthy(l.is_sidechain),
            agent_id: l.agent_id.map(|a| a.get().to_owned()),
            model: m.as_ref().and_then(|m| text(m.model)),
            message: visible.then(|| l.message.map_or("null", |m| m.get()).to_owned()),
            message_id,
            tool_uses,
            tool_results,
            is_tool_result,
            source_tool_assistant: text(l.source_tool_assistant),
            timestamp: text(l.timestamp).unwrap_or_default(),
        })
    }
}

/// Each `uuid`'s last entry.
fn by_uuid<'a>(links: &[&'a Link]) -> HashMap<&'a str, usize> {
    let mut map = HashMap::with_capacity(links.len());
    for (i, l) in links.iter().enumerate() {
        map.insert(l.uuid.as_str(), i);
    }
    map
}

/// The leaf (an index into `links`, which are the transcript entries in file order), or
/// `None` when no walk reaches a `user` or `assistant` entry.
pub fn leaf(links: &[&Link]) -> Option<usize> {
    let by_uuid = by_uuid(links);
    let referenced: HashSet<&str> = links.iter().filter_map(|l| l.parent.as_deref()).collect();
    let mut leaves = Vec::new();
    for (t, terminal) in links.iter().enumerate() {
        if referenced.contains(terminal.uuid.as_str()) {
            continue;
        }
        let mut seen = HashSet::new();
        let mut cur = Some(t);
        while let Some(i) = cur {
            let l = links[i];
            if !seen.insert(l.uuid.as_str()) {
                break;
            }
            if l.message {
                leaves.push(i);
                break;
            }
            cur = l.parent.as_deref().and_then(|p| by_uuid.get(p).copied());
        }
    }
    // The position of a leaf is its `uuid`'s last line; the first of equals wins.
    let best = |candidates: &mut dyn Iterator<Item = usize>| {
        let mut best: Option<(usize, usize)> = None;
        for i in candidates {
            let at = by_uuid.get(links[i].uuid.as_str()).copied().unwrap_or(i);
            if best.is_none_or(|(_, b)| at > b) {
                best = Some((i, at));
            }
        }
        best.map(|(i, _)| i)
    };
    best(&mut leaves.iter().copied().filter(|&i| links[i].main))
        .or_else(|| best(&mut leaves.iter().copied()))
}

/// The chain from `leaf` (an index into `entries`, the transcript entries in file order), root
/// first, with the parallel calls and results the walk left off put back: indexes into
/// `entries`.
pub fn chain(entries: &[ChainEntry], leaf: usize) -> Vec<usize> {
    let links: Vec<&Link> = entries.iter().map(|e| &e.link).collect();
    let by_uuid = by_uuid(&links);
    let mut chain = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut cur = entries.get(leaf).map(|_| leaf);
    while let Some(i) = cur {
        let e = &entries[i];
        if !seen.insert(e.link.uuid.as_str()) {
            break;
        }
        chain.push(i);
        cur = e
            .link
            .parent
            .as_deref()
            .and_then(|p| by_uuid.get(p).copied());
    }
    chain.reverse();
    recover_parallel(entries, &by_uuid, chain, &mut seen)
}

/// `_recover_orphaned_parallel_tool_results`: for each response on the chain, its assistant
/// entries and their results the walk did not reach go right after the response's last entry
/// on the chain, siblings first, each group in timestamp order (stable).
fn recover_parallel<'a>(
    entries: &'a [ChainEntry],
    by_uuid: &HashMap<&'a str, usize>,
    chain: Vec<usize>,
    seen: &mut HashSet<&'a str>,
) -> Vec<usize> {
    let chain_assistants: Vec<usize> = chain
        .iter()
        .copied()
        .filter(|&i| entries[i].assistant)
        .collect();
    if chain_assistants.is_empty() {
        return chain;
    }
    // The last on-chain entry of each response.
    let mut anchor: HashMap<&str, usize> = HashMap::new();
    for &i in &chain_assistants {
        if let Some(id) = entries[i].message_id.as_deref() {
            anchor.insert(id, i);
        }
    }
    if anchor.is_empty() {
        return chain;
    }
    // Each uuid's last entry, in the order the uuids first appear (a Python dict's values).
    let mut order: Vec<&str> = Vec::with_capacity(by_uuid.len());
    let mut listed = HashSet::with_capacity(by_uuid.len());
    for e in entries {
        if listed.insert(e.link.uuid.as_str()) {
            order.push(e.link.uuid.as_str());
        }
    }
    let values: Vec<usize> = order
        .iter()
        .filter_map(|u| by_uuid.get(u).copied())
        .collect();
    let file_position: HashMap<&str, usize> =
        order.iter().enumerate().map(|(i, u)| (*u, i)).collect();

    let mut siblings: HashMap<&str, Vec<usize>> = HashMap::new();
    // A call claimed by two responses is ambiguous (None).
    let mut call_owner: HashMap<&str, Option<usize>> = HashMap::new();
    let mut tool_result_entries = Vec::new();
    for &i in &values {
        let e = &entries[i];
        if let Some(mid) = e.message_id.as_deref() {
            siblings.entry(mid).or_default().push(i);
            for call in &e.tool_uses {
                match call_owner.get(call.as_str()) {
                    None => {
                        call_owner.insert(call, Some(i));
                    }
                    Some(owner) => {
                        let same =
                            owner.is_some_and(|o| entries[o].message_id.as_deref() == Some(mid));
                        call_owner.insert(call, same.then_some(i));
                    }
                }
            }
        } else if e.is_tool_result {
            tool_result_entries.push(i);
        }
    }
    let same_writer = |a: usize, b: usize| {
        entries[a].sidechain == entries[b].sidechain && entries[a].agent_id == entries[b].agent_id
    };
    let mut results_by_assistant: HashMap<&str, Vec<usize>> = HashMap::new();
    for &r in &tool_result_entries {
        let e = &entries[r];
        if let Some(p) = e.link.parent.as_deref() {
            results_by_assistant.entry(p).or_default().push(r);
        }
        if let Some(source) = e.source_tool_assistant.as_deref() {
            if let Some(&s) = by_uuid.get(source) {
                if same_writer(r, s) {
                    results_by_assistant
                        .entry(entries[s].link.uuid.as_str())
                        .or_default()
                        .push(r);
                }
            }
        }
        for call in &e.tool_results {
            if let Some(Some(owner)) = call_owner.get(call.as_str()) {
                if same_writer(r, *owner) {
                    results_by_assistant
                        .entry(entries[*owner].link.uuid.as_str())
                        .or_default()
                        .push(r);
                }
            }
        }
    }

    let mut answered_on_chain: Option<HashSet<&str>> = None;
    let mut processed = HashSet::new();
    let mut inserts: HashMap<usize, Vec<usize>> = HashMap::new();
    for &a in &chain_assistants {
        let Some(mid) = entries[a].message_id.as_deref() else {
            continue;
        };
        if !processed.insert(mid) {
            continue;
        }
        let group: Vec<usize> = siblings.get(mid).cloned().unwrap_or_else(|| vec![a]);
        let members: HashSet<&str> = group
            .iter()
            .map(|&m| entries[m].link.uuid.as_str())
            .collect();
        let mut orphaned_siblings: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&m| !seen.contains(entries[m].link.uuid.as_str()))
            .collect();
        let mut orphaned_results = Vec::new();
        let mut strays = Vec::new();
        let mut collected = HashSet::new();
        for &m in &group {
            for &r in results_by_assistant
                .get(entries[m].link.uuid.as_str())
                .map_or(&[][..], Vec::as_slice)
            {
                let ru = entries[r].link.uuid.as_str();
                if seen.contains(ru) || !collected.insert(ru) {
                    continue;
                }
                if entries[r]
                    .link
                    .parent
                    .as_deref()
                    .is_some_and(|p| members.contains(p))
                {
                    orphaned_results.push(r);
                } else {
                    strays.push(r);
                }
            }
        }
        if !strays.is_empty() {
            let on_chain = answered_on_chain.get_or_insert_with(|| {
                chain
                    .iter()
                    .flat_map(|&i| entries[i].tool_results.iter().map(String::as_str))
                    .collect()
            });
            let mut answered = on_chain.clone();
            for &r in &orphaned_results {
                answered.extend(entries[r].tool_results.iter().map(String::as_str));
            }
            strays.sort_by_key(|&r| {
                file_position
                    .get(entries[r].link.uuid.as_str())
                    .copied()
                    .unwrap_or(usize::MAX)
            });
            for r in strays {
                let calls = &entries[r].tool_results;
                let answers_open_call = calls.iter().any(|c| {
                    !answered.contains(c.as_str())
                        && call_owner
                            .get(c.as_str())
                            .copied()
                            .flatten()
                            .is_some_and(|o| members.contains(entries[o].link.uuid.as_str()))
                });
                if !answers_open_call {
                    continue;
                }
                answered.extend(calls.iter().map(String::as_str));
                orphaned_results.push(r);
            }
        }
        if orphaned_siblings.is_empty() && orphaned_results.is_empty() {
            continue;
        }
        orphaned_siblings.sort_by(|&x, &y| entries[x].timestamp.cmp(&entries[y].timestamp));
        orphaned_results.sort_by(|&x, &y| entries[x].timestamp.cmp(&entries[y].timestamp));
        let mut recovered = orphaned_siblings;
        recovered.extend(orphaned_results);
        for &r in &recovered {
            seen.insert(entries[r].link.uuid.as_str());
        }
        if let Some(&at) = anchor.get(mid) {
            inserts.insert(at, recovered);
        }
    }
    if inserts.is_empty() {
        return chain;
    }
    let mut out = Vec::with_capacity(chain.len());
    for i in chain {
        out.push(i);
        if let Some(more) = inserts.get(&i) {
            out.extend(more);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn flags_are_tested_as_python_does() {
        for (json, want) in [
            ("true", true),
            ("false", false),
            ("null", false),
            ("\"\"", false),
            ("\"x\"", true),
            ("0", false),
            ("0.0", false),
            ("2", true),
            ("[]", false),
            ("[ ]", false),
            ("[0]", true),
            ("{}", false),
            ("{\"a\":1}", true),
        ] {
            assert_eq!(truthy(Some(&raw(json))), want, "{json}");
        }
        assert!(!truthy(None));
    }

    fn link(uuid: &str, parent: Option<&str>, message: bool, main: bool) -> Link {
        Link {
            uuid: uuid.to_owned(),
            parent: parent.map(str::to_owned),
            message,
            main,
        }
    }

    #[test]
    fn the_leaf_walks_back_from_terminals_to_a_message() {
        // u1 <- a1 <- s1 (a system line ends the file), and a rewound a0 under u1 earlier.
        let links = [
            link("u1", None, true, true),
            link("a0", Some("u1"), true, true),
            link("a1", Some("u1"), true, true),
            link("s1", Some("a1"), false, false),
            link("m1", Some("a1"), true, false),
        ];
        let refs: Vec<&Link> = links.iter().collect();
        // s1 walks back to a1, the last main one; m1 is meta, a0 older.
        assert_eq!(leaf(&refs), Some(2));
        // Only non-main leaves: the last of them.
        let side = [link("x", None, true, false), link("y", None, true, false)];
        let refs: Vec<&Link> = side.iter().collect();
        assert_eq!(leaf(&refs), Some(1));
        // No message at all.
        let none = [link("s", None, false, false)];
        let refs: Vec<&Link> = none.iter().collect();
        assert_eq!(leaf(&refs), None);
    }
}
