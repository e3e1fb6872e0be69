//! In-memory migration of legacy pi files, v1 → v2 → v3 (spec §2.8).
//!
//! The source file is never modified. Migrated lines are re-serialized with their keys in
//! place (a replaced key keeps its position, a new key goes last), which reproduces the file
//! pi-CLI rewrites, apart from the random ids.

use std::collections::HashSet;

use indexmap::IndexMap;
use serde_json::value::RawValue;

use crate::jsstr::quote;

/// An object's members, in order, with raw values.
type Members<'a> = IndexMap<String, &'a RawValue>;

/// Sets `key` to the JSON text `value` in the object text `obj` (in place, or as the last
/// key), optionally removing `remove`. `None` if `obj` is not a JSON object.
pub fn set_keys(obj: &str, set: &[(&str, String)], remove: &[&str]) -> Option<String> {
    let members: Members<'_> = serde_json::from_str(obj).ok()?;
    let mut out: Vec<(String, String)> = members
        .into_iter()
        .filter(|(k, _)| !remove.contains(&k.as_str()))
        .map(|(k, v)| (k, v.get().to_owned()))
        .collect();
    for (key, value) in set {
        match out.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value.clone(),
            None => out.push(((*key).to_owned(), value.clone())),
        }
    }
    Some(write_object(&out))
}

/// Serializes members as a compact JSON object.
pub fn write_object(members: &[(String, String)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&quote(k));
        s.push(':');
        s.push_str(v);
    }
    s.push('}');
    s
}

/// Migrates the lines of one legacy file as they stream by.
pub struct Migrator {
    version: u32,
    /// v1: ids assigned so far, by parsed-line index (the header is index 0).
    ids_by_index: Vec<Option<String>>,
    used: HashSet<String>,
    previous: Option<String>,
}

impl Migrator {
    /// A migrator for a file of `version` (1 or 2).
    pub fn new(version: u32) -> Migrator {
        Migrator {
            version,
            ids_by_index: vec![None],
            used: HashSet::new(),
            previous: None,
        }
    }

    /// The migrated header line: `version` set to 3, in place or as the last key.
    pub fn header(&self, raw: &str) -> Option<String> {
        set_keys(raw, &[("version", "3".to_owned())], &[])
    }

    /// Migrates one entry line that parsed as a JSON object. `fresh_id` draws candidate ids;
    /// collisions with ids this migration assigned are drawn again.
    pub fn entry(&mut self, raw: &str, fresh_id: &mut dyn FnMut() -> String) -> Option<String> {
        let mut text = raw.to_owned();
        if self.version == 1 {
            let mut id = fresh_id();
            let mut attempts = 0;
            while self.used.contains(&id) && attempts < 1000 {
                id = fresh_id();
                attempts += 1;
            }
            self.used.insert(id.clone());
            // pi assigns the id before resolving the index, so a compaction may name itself.
            self.ids_by_index.push(Some(id.clone()));
            let parent = self.previous.as_deref().map_or("null".to_owned(), quote);
            let mut set = vec![("id", quote(&id)), ("parentId", parent)];
            let mut remove = Vec::new();
            #[derive(serde::Deserialize)]
            struct Legacy<'a> {
                #[serde(rename = "type", default)]
                ty: Option<&'a str>,
                #[serde(rename = "firstKeptEntryIndex", default)]
                index: Option<f64>,
            }
            if let Ok(legacy) = serde_json::from_str::<Legacy<'_>>(raw) {
                if legacy.ty == Some("compaction") {
                    if let Some(index) = legacy.index {
                        remove.push("firstKeptEntryIndex");
                        if index.fract() == 0.0 && index >= 1.0 {
                            let target = self.ids_by_index.get(index as usize).cloned().flatten();
                            if let Some(t) = target {
                                set.push(("firstKeptEntryId", quote(&t)));
                            }
                        }
                    }
                }
            }
            text = set_keys(&text, &set, &remove)?;
            self.previous = Some(id);
        }
        // v2 → v3: message role hookMessage → custom, in place.
        #[derive(serde::Deserialize)]
        struct Msg<'a> {
            #[serde(rename = "type", default)]
            ty: Option<&'a str>,
            #[serde(borrow, default)]
            message: Option<&'a RawValue>,
        }
        let replaced = match serde_json::from_str::<Msg<'_>>(&text) {
            Ok(Msg {
                ty: Some("message"),
                message: Some(m),
            }) => {
                #[derive(serde::Deserialize)]
                struct RoleOf<'a> {
                    #[serde(default)]
                    role: Option<&'a str>,
                }
                match serde_json::from_str::<RoleOf<'_>>(m.get()) {
                    Ok(RoleOf {
                        role: Some("hookMessage"),
                    }) => {
                        let message = set_keys(m.get(), &[("role", quote("custom"))], &[])?;
                        Some(set_keys(&text, &[("message", message)], &[])?)
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        Some(replaced.unwrap_or(text))
    }
}
