//! The checks on a crate's import graph: no circle between files, no circle between the
//! children of any folder, and, for a crate in layers, no import from a layer to a higher one.
//! Each problem is one message naming the files and the lines that make it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::source::{Crate, Edge, ModPath};

/// Every problem of `krate`; `layers` (bottom first, peers in one slot) are checked when given.
pub fn check(krate: &Crate, layers: Option<&[&[&str]]>) -> Vec<String> {
    let mut problems = file_circles(krate);
    problems.extend(folder_circles(krate));
    if let Some(layers) = layers {
        problems.extend(layer_problems(krate, layers));
    }
    problems
}

/// Circles between files.
fn file_circles(krate: &Crate) -> Vec<String> {
    let mut graph = Graph::new((0..krate.files.len()).map(|f| krate.show(f)).collect());
    for edge in &krate.edges {
        graph.add(edge.from, edge.to, edge);
    }
    graph
        .circles()
        .iter()
        .map(|circle| {
            let heading = format!("import circle between {} files", circle.len());
            graph.describe(krate, circle, &heading)
        })
        .collect()
}

/// Circles between the children of each folder, a child (a file, or a subfolder with all that
/// is under it) taken as one node. A circle of files alone is a file circle, reported already.
fn folder_circles(krate: &Crate) -> Vec<String> {
    let folders: BTreeSet<ModPath> = krate
        .files
        .iter()
        .flat_map(|f| (0..f.module.len()).map(|n| f.module[..n].to_vec()))
        .collect();
    let mut problems = Vec::new();
    for folder in &folders {
        let children = children(krate, folder);
        let names: Vec<&String> = children.keys().collect();
        let mut graph = Graph::new(children.values().map(|(shown, _)| shown.clone()).collect());
        let node = |file: usize| {
            let module = &krate.files[file].module;
            (module.len() > folder.len() && module.starts_with(folder))
                .then(|| names.binary_search(&&module[folder.len()]).ok())
                .flatten()
        };
        for edge in &krate.edges {
            if let (Some(from), Some(to)) = (node(edge.from), node(edge.to)) {
                graph.add(from, to, edge);
            }
        }
        for circle in graph.circles() {
            if circle.iter().all(|&n| !children[names[n]].1) {
                continue;
            }
            let heading = format!(
                "import circle between the children of {}/",
                folder_path(krate, folder)
            );
            problems.push(graph.describe(krate, &circle, &heading));
        }
    }
    problems
}

/// The children of module `folder`, by name: how each is shown and whether it is a folder.
fn children(krate: &Crate, folder: &[String]) -> BTreeMap<String, (String, bool)> {
    let mut children = BTreeMap::new();
    for file in &krate.files {
        let module = &file.module;
        if module.len() <= folder.len() || !module.starts_with(folder) {
            continue;
        }
        let name = &module[folder.len()];
        let is_folder = module.len() > folder.len() + 1 || file.rel.ends_with("/mod.rs");
        let shown = if is_folder {
            format!("{}/{name}/", folder_path(krate, folder))
        } else {
            format!("{}/{}", krate.label, file.rel)
        };
        let entry = children
            .entry(name.clone())
            .or_insert_with(|| (shown.clone(), is_folder));
        if is_folder && !entry.1 {
            *entry = (shown, true);
        }
    }
    children
}

/// `engine/src/kv` for module `kv`.
fn folder_path(krate: &Crate, folder: &[String]) -> String {
    std::iter::once(krate.label.as_str())
        .chain(folder.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("/")
}

/// Imports from a layer to a higher one, top-level modules in no layer, and layer names that
/// name no module.
fn layer_problems(krate: &Crate, layers: &[&[&str]]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut layer_of = BTreeMap::new();
    for (index, names) in layers.iter().enumerate() {
        for name in *names {
            if layer_of.insert(*name, index).is_some() {
                problems.push(format!("ENGINE_LAYERS names `{name}` twice"));
            }
        }
    }
    let top = children(krate, &[]);
    for name in layer_of.keys() {
        if !top.contains_key(*name) {
            problems.push(format!(
                "ENGINE_LAYERS names `{name}`, which is no top-level module of {}",
                krate.label
            ));
        }
    }
    for (name, (shown, _)) in &top {
        if !layer_of.contains_key(name.as_str()) {
            problems.push(format!(
                "{shown} is in no layer: add it to ENGINE_LAYERS and docs/design.md"
            ));
        }
    }
    let layer = |file: usize| {
        let name = krate.files[file].module.first()?;
        Some((name, *layer_of.get(name.as_str())?))
    };
    for edge in &krate.edges {
        let (Some((from_name, from)), Some((to_name, to))) = (layer(edge.from), layer(edge.to))
        else {
            continue;
        };
        if to > from {
            problems.push(format!(
                "{}:{} imports {}, a higher layer (`{from_name}` is in layer {from}, `{to_name}` in layer {to}): {}",
                krate.show(edge.from),
                edge.line,
                krate.show(edge.to),
                edge.text
            ));
        }
    }
    problems
}

/// A directed graph between named nodes; each arrow keeps the imports that make it.
struct Graph<'a> {
    names: Vec<String>,
    arrows: BTreeMap<(usize, usize), Vec<&'a Edge>>,
}

impl<'a> Graph<'a> {
    fn new(names: Vec<String>) -> Self {
        Graph {
            names,
            arrows: BTreeMap::new(),
        }
    }

    fn add(&mut self, from: usize, to: usize, edge: &'a Edge) {
        if from != to {
            self.arrows.entry((from, to)).or_default().push(edge);
        }
    }

    fn successors(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        self.arrows
            .range((node, 0)..(node + 1, 0))
            .map(|(&(_, to), _)| to)
    }

    /// The strongly connected components of two or more nodes, each sorted, in node order.
    fn circles(&self) -> Vec<Vec<usize>> {
        struct Tarjan<'g, 'a> {
            graph: &'g Graph<'a>,
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on_stack: Vec<bool>,
            stack: Vec<usize>,
            next: usize,
            found: Vec<Vec<usize>>,
        }
        impl Tarjan<'_, '_> {
            fn visit(&mut self, node: usize) {
                self.index[node] = Some(self.next);
                self.low[node] = self.next;
                self.next += 1;
                self.stack.push(node);
                self.on_stack[node] = true;
                let successors: Vec<usize> = self.graph.successors(node).collect();
                for next in successors {
                    match self.index[next] {
                        None => {
                            self.visit(next);
                            self.low[node] = self.low[node].min(self.low[next]);
                        }
                        Some(index) if self.on_stack[next] => {
                            self.low[node] = self.low[node].min(index);
                        }
                        Some(_) => {}
                    }
                }
                if Some(self.low[node]) == self.index[node] {
                    let mut component = Vec::new();
                    while let Some(member) = self.stack.pop() {
                        self.on_stack[member] = false;
                        component.push(member);
                        if member == node {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort_unstable();
                        self.found.push(component);
                    }
                }
            }
        }
        let n = self.names.len();
        let mut tarjan = Tarjan {
            graph: self,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            found: Vec::new(),
        };
        for node in 0..n {
            if tarjan.index[node].is_none() {
                tarjan.visit(node);
            }
        }
        let mut found = tarjan.found;
        found.sort();
        found
    }

    /// A shortest circle from the first member of `circle` back to it, inside `circle`.
    fn shortest_circle(&self, circle: &[usize]) -> Vec<usize> {
        let start = circle[0];
        let mut parent = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            for next in self.successors(node) {
                if next == start {
                    let mut path = vec![node];
                    while let Some(&up) = parent.get(path.last().unwrap_or(&start)) {
                        path.push(up);
                    }
                    path.reverse();
                    path.push(start);
                    return path;
                }
                if circle.binary_search(&next).is_ok() && !parent.contains_key(&next) {
                    parent.insert(next, node);
                    queue.push_back(next);
                }
            }
        }
        vec![start]
    }

    /// The report of one circle: its members, one shortest way round, and every import
    /// between its members (file:line and the path as written).
    fn describe(&self, krate: &Crate, circle: &[usize], heading: &str) -> String {
        let members: Vec<&str> = circle.iter().map(|&n| self.names[n].as_str()).collect();
        let round: Vec<&str> = self
            .shortest_circle(circle)
            .iter()
            .map(|&n| self.names[n].as_str())
            .collect();
        let mut lines = vec![
            format!("{heading}: {}", members.join(", ")),
            format!("  circle: {}", round.join(" -> ")),
        ];
        let mut inside: Vec<(&Edge, usize)> = self
            .arrows
            .iter()
            .filter(|((from, to), _)| {
                circle.binary_search(from).is_ok() && circle.binary_search(to).is_ok()
            })
            .map(|(_, edges)| (edges[0], edges.len() - 1))
            .collect();
        inside.sort_by_key(|(edge, _)| (edge.from, edge.line, edge.to));
        for (edge, more) in inside {
            let more = match more {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            };
            lines.push(format!(
                "  {}:{}: {} (-> {}){more}",
                krate.show(edge.from),
                edge.line,
                edge.text,
                krate.show(edge.to)
            ));
        }
        lines.join("\n")
    }
}
