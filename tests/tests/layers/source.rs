//! Reads one crate's sources into a graph of file -> file imports.
//!
//! The module tree is followed from the crate root (`lib.rs` or `main.rs`) through its `mod x;`
//! declarations: module `a::b` is the file `a/b.rs` or `a/b/mod.rs`, and an inline `mod m { .. }`
//! belongs to the file it is written in. A declaration under `#[cfg(test)]` (or `#[test]`) is not
//! followed, so files that only hold tests are not read.
//!
//! Every crate-internal path of non-test code is an edge from its file to the file of the
//! longest prefix of the path that is a module: `use` trees (any visibility, nested braces, `as`
//! renames, `self` in braces, globs), inline paths in code and types (`crate::a::f()`,
//! `super::x::Y`), and the same paths inside macro arguments. A path is crate-internal when it
//! starts with `crate`, `super` or `self`, with a child module of the module it is written in,
//! or with a module brought in by a `use` of that module (`use crate::kv; kv::mem::f()`). A path
//! that stops at the crate root follows the root's re-exports (`crate::Session` is
//! `session::Session`). Comments and string literals are tokens syn never shows as paths.
//!
//! Not edges: anything the crate root (`lib.rs`, `main.rs`) says (it declares modules and
//! re-exports), paths to the root itself, a file's paths to itself, and a `pub` / `pub(crate)`
//! `use` by which a file re-exports one of its own submodules (a folder's `mod.rs` face). Any other
//! use of a submodule in its parent file, code calling it, is an edge.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, Item, Meta, Token, UseTree, Visibility};

/// A module path inside the crate: `["kv", "sled_kv"]`; the root is `[]`.
pub type ModPath = Vec<String>;

/// One crate's files and the imports between them.
#[derive(Debug)]
pub struct Crate {
    /// How paths are shown: the source folder as seen from the workspace (`engine/src`).
    pub label: String,
    /// The files read, the root first.
    pub files: Vec<SourceFile>,
    /// Every import from one file to another, in the order found.
    pub edges: Vec<Edge>,
}

/// One source file of a crate.
#[derive(Debug)]
pub struct SourceFile {
    /// The path below the source folder, with `/`: `kv/mod.rs`.
    pub rel: String,
    /// Its module path.
    pub module: ModPath,
}

/// An import of `to` by `from` (indexes into [`Crate::files`]).
#[derive(Debug, Clone)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    /// The line of `from` where the path is written (1-based).
    pub line: usize,
    /// The path as written: `use crate::store::Durability`, `crate::keys::log_key`.
    pub text: String,
}

impl Crate {
    /// Reads the crate whose root file is in `src`, naming its files `label/...` in reports.
    pub fn load(src: &Path, label: &str) -> Result<Crate, String> {
        let root = ["lib.rs", "main.rs"]
            .iter()
            .map(|name| src.join(name))
            .find(|path| path.is_file())
            .ok_or_else(|| format!("{label}: neither lib.rs nor main.rs"))?;
        let mut loader = Loader {
            src: src.to_path_buf(),
            label: label.to_string(),
            files: Vec::new(),
            parsed: Vec::new(),
            modules: BTreeMap::new(),
        };
        loader.load_file(&root, Vec::new(), src.to_path_buf())?;
        let reexports = root_reexports(&loader.parsed[0]);
        let resolver = Resolver {
            modules: &loader.modules,
            reexports: &reexports,
        };
        let mut edges = Vec::new();
        // The root (file 0) declares and re-exports: its paths are no edges.
        for (index, parsed) in loader.parsed.iter().enumerate().skip(1) {
            let mut collector = Collector {
                resolver: &resolver,
                file: index,
                file_module: loader.files[index].module.clone(),
                scopes: Vec::new(),
                edges: Vec::new(),
            };
            collector.enter_scope(loader.files[index].module.clone(), parsed);
            for item in parsed {
                collector.visit_item(item);
            }
            edges.extend(collector.edges);
        }
        // Files in name order (the root first), so reports list them alphabetically.
        let mut order: Vec<usize> = (1..loader.files.len()).collect();
        order.sort_by(|a, b| loader.files[*a].rel.cmp(&loader.files[*b].rel));
        order.insert(0, 0);
        let mut position = vec![0; order.len()];
        for (new, old) in order.iter().enumerate() {
            position[*old] = new;
        }
        for edge in &mut edges {
            edge.from = position[edge.from];
            edge.to = position[edge.to];
        }
        let mut files: Vec<Option<SourceFile>> = loader.files.into_iter().map(Some).collect();
        let files = order.iter().filter_map(|old| files[*old].take()).collect();
        Ok(Crate {
            label: loader.label,
            files,
            edges,
        })
    }

    /// How a file is named in reports: `engine/src/kv/mod.rs`.
    pub fn show(&self, file: usize) -> String {
        format!("{}/{}", self.label, self.files[file].rel)
    }
}

/// Reads the module tree file by file.
struct Loader {
    src: PathBuf,
    label: String,
    files: Vec<SourceFile>,
    /// The items of each file, by index.
    parsed: Vec<Vec<Item>>,
    /// Every module, inline ones included, with the file that holds it.
    modules: BTreeMap<ModPath, usize>,
}

impl Loader {
    /// Reads `path` as module `module`, whose `mod x;` children live in `child_dir`.
    fn load_file(
        &mut self,
        path: &Path,
        module: ModPath,
        child_dir: PathBuf,
    ) -> Result<(), String> {
        let rel = path
            .strip_prefix(&self.src)
            .map_err(|_| format!("{}: outside {}", path.display(), self.label))?
            .to_string_lossy()
            .replace('\\', "/");
        let shown = format!("{}/{rel}", self.label);
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        let parsed = syn::parse_file(&text).map_err(|e| {
            let at = e.span().start();
            format!("{shown}:{}:{}: {e}", at.line, at.column + 1)
        })?;
        let index = self.files.len();
        self.files.push(SourceFile {
            rel,
            module: module.clone(),
        });
        self.modules.insert(module.clone(), index);
        // The items go back in their place once the children below them are read.
        self.parsed.push(Vec::new());
        let items = parsed.items;
        let declared = self.declare(&shown, index, &items, &module, &child_dir);
        self.parsed[index] = items;
        declared
    }

    /// Follows the `mod` items of `items`, written in module `module` of file `file`.
    fn declare(
        &mut self,
        shown: &str,
        file: usize,
        items: &[Item],
        module: &[String],
        child_dir: &Path,
    ) -> Result<(), String> {
        for item in items {
            let Item::Mod(declared) = item else { continue };
            if is_test_only(&declared.attrs) {
                continue;
            }
            if declared.attrs.iter().any(|a| a.path().is_ident("path")) {
                let line = declared.ident.span().start().line;
                return Err(format!(
                    "{shown}:{line}: #[path] on `mod {}` is not followed by this test",
                    declared.ident
                ));
            }
            let name = declared.ident.to_string();
            let mut child = module.to_vec();
            child.push(name.clone());
            let dir = child_dir.join(&name);
            if let Some((_, inline)) = &declared.content {
                self.modules.insert(child.clone(), file);
                self.declare(shown, file, inline, &child, &dir)?;
                continue;
            }
            let flat = child_dir.join(format!("{name}.rs"));
            let folder = dir.join("mod.rs");
            match (flat.is_file(), folder.is_file()) {
                (true, false) => self.load_file(&flat, child, dir)?,
                (false, true) => self.load_file(&folder, child, dir)?,
                (both, _) => {
                    let line = declared.ident.span().start().line;
                    let (found, and) = if both {
                        ("both", "and")
                    } else {
                        ("neither", "nor")
                    };
                    let show = |path: &Path| match path.strip_prefix(&self.src) {
                        Ok(rel) => format!("{}/{}", self.label, rel.to_string_lossy()),
                        Err(_) => path.display().to_string(),
                    };
                    return Err(format!(
                        "{shown}:{line}: `mod {name};` finds {found} {} {and} {}",
                        show(&flat),
                        show(&folder)
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether attributes make their item exist only in test builds: `#[test]`, `#[tokio::test]`,
/// `#[cfg(test)]`, `#[cfg(all(test, ...))]`. (`any(test, ...)` and `not(test)` do not.)
pub fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.segments.last().is_some_and(|s| s.ident == "test") {
            return true;
        }
        path.is_ident("cfg") && attr.parse_args::<Meta>().is_ok_and(|m| cfg_is_test(&m))
    })
}

fn cfg_is_test(meta: &Meta) -> bool {
    match meta {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) if list.path.is_ident("all") => list
            .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .is_ok_and(|inner| inner.iter().any(cfg_is_test)),
        _ => false,
    }
}

/// The names the crate root brings in by `use`, with the paths they stand for (relative to the
/// root): `Session` -> `session::Session`.
fn root_reexports(root: &[Item]) -> HashMap<String, ModPath> {
    let mut names = HashMap::new();
    for item in root {
        let Item::Use(used) = item else { continue };
        if is_test_only(&used.attrs) || used.leading_colon.is_some() {
            continue;
        }
        for leaf in use_leaves(&used.tree) {
            if let (Some(name), false) = (leaf.name, leaf.glob) {
                let mut path = leaf.path;
                if path.first().is_some_and(|s| s == "crate" || s == "self") {
                    path.remove(0);
                }
                names.insert(name, path);
            }
        }
    }
    names
}

/// One name a `use` tree brings in.
struct UseLeaf {
    /// The full path, `self` in braces resolved: `use a::{self, b}` gives `a` and `a::b`.
    path: ModPath,
    /// The local name (`None` for a glob).
    name: Option<String>,
    glob: bool,
    line: usize,
}

fn use_leaves(tree: &UseTree) -> Vec<UseLeaf> {
    fn walk(tree: &UseTree, prefix: &mut ModPath, out: &mut Vec<UseLeaf>) {
        let leaf = |prefix: &ModPath, ident: &syn::Ident, name: Option<String>| {
            let mut path = prefix.clone();
            if ident != "self" {
                path.push(ident.to_string());
            }
            let name = name.or_else(|| path.last().cloned());
            UseLeaf {
                path,
                name,
                glob: false,
                line: ident.span().start().line,
            }
        };
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(&p.tree, prefix, out);
                prefix.pop();
            }
            UseTree::Name(n) => out.push(leaf(prefix, &n.ident, None)),
            UseTree::Rename(r) => out.push(leaf(prefix, &r.ident, Some(r.rename.to_string()))),
            UseTree::Glob(g) => out.push(UseLeaf {
                path: prefix.clone(),
                name: None,
                glob: true,
                line: g.star_token.spans[0].start().line,
            }),
            UseTree::Group(g) => {
                for inner in &g.items {
                    walk(inner, prefix, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

/// Turns paths as written into the files they name.
struct Resolver<'a> {
    modules: &'a BTreeMap<ModPath, usize>,
    reexports: &'a HashMap<String, ModPath>,
}

impl Resolver<'_> {
    /// The absolute module path of `segments`, written in module `module` where `aliases` are
    /// the modules brought in by `use`; `None` for a path that does not start in this crate.
    fn absolute(
        &self,
        module: &[String],
        aliases: &HashMap<String, ModPath>,
        segments: &[String],
    ) -> Option<ModPath> {
        let first = segments.first()?;
        match first.as_str() {
            "crate" | "$crate" => Some(segments[1..].to_vec()),
            "self" | "super" => {
                let mut base = module.to_vec();
                let mut rest = segments;
                if rest.first().is_some_and(|s| s == "self") {
                    rest = &rest[1..];
                }
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                Some(base)
            }
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                if self.modules.contains_key(&child) {
                    child.extend(segments[1..].iter().cloned());
                    Some(child)
                } else {
                    let mut path = aliases.get(first)?.clone();
                    path.extend(segments[1..].iter().cloned());
                    Some(path)
                }
            }
        }
    }

    /// The file of the longest prefix of `path` that is a module, following the root's
    /// re-exports; `None` for the root itself and for what lies outside the crate.
    fn file_of(&self, path: &[String]) -> Option<(usize, usize)> {
        let mut path = path.to_vec();
        for _ in 0..4 {
            let depth = (1..=path.len())
                .rev()
                .find(|n| self.modules.contains_key(&path[..*n]))
                .unwrap_or(0);
            if depth > 0 {
                return Some((self.modules[&path[..depth]], depth));
            }
            let mut through = self.reexports.get(path.first()?)?.clone();
            through.extend(path[1..].iter().cloned());
            path = through;
        }
        None
    }
}

/// Walks one file's syntax, recording its edges.
struct Collector<'a> {
    resolver: &'a Resolver<'a>,
    file: usize,
    file_module: ModPath,
    /// The module each enclosing (inline) module scope is, with the modules its `use`s name.
    scopes: Vec<(ModPath, HashMap<String, ModPath>)>,
    edges: Vec<Edge>,
}

impl Collector<'_> {
    /// Starts module scope `module` whose items are `items`: notes which of their `use`s name
    /// a module, so paths through them resolve.
    fn enter_scope(&mut self, module: ModPath, items: &[Item]) {
        let mut aliases = HashMap::new();
        // Twice, so that `use crate::kv; use kv::mem;` finds `mem` whatever the order.
        for _ in 0..2 {
            for item in items {
                let Item::Use(used) = item else { continue };
                if is_test_only(&used.attrs) || used.leading_colon.is_some() {
                    continue;
                }
                for leaf in use_leaves(&used.tree) {
                    let (Some(name), false) = (leaf.name, leaf.glob) else {
                        continue;
                    };
                    let Some(path) = self.resolver.absolute(&module, &aliases, &leaf.path) else {
                        continue;
                    };
                    if self.resolver.modules.contains_key(&path) {
                        aliases.insert(name, path);
                    }
                }
            }
        }
        self.scopes.push((module, aliases));
    }

    /// Records the edge of `segments` (written at `line`), if it names another file.
    fn record(&mut self, segments: &[String], line: usize, text: String, reexport: bool) {
        let Some((module, aliases)) = self.scopes.last() else {
            return;
        };
        let Some(path) = self.resolver.absolute(module, aliases, segments) else {
            return;
        };
        let Some((to, depth)) = self.resolver.file_of(&path) else {
            return;
        };
        if to == self.file {
            return;
        }
        let own_submodule = depth > self.file_module.len() && path.starts_with(&self.file_module);
        if reexport && own_submodule {
            return;
        }
        self.edges.push(Edge {
            from: self.file,
            to,
            line,
            text,
        });
    }

    /// Finds paths in a macro's tokens: `a::b::c` not preceded by `::` or `.`.
    fn scan_tokens(&mut self, tokens: TokenStream, mac: &str) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let punct = |i: usize, c: char| matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
        let mut i = 0;
        while i < tokens.len() {
            let first = match &tokens[i] {
                TokenTree::Group(group) => {
                    self.scan_tokens(group.stream(), mac);
                    i += 1;
                    continue;
                }
                TokenTree::Ident(first) => first,
                _ => {
                    i += 1;
                    continue;
                }
            };
            let continues =
                i >= 1 && (punct(i - 1, '.') || (i >= 2 && punct(i - 1, ':') && punct(i - 2, ':')));
            let mut segments = vec![first.to_string()];
            if i >= 1 && punct(i - 1, '$') && first == "crate" {
                segments[0] = "$crate".to_string();
            }
            let line = first.span().start().line;
            let mut j = i + 1;
            while punct(j, ':') && punct(j + 1, ':') {
                let Some(TokenTree::Ident(next)) = tokens.get(j + 2) else {
                    break;
                };
                segments.push(next.to_string());
                j += 3;
            }
            if !continues && segments.len() >= 2 {
                let text = format!("{} in {mac}!", segments.join("::"));
                self.record(&segments, line, text, false);
            }
            i = j;
        }
    }
}

/// Visitor methods that walk a node unless its attributes make it test-only.
macro_rules! skip_test_only {
    ($($method:ident($node:ty) => $walk:path;)*) => {
        $(
            fn $method(&mut self, node: &'ast $node) {
                if !is_test_only(&node.attrs) {
                    $walk(self, node);
                }
            }
        )*
    };
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if !is_test_only(item_attrs(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let Some((_, items)) = &item.content else {
            return;
        };
        let Some((module, _)) = self.scopes.last() else {
            return;
        };
        let mut module = module.clone();
        module.push(item.ident.to_string());
        self.enter_scope(module, items);
        for inner in items {
            self.visit_item(inner);
        }
        self.scopes.pop();
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if item.leading_colon.is_some() {
            return;
        }
        let reexport = !matches!(item.vis, Visibility::Inherited);
        let keyword = match &item.vis {
            Visibility::Inherited => "use".to_string(),
            Visibility::Public(_) => "pub use".to_string(),
            Visibility::Restricted(restricted) => {
                let path: Vec<String> = restricted
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                let within = if restricted.in_token.is_some() {
                    "in "
                } else {
                    ""
                };
                format!("pub({within}{}) use", path.join("::"))
            }
        };
        for leaf in use_leaves(&item.tree) {
            let star = if leaf.glob { "::*" } else { "" };
            let text = format!("{keyword} {}{star}", leaf.path.join("::"));
            self.record(&leaf.path, leaf.line, text, reexport);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs: &[Attribute] = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !is_test_only(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        let attrs: &[Attribute] = match item {
            syn::TraitItem::Const(i) => &i.attrs,
            syn::TraitItem::Fn(i) => &i.attrs,
            syn::TraitItem::Type(i) => &i.attrs,
            syn::TraitItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !is_test_only(attrs) {
            visit::visit_trait_item(self, item);
        }
    }

    skip_test_only! {
        visit_local(syn::Local) => visit::visit_local;
        visit_stmt_macro(syn::StmtMacro) => visit::visit_stmt_macro;
        visit_arm(syn::Arm) => visit::visit_arm;
        visit_field(syn::Field) => visit::visit_field;
        visit_variant(syn::Variant) => visit::visit_variant;
    }

    /// Attributes hold doc comments and derive lists, not imports.
    fn visit_attribute(&mut self, _: &'ast Attribute) {}

    /// `pub(in crate::a)` limits who sees an item; it imports nothing.
    fn visit_visibility(&mut self, _: &'ast Visibility) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() >= 2 {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = path.segments[0].ident.span().start().line;
            let text = segments.join("::");
            self.record(&segments, line, text, false);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        self.scan_tokens(mac.tokens.clone(), &name);
    }
}

/// The attributes of an item of any kind.
fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}
