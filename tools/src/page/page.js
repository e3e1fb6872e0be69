// grove's HTML page (tools/src/page/, docs/design.md "Looking at it: the HTML view").
//
// One page, two sources of data. Export mode (`grove export --html`): the session is embedded
// as JSON in the #grove-data element (the tree as the server's tree route gives it, and every
// entry's line), and the context at an entry is computed here from the entries, by the rules of
// engine/src/context.rs with grove's default options (for another tool's transcript, by that
// tool's rules, as engine/src/context/foreign.rs builds it). Server mode (`GET /view` of `grove serve`):
// the page holds no data; it reads the session list, a session's tree, entries and operations and
// the context at an entry from the server's routes, with the bearer token given in the URL
// fragment (`/view#token=TOKEN`, docs/api.md).
//
// Nothing here recurses over the tree: every walk is a loop with an explicit stack, so a session
// as deep as its entries are many is no limit. The tree is a flat list of visible rows (the
// active path, with each branch point's side branches folded or shown), of which only the rows in
// view are in the document (virtual scrolling).
(function () {
	"use strict";

	const ROW = 22; // px, as --row in the style
	const OVERSCAN = 20; // rows drawn above and below the view
	const INDENT_MAX = 24; // indentation levels drawn; deeper ones show their depth
	const EXPAND_ALL_BELOW = 2000; // smaller sessions open with every branch shown
	const MESSAGES_PAGE = 200; // context messages drawn at a time
	const BOOKKEEPING = new Set(["label", "session_info", "custom", "model_change", "thinking_level_change", "active_tools_change"]);

	const $ = (id) => document.getElementById(id);
	const data = JSON.parse($("grove-data").textContent);

	// ---- the session being shown ----
	const view = {
		nodes: [], // {id, parentId, type, children, label, onActivePath}
		roots: [],
		parent: new Int32Array(0), // node index of the parent, -1 for a root
		main: new Int32Array(0), // the child a row continues with, -1 for none
		indexOf: new Map(), // id -> node index
		lineOf: () => null, // node index -> the entry's stored JSON text
		parsed: new Map(), // node index -> parsed entry (or null when the line is not JSON)
		leaf: -1,
		expanded: new Set(), // branch points whose side branches are shown
		rows: new Int32Array(0), // visible rows: node indexes
		rowDepth: new Int32Array(0), // visible rows: indentation level
		rowOf: new Int32Array(0), // node index -> row, -1 when folded away
		selected: -1,
		contextOf: null, // node index -> Promise of the context
		generation: 0, // bumps when another session is shown; stale answers are dropped
		pending: false, // a redraw is scheduled for the next frame
		context: null, // the context shown
		shownMessages: 0, // how many of its messages are drawn
	};

	function showError(message) {
		const box = $("error");
		box.textContent = message;
		box.hidden = false;
	}

	function clearError() {
		$("error").hidden = true;
	}

	/** Takes a tree (`{nodes, roots}`), the leaf id and a line reader as the shown session. */
	function load(tree, leafId, lineOf, contextOf) {
		const nodes = tree.nodes;
		const n = nodes.length;
		view.generation += 1;
		view.nodes = nodes;
		view.roots = tree.roots;
		view.lineOf = lineOf;
		view.contextOf = contextOf;
		view.parsed = new Map();
		view.indexOf = new Map();
		view.parent = new Int32Array(n).fill(-1);
		view.main = new Int32Array(n).fill(-1);
		for (let i = 0; i < n; i++) view.indexOf.set(nodes[i].id, i);
		for (let i = 0; i < n; i++) {
			const kids = nodes[i].children;
			for (let k = 0; k < kids.length; k++) view.parent[kids[k]] = i;
			if (kids.length > 0) {
				let main = kids[0];
				for (let k = 0; k < kids.length; k++) {
					if (nodes[kids[k]].onActivePath) main = kids[k];
				}
				view.main[i] = main;
			}
		}
		view.leaf = leafId == null ? -1 : (view.indexOf.get(leafId) ?? -1);
		view.expanded = new Set();
		if (n < EXPAND_ALL_BELOW) expandAll(false);
		view.selected = -1;
		buildRows();
		$("tree").scrollTop = 0;
		let depth = 0;
		for (let i = view.leaf; i >= 0 && depth <= n; i = view.parent[i]) depth++;
		$("status").textContent = `${n} entries` + (view.leaf >= 0 ? ` · active path ${depth} · leaf ${short(nodes[view.leaf].id)}` : " · leaf: root position");
		$("entry-id").textContent = "(click an entry)";
		$("entry-json").textContent = "";
		$("context-at").textContent = "(click an entry)";
		$("context-count").textContent = "";
		$("context-settings").textContent = "";
		$("context-messages").textContent = "";
		view.context = null;
		fillContextJson();
		render();
		if (view.leaf >= 0) reveal(view.leaf);
	}

	function expandAll(redraw) {
		view.expanded = new Set();
		for (let i = 0; i < view.nodes.length; i++) {
			if (view.nodes[i].children.length > 1) view.expanded.add(i);
		}
		if (redraw) {
			buildRows();
			render();
		}
	}

	/**
	 * The visible rows, in order: from each root, the chain of main children; at an expanded
	 * branch point, its side branches (one level deeper) come before the chain goes on.
	 */
	function buildRows() {
		const n = view.nodes.length;
		const rows = [];
		const depths = [];
		const stack = []; // [node, depth] pairs, popped last first
		for (let r = view.roots.length - 1; r >= 0; r--) stack.push(view.roots[r], 0);
		while (stack.length > 0) {
			const depth = stack.pop();
			let at = stack.pop();
			while (at >= 0) {
				rows.push(at);
				depths.push(depth);
				const kids = view.nodes[at].children;
				const main = view.main[at];
				if (kids.length > 1 && view.expanded.has(at)) {
					stack.push(main, depth);
					for (let k = kids.length - 1; k >= 0; k--) {
						if (kids[k] !== main) stack.push(kids[k], depth + 1);
					}
					break;
				}
				at = main;
			}
		}
		view.rows = Int32Array.from(rows);
		view.rowDepth = Int32Array.from(depths);
		view.rowOf = new Int32Array(n).fill(-1);
		for (let r = 0; r < rows.length; r++) view.rowOf[rows[r]] = r;
		$("tree-space").style.height = `${rows.length * ROW}px`;
	}

	// ---- entries ----
	function entryOf(i) {
		if (view.parsed.has(i)) return view.parsed.get(i);
		let value = null;
		const line = view.lineOf(i);
		if (line != null) {
			try {
				value = JSON.parse(line);
			} catch {
				value = null;
			}
		}
		view.parsed.set(i, value);
		return value;
	}

	function isObject(v) {
		return v !== null && typeof v === "object" && !Array.isArray(v);
	}

	function short(id) {
		return String(id).slice(0, 8);
	}

	function kindOf(i) {
		const e = entryOf(i);
		const type = view.nodes[i].type;
		if (type === "message" && e && isObject(e.message) && typeof e.message.role === "string") return e.message.role;
		return type;
	}

	function contentText(content) {
		if (typeof content === "string") return content;
		if (!Array.isArray(content)) return "";
		const parts = [];
		for (const b of content) {
			if (!isObject(b)) continue;
			if (b.type === "text" && typeof b.text === "string") parts.push(b.text);
			else if (b.type === "toolCall") parts.push(`[call ${typeof b.name === "string" ? b.name : "tool"}]`);
			else if (b.type === "image") parts.push("[image]");
			else if (b.type === "thinking") parts.push("[thinking]");
		}
		return parts.join(" ");
	}

	function messagePreview(m) {
		if (!isObject(m)) return "";
		const str = (k) => (typeof m[k] === "string" ? m[k] : "");
		switch (m.role) {
			case "bashExecution":
				return `$ ${str("command")}`;
			case "branchSummary":
			case "compactionSummary":
				return str("summary");
			case "toolResult":
				return `[${str("toolName") || "tool"}] ${contentText(m.content)}`;
			default:
				return contentText(m.content);
		}
	}

	function entryPreview(i) {
		const e = entryOf(i);
		if (!isObject(e)) return view.lineOf(i) == null ? "" : "(not JSON)";
		const str = (k) => (typeof e[k] === "string" ? e[k] : "");
		switch (e.type) {
			case "message":
				return messagePreview(e.message);
			case "compaction":
			case "branch_summary":
				return str("summary");
			case "model_change":
				return `${str("provider")}/${str("modelId")}`;
			case "thinking_level_change":
				return str("thinkingLevel");
			case "active_tools_change":
				return Array.isArray(e.activeToolNames) ? e.activeToolNames.filter((t) => typeof t === "string").join(", ") : "";
			case "label":
				return str("label").trim() ? `${short(str("targetId"))} = ${str("label").trim()}` : `${short(str("targetId"))} (cleared)`;
			case "session_info":
				return str("name").trim() || "(name cleared)";
			case "custom":
				return str("customType");
			case "custom_message":
				return `[${str("customType")}] ${contentText(e.content)}`;
			default:
				return "";
		}
	}

	function clip(text, max) {
		const flat = String(text).replace(/\s+/g, " ").trim();
		return flat.length > max ? `${flat.slice(0, max)}…` : flat;
	}

	// ---- the tree ----
	function render() {
		const tree = $("tree");
		const space = $("tree-space");
		const first = Math.max(0, Math.floor(tree.scrollTop / ROW) - OVERSCAN);
		const last = Math.min(view.rows.length, Math.ceil((tree.scrollTop + tree.clientHeight) / ROW) + OVERSCAN);
		const frag = document.createDocumentFragment();
		for (let r = first; r < last; r++) frag.appendChild(rowElement(r));
		space.replaceChildren(frag);
	}

	function rowElement(r) {
		const i = view.rows[r];
		const node = view.nodes[i];
		const depth = view.rowDepth[r];
		const div = document.createElement("div");
		const kind = kindOf(i);
		div.className = `row k-${node.type}`;
		if (node.onActivePath) div.classList.add("active");
		if (i === view.leaf) div.classList.add("leaf");
		if (i === view.selected) div.classList.add("sel");
		if (BOOKKEEPING.has(node.type)) div.classList.add("book");
		div.dataset.id = node.id;
		div.dataset.row = String(r);
		div.style.top = `${r * ROW}px`;
		div.style.paddingLeft = `${4 + Math.min(depth, INDENT_MAX) * 14}px`;
		if (depth > INDENT_MAX) div.appendChild(span("depth", `⋯${depth}`));
		const kids = node.children.length;
		const slot = span("slot", "");
		div.appendChild(slot);
		if (kids > 1) {
			const open = view.expanded.has(i);
			const twisty = document.createElement("button");
			twisty.type = "button";
			twisty.className = "twisty";
			twisty.textContent = `${open ? "▾" : "▸"} ${kids - 1}`;
			twisty.title = `${kids - 1} other branch${kids > 2 ? "es" : ""}: ${open ? "fold" : "show"}`;
			twisty.dataset.toggle = String(i);
			slot.appendChild(twisty);
		}
		div.appendChild(span("glyph", i === view.leaf ? "@" : node.onActivePath ? "◆" : "○"));
		div.appendChild(span("id", short(node.id)));
		div.appendChild(span("kind", kind));
		div.appendChild(document.createTextNode(clip(entryPreview(i), 160)));
		if (node.label != null) div.appendChild(span("label", node.label));
		div.title = `${node.id} · ${kind}`;
		return div;
	}

	function span(cls, text) {
		const s = document.createElement("span");
		s.className = cls;
		s.textContent = text;
		return s;
	}

	function toggle(i) {
		if (view.expanded.has(i)) view.expanded.delete(i);
		else view.expanded.add(i);
		buildRows();
		render();
	}

	/** Shows node `i`: unfolds the branch points above it, scrolls it into view, selects it. */
	function reveal(i) {
		let changed = false;
		// At most one step per node: parent links from a damaged session cannot loop it.
		for (let c = i, p = view.parent[i], steps = 0; p >= 0 && steps < view.nodes.length; c = p, p = view.parent[p], steps++) {
			if (view.main[p] !== c && !view.expanded.has(p)) {
				view.expanded.add(p);
				changed = true;
			}
		}
		if (changed) buildRows();
		const r = view.rowOf[i];
		const tree = $("tree");
		if (r >= 0 && (r * ROW < tree.scrollTop || (r + 1) * ROW > tree.scrollTop + tree.clientHeight)) {
			tree.scrollTop = Math.max(0, r * ROW - tree.clientHeight / 3);
		}
		select(i);
	}

	function select(i) {
		view.selected = i;
		render();
		const node = view.nodes[i];
		$("entry-id").textContent = node.id;
		const e = entryOf(i);
		$("entry-json").textContent = e === null ? String(view.lineOf(i)) : JSON.stringify(e, null, 2);
		$("context-at").textContent = short(node.id);
		$("context-count").textContent = "…";
		const generation = view.generation;
		Promise.resolve()
			.then(() => view.contextOf(i))
			.then(
				(ctx) => {
					if (generation === view.generation && view.selected === i) showContext(ctx);
				},
				(err) => {
					if (generation === view.generation && view.selected === i) {
						$("context-count").textContent = "";
						showError(`context at ${node.id}: ${err.message || err}`);
					}
				},
			);
	}

	function showContext(ctx) {
		const settings = $("context-settings");
		settings.textContent = "";
		const model = ctx.model == null ? "none" : `${ctx.model.provider ?? "?"}/${ctx.model.modelId ?? "?"}`;
		const tools = ctx.activeToolNames == null ? "default" : Array.isArray(ctx.activeToolNames) ? ctx.activeToolNames.join(", ") : JSON.stringify(ctx.activeToolNames);
		const thinking = typeof ctx.thinkingLevel === "string" ? ctx.thinkingLevel : JSON.stringify(ctx.thinkingLevel);
		for (const [name, value] of [["model", model], ["thinking", thinking], ["tools", tools]]) {
			const s = document.createElement("span");
			s.className = `setting-${name}`;
			const b = document.createElement("b");
			b.textContent = `${name}:`;
			s.append(b, document.createTextNode(` ${value}`));
			settings.appendChild(s);
		}
		view.context = ctx;
		view.shownMessages = 0;
		$("context-messages").replaceChildren();
		showMoreMessages();
		$("context-count").textContent = `(${ctx.messages.length} message${ctx.messages.length === 1 ? "" : "s"})`;
		fillContextJson();
	}

	/** Draws the next MESSAGES_PAGE messages of the shown context, and a button for the rest. */
	function showMoreMessages() {
		const ctx = view.context;
		const list = $("context-messages");
		list.querySelector(".more")?.remove();
		const frag = document.createDocumentFragment();
		const end = Math.min(ctx.messages.length, view.shownMessages + MESSAGES_PAGE);
		for (let k = view.shownMessages; k < end; k++) {
			const m = ctx.messages[k];
			const li = document.createElement("li");
			const role = isObject(m) && typeof m.role === "string" ? m.role : "?";
			li.className = `r-${role}`;
			const details = document.createElement("details");
			const summary = document.createElement("summary");
			summary.append(span("role", role), document.createTextNode(clip(messagePreview(m), 200)));
			details.appendChild(summary);
			// The message's JSON is drawn when it is opened.
			details.addEventListener("toggle", () => {
				if (details.open && details.childNodes.length === 1) {
					const pre = document.createElement("pre");
					pre.textContent = JSON.stringify(m, null, 2);
					details.appendChild(pre);
				}
			});
			li.appendChild(details);
			frag.appendChild(li);
		}
		view.shownMessages = end;
		const rest = ctx.messages.length - end;
		if (rest > 0) {
			const li = document.createElement("li");
			li.className = "more";
			const more = document.createElement("button");
			more.type = "button";
			more.textContent = `show ${Math.min(rest, MESSAGES_PAGE)} more (${rest} not shown)`;
			more.addEventListener("click", showMoreMessages);
			li.appendChild(more);
			frag.appendChild(li);
		}
		list.appendChild(frag);
	}

	/** The shown context as JSON, written when its box is open (a long context is megabytes). */
	function fillContextJson() {
		const pre = $("context-json");
		if (!$("context-raw").open || view.context == null) {
			pre.textContent = "";
			return;
		}
		pre.textContent = JSON.stringify(view.context, null, 1);
	}

	// ---- the context, computed from the entries (export mode) ----
	// engine/src/context.rs with ContextOptions::grove(): the full path to the root; entries
	// selected from the last compaction on (its retained tail standing in for the kept range
	// when it has one, else from firstKeptEntryId); null or missing message content replaced
	// by []; the settings of the last entry on the full path that set each.

	/** `time::parse_ms`: Date.parse of the ISO forms grove reads, null for NaN. */
	function parseMs(t) {
		if (typeof t !== "string" || t.length < 19) return null;
		const num = (s) => (/^[0-9]+$/.test(s) ? Number(s) : NaN);
		if (t[4] !== "-" || t[7] !== "-" || t[10] !== "T" || t[13] !== ":" || t[16] !== ":") return null;
		const [year, month, day] = [num(t.slice(0, 4)), num(t.slice(5, 7)), num(t.slice(8, 10))];
		const [hour, minute, second] = [num(t.slice(11, 13)), num(t.slice(14, 16)), num(t.slice(17, 19))];
		if ([year, month, day, hour, minute, second].some(Number.isNaN)) return null;
		const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
		const dim = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
		if (month < 1 || month > 12 || day < 1 || day > dim) return null;
		if (hour > 24 || minute > 59 || second > 59 || (hour === 24 && (minute !== 0 || second !== 0))) return null;
		let rest = t.slice(19);
		let millis = 0;
		if (rest.startsWith(".")) {
			const digits = /^[0-9]*/.exec(rest.slice(1))[0];
			if (digits.length === 0) return null;
			millis = Number((digits + "000").slice(0, 3));
			rest = rest.slice(1 + digits.length);
		}
		let offset;
		if (rest === "Z") offset = 0;
		else if ((rest[0] === "+" || rest[0] === "-") && rest.length === 6 && rest[3] === ":") {
			const h = num(rest.slice(1, 3));
			const m = num(rest.slice(4, 6));
			if (Number.isNaN(h) || Number.isNaN(m)) return null;
			offset = (rest[0] === "-" ? -1 : 1) * (h * 60 + m);
		} else return null;
		// days_from_civil (Howard Hinnant)
		const y = month <= 2 ? year - 1 : year;
		const era = Math.floor(y / 400);
		const yoe = y - era * 400;
		const mp = (month + 9) % 12;
		const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
		const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
		const days = era * 146097 + doe - 719468;
		const secs = days * 86400 + hour * 3600 + minute * 60 + second - offset * 60;
		return secs * 1000 + millis;
	}

	/** JavaScript truthiness of a JSON value (`jsstr::truthy`). */
	function truthy(v) {
		return !(v === null || v === false || v === "" || v === 0 || Number.isNaN(v) || v === undefined);
	}

	function typeOf(e) {
		return isObject(e) ? e.type : undefined;
	}

	function roleOf(e) {
		return isObject(e) && e.type === "message" && isObject(e.message) && typeof e.message.role === "string" ? e.message.role : undefined;
	}

	function has(o, k) {
		return Object.prototype.hasOwnProperty.call(o, k);
	}

	/** A synthetic message: `role`, then those of `keys` that the entry has. */
	function synthetic(e, role, keys) {
		const m = { role };
		for (const k of keys) if (has(e, k)) m[k] = e[k];
		return m;
	}

	/** Projects one selected entry into messages (spec §5.4). */
	function project(e, withTail, out) {
		if (!isObject(e)) return;
		const ts = () => parseMs(e.timestamp);
		switch (e.type) {
			case "message": {
				if (!has(e, "message")) return;
				const m = e.message;
				const role = roleOf(e);
				if ((role === "user" || role === "assistant" || role === "toolResult") && isObject(m) && (m.content === undefined || m.content === null)) {
					out.push({ ...m, content: [] });
				} else out.push(m);
				return;
			}
			case "custom_message": {
				const m = synthetic(e, "custom", ["customType"]);
				m.content = e.content === undefined || e.content === null ? [] : e.content;
				for (const k of ["display", "details"]) if (has(e, k)) m[k] = e[k];
				m.timestamp = ts();
				out.push(m);
				return;
			}
			case "compaction": {
				const m = synthetic(e, "compactionSummary", ["summary", "tokensBefore"]);
				m.timestamp = ts();
				out.push(m);
				if (withTail && Array.isArray(e.retainedTail)) for (const item of e.retainedTail) out.push(item);
				return;
			}
			case "branch_summary": {
				if (!truthy(e.summary)) return;
				const m = synthetic(e, "branchSummary", ["summary", "fromId"]);
				m.timestamp = ts();
				out.push(m);
				return;
			}
			default:
				return;
		}
	}

	/** The context at node `leaf` (grove's default options), as `grove context --json` prints it. */
	function computeContext(leaf) {
		// The full path to the root, root first; a cycle ends it at the first revisit.
		const path = [];
		const seen = new Set();
		for (let i = leaf; i >= 0 && !seen.has(i); i = view.parent[i]) {
			seen.add(i);
			path.push(i);
		}
		path.reverse();
		const entries = path.map(entryOf);
		// Selection (spec §5.2).
		let ci = -1;
		for (let k = entries.length - 1; k >= 0; k--) {
			if (typeOf(entries[k]) === "compaction") {
				ci = k;
				break;
			}
		}
		const selected = []; // [entry, withTail]
		if (ci < 0) {
			for (const e of entries) selected.push([e, false]);
		} else {
			const c = entries[ci];
			selected.push([c, true]);
			if (!truthy(c.retainedTail)) {
				const fk = c.firstKeptEntryId;
				let kept = -1;
				if (typeof fk === "string") {
					for (let k = 0; k < ci; k++) {
						if (isObject(entries[k]) && entries[k].id === fk) {
							kept = k;
							break;
						}
					}
				}
				if (kept >= 0) {
					for (let k = kept; k < ci; k++) selected.push([entries[k], k === kept && typeOf(entries[k]) === "compaction"]);
				}
			}
			for (let k = ci + 1; k < entries.length; k++) selected.push([entries[k], false]);
		}
		const messages = [];
		for (const [e, withTail] of selected) project(e, withTail, messages);
		// Settings (spec §5.5): the last entry on the full path that set each.
		let model = null;
		let thinking = "off";
		let tools = null;
		let modelSet = false;
		let thinkingSet = false;
		let toolsSet = false;
		for (let k = entries.length - 1; k >= 0 && !(modelSet && thinkingSet && toolsSet); k--) {
			const e = entries[k];
			const type = typeOf(e);
			if (!modelSet && (type === "model_change" || roleOf(e) === "assistant")) {
				// An assistant message sets the model from its own provider and model.
				modelSet = true;
				const src = type === "model_change" ? e : e.message;
				const [provider, modelId] = type === "model_change" ? ["provider", "modelId"] : ["provider", "model"];
				if (isObject(src)) {
					model = {};
					if (has(src, provider)) model.provider = src[provider];
					if (has(src, modelId)) model.modelId = src[modelId];
				}
			} else if (!thinkingSet && type === "thinking_level_change") {
				thinkingSet = true;
				if (has(e, "thinkingLevel")) thinking = e.thinkingLevel;
			} else if (!toolsSet && type === "active_tools_change") {
				toolsSet = true;
				tools = has(e, "activeToolNames") ? e.activeToolNames : null;
			}
		}
		return { messages, model, thinkingLevel: thinking, activeToolNames: tools };
	}

	// ---- the context of another tool's transcript (export mode) ----
	// engine/src/context/foreign.rs, codec/src/foreign/chain.rs and history.rs (docs/format.md,
	// "Foreign transcripts"): Claude Code's is the Claude Agent SDK's conversation, Codex's the
	// history Codex rebuilds from a rollout.

	/** The original line an entry of a foreign session keeps, parsed (null for any other). */
	function originalOf(i) {
		const e = entryOf(i);
		if (!isObject(e) || e.type !== "custom" || typeof e.customType !== "string") return null;
		if (has(e, "data")) return e.data;
		if (typeof e.text === "string") {
			try {
				return JSON.parse(e.text);
			} catch {
				return null;
			}
		}
		return null;
	}

	/** Python's truthiness of a JSON value. */
	function pyTruthy(v) {
		if (Array.isArray(v)) return v.length > 0;
		if (isObject(v)) return Object.keys(v).length > 0;
		return truthy(v);
	}

	function blockIds(e, blockType, field) {
		const m = e.message;
		if (!isObject(m) || !Array.isArray(m.content)) return [];
		const ids = [];
		for (const b of m.content) if (isObject(b) && b.type === blockType && typeof b[field] === "string") ids.push(b[field]);
		return ids;
	}

	function messageIdOf(e) {
		if (e.type !== "assistant" || !isObject(e.message)) return null;
		const id = e.message.id;
		return typeof id === "string" && id !== "" ? id : null;
	}

	/** The Claude Agent SDK's conversation at node `leaf` (`get_session_messages`). */
	function computeClaudeContext(leaf) {
		const types = new Set(["user", "assistant", "progress", "system", "attachment"]);
		const entries = []; // [node index, line] of each transcript entry, in file order
		const at = new Map(); // node index -> position in entries
		for (let i = 0; i < view.nodes.length; i++) {
			const l = originalOf(i);
			if (isObject(l) && types.has(l.type) && typeof l.uuid === "string") {
				at.set(i, entries.length);
				entries.push(l);
			}
		}
		const empty = { messages: [], model: null, thinkingLevel: "off", activeToolNames: null };
		let start = -1;
		const seenNodes = new Set();
		for (let i = leaf; i >= 0 && !seenNodes.has(i); i = view.parent[i]) {
			seenNodes.add(i);
			if (at.has(i)) {
				start = at.get(i);
				break;
			}
		}
		if (start < 0) return empty;
		const byUuid = new Map(); // uuid -> its last entry (a Map keeps the first insertion's order)
		for (const e of entries) byUuid.set(e.uuid, e);
		const parentOf = (e) => (typeof e.parentUuid === "string" && e.parentUuid !== "" ? byUuid.get(e.parentUuid) : undefined);
		let chain = [];
		const seen = new Set();
		for (let cur = entries[start]; cur !== undefined; cur = parentOf(cur)) {
			if (seen.has(cur.uuid)) break;
			seen.add(cur.uuid);
			chain.push(cur);
		}
		chain.reverse();
		chain = recoverParallel(byUuid, chain, seen);
		const messages = [];
		let model = null;
		for (const e of chain) {
			if ((e.type !== "user" && e.type !== "assistant") || pyTruthy(e.isMeta) || pyTruthy(e.isSidechain) || pyTruthy(e.teamName)) continue;
			messages.push(has(e, "message") ? e.message : null);
			if (e.type === "assistant" && isObject(e.message) && typeof e.message.model === "string" && e.message.model !== "<synthetic>") {
				model = { modelId: e.message.model };
			}
		}
		return { messages, model, thinkingLevel: "off", activeToolNames: null };
	}

	/** `_recover_orphaned_parallel_tool_results`. */
	function recoverParallel(byUuid, chain, seen) {
		const chainAssistants = chain.filter((e) => e.type === "assistant");
		const anchor = new Map();
		for (const e of chainAssistants) {
			const id = messageIdOf(e);
			if (id) anchor.set(id, e);
		}
		if (anchor.size === 0) return chain;
		const siblings = new Map();
		const callOwner = new Map();
		const resultEntries = [];
		for (const e of byUuid.values()) {
			const mid = messageIdOf(e);
			if (mid) {
				if (!siblings.has(mid)) siblings.set(mid, []);
				siblings.get(mid).push(e);
				for (const call of blockIds(e, "tool_use", "id")) {
					if (!callOwner.has(call)) {
						callOwner.set(call, e);
						continue;
					}
					const owner = callOwner.get(call);
					callOwner.set(call, owner !== null && messageIdOf(owner) === mid ? e : null);
				}
			} else if (e.type === "user" && typeof e.parentUuid === "string" && e.parentUuid !== "" && hasToolResult(e)) {
				resultEntries.push(e);
			}
		}
		const sameWriter = (a, b) => pyTruthy(a.isSidechain) === pyTruthy(b.isSidechain) && JSON.stringify(a.agentId) === JSON.stringify(b.agentId);
		const byAssistant = new Map();
		const add = (key, r) => {
			if (!byAssistant.has(key)) byAssistant.set(key, []);
			byAssistant.get(key).push(r);
		};
		for (const r of resultEntries) {
			add(r.parentUuid, r);
			if (typeof r.sourceToolAssistantUUID === "string") {
				const source = byUuid.get(r.sourceToolAssistantUUID);
				if (source !== undefined && sameWriter(r, source)) add(r.sourceToolAssistantUUID, r);
			}
			for (const call of blockIds(r, "tool_result", "tool_use_id")) {
				const owner = callOwner.get(call);
				if (owner && sameWriter(r, owner)) add(owner.uuid, r);
			}
		}
		const position = new Map();
		let k = 0;
		for (const uuid of byUuid.keys()) position.set(uuid, k++);
		let answeredOnChain = null;
		const processed = new Set();
		const inserts = new Map();
		const byTime = (a, b) => {
			const x = typeof a.timestamp === "string" ? a.timestamp : "";
			const y = typeof b.timestamp === "string" ? b.timestamp : "";
			return x < y ? -1 : x > y ? 1 : 0;
		};
		for (const a of chainAssistants) {
			const mid = messageIdOf(a);
			if (!mid || processed.has(mid)) continue;
			processed.add(mid);
			const group = siblings.get(mid) || [a];
			const members = new Set(group.map((m) => m.uuid));
			const orphanedSiblings = group.filter((m) => !seen.has(m.uuid));
			const orphanedResults = [];
			const strays = [];
			const collected = new Set();
			for (const m of group) {
				for (const r of byAssistant.get(m.uuid) || []) {
					if (seen.has(r.uuid) || collected.has(r.uuid)) continue;
					collected.add(r.uuid);
					if (members.has(r.parentUuid)) orphanedResults.push(r);
					else strays.push(r);
				}
			}
			if (strays.length > 0) {
				if (answeredOnChain === null) answeredOnChain = new Set(chain.flatMap((e) => blockIds(e, "tool_result", "tool_use_id")));
				const answered = new Set(answeredOnChain);
				for (const r of orphanedResults) for (const id of blockIds(r, "tool_result", "tool_use_id")) answered.add(id);
				strays.sort((x, y) => position.get(x.uuid) - position.get(y.uuid));
				for (const r of strays) {
					const calls = blockIds(r, "tool_result", "tool_use_id");
					const open = calls.some((c) => !answered.has(c) && callOwner.get(c) && members.has(callOwner.get(c).uuid));
					if (!open) continue;
					for (const c of calls) answered.add(c);
					orphanedResults.push(r);
				}
			}
			if (orphanedSiblings.length === 0 && orphanedResults.length === 0) continue;
			orphanedSiblings.sort(byTime);
			orphanedResults.sort(byTime);
			const recovered = orphanedSiblings.concat(orphanedResults);
			for (const r of recovered) seen.add(r.uuid);
			inserts.set(anchor.get(mid).uuid, recovered);
		}
		if (inserts.size === 0) return chain;
		const out = [];
		for (const e of chain) {
			out.push(e);
			for (const r of inserts.get(e.uuid) || []) out.push(r);
		}
		return out;
	}

	/** Whether a line's message content has a tool_result block. */
	function hasToolResult(e) {
		const m = e.message;
		return isObject(m) && Array.isArray(m.content) && m.content.some((b) => isObject(b) && b.type === "tool_result");
	}

	const CODEX_ROLLOUT = new Set(["session_meta", "response_item", "event_msg", "turn_context", "compacted"]);
	const CODEX_RECORDED = new Set(["function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "local_shell_call", "reasoning", "web_search_call", "compaction", "compaction_summary", "context_compaction", "tool_search_call", "tool_search_output", "image_generation_call", "agent_message", "mcp_tool_call", "mcp_tool_call_output"]);
	const CODEX_CONTEXTUAL = ["<environment_context>", "<turn_aborted>", "<user_instructions>", "# agents.md instructions", "<skill>", "<user_shell_command>", "<subagent_notification>"];

	/** A user message's input_text parts joined, or null for any other item. */
	function userText(item) {
		if (!isObject(item) || item.type !== "message" || item.role !== "user") return null;
		const parts = Array.isArray(item.content) ? item.content : [];
		return parts.filter((p) => isObject(p) && p.type === "input_text" && typeof p.text === "string").map((p) => p.text).join("");
	}

	function userTurn(item) {
		const t = userText(item);
		if (t === null) return false;
		const start = t.trimStart().toLowerCase();
		return !CODEX_CONTEXTUAL.some((c) => start.startsWith(c));
	}

	/** Codex's middle truncation to `tokens` tokens of 4 bytes. */
	function truncateMiddle(text, tokens) {
		const bytes = new TextEncoder().encode(text);
		const budget = tokens * 4;
		if (bytes.length <= budget) return text;
		let left = Math.floor(budget / 2);
		while (left > 0 && (bytes[left] & 0xc0) === 0x80) left--;
		let right = bytes.length - (budget - Math.floor(budget / 2));
		while (right < bytes.length && (bytes[right] & 0xc0) === 0x80) right++;
		const d = new TextDecoder();
		return `${d.decode(bytes.subarray(0, left))}…${Math.ceil((right - left) / 4)} tokens truncated…${d.decode(bytes.subarray(right))}`;
	}

	/** The history Codex rebuilds from the rollout's lines on the path to node `leaf`. */
	function computeCodexContext(leaf) {
		const path = [];
		const seenNodes = new Set();
		for (let i = leaf; i >= 0 && !seenNodes.has(i); i = view.parent[i]) {
			seenNodes.add(i);
			path.push(i);
		}
		path.reverse();
		let items = [];
		const summaries = new Set();
		let model = null;
		let effort = null;
		let provider = null;
		const str = (v) => (typeof v === "string" ? v : null);
		const record = (item) => {
			if (!isObject(item) || typeof item.type !== "string") return;
			if (item.type === "message" ? item.role !== "system" : CODEX_RECORDED.has(item.type)) items.push(item);
		};
		for (const i of path) {
			const l = originalOf(i);
			if (!isObject(l) || has(l, "record_type")) continue;
			const p = l.payload;
			if (l.type === "response_item" && has(l, "payload")) record(p);
			else if (l.type === "compacted" && isObject(p)) {
				const message = str(p.message) ?? "";
				if (Array.isArray(p.replacement_history)) {
					items = p.replacement_history.filter((x) => isObject(x) && typeof x.type === "string");
				} else {
					const users = items.filter(userTurn).map(userText).filter((t) => !summaries.has(t));
					let remaining = 20000;
					const selected = [];
					for (let k = users.length - 1; k >= 0 && remaining > 0; k--) {
						const tokens = Math.ceil(new TextEncoder().encode(users[k]).length / 4);
						if (tokens <= remaining) {
							selected.push(users[k]);
							remaining -= tokens;
						} else {
							selected.push(truncateMiddle(users[k], remaining));
							break;
						}
					}
					selected.reverse();
					selected.push(message === "" ? "(no summary available)" : message);
					items = selected.map((text) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] }));
				}
				summaries.add(message);
			} else if (l.type === "event_msg" && isObject(p) && p.type === "thread_rolled_back") {
				const n = Number.isInteger(p.num_turns) && p.num_turns > 0 ? p.num_turns : 0;
				const turns = [];
				items.forEach((item, k) => {
					if (userTurn(item)) turns.push(k);
				});
				if (turns.length > 0 && n > 0) items = items.slice(0, n >= turns.length ? turns[0] : turns[turns.length - n]);
			} else if (l.type === "turn_context" && isObject(p)) {
				model = str(p.model) ?? model;
				effort = str(p.effort);
			} else if (l.type === "session_meta" && isObject(p)) {
				provider = str(p.model_provider) ?? provider;
			} else if (typeof l.type === "string" && !CODEX_ROLLOUT.has(l.type) && !has(l, "payload")) {
				record(l);
			}
		}
		// As before each request: every call answered, no output without its call.
		const answerOf = (item) => (item.type === "function_call" || item.type === "local_shell_call" ? "function_call_output" : item.type === "custom_tool_call" ? "custom_tool_call_output" : null);
		const calls = new Set();
		const outputs = new Set();
		for (const item of items) {
			if (typeof item.call_id !== "string") continue;
			const answer = answerOf(item);
			if (answer) calls.add(`${answer} ${item.call_id}`);
			if (item.type === "function_call_output" || item.type === "custom_tool_call_output") outputs.add(`${item.type} ${item.call_id}`);
		}
		const messages = [];
		for (const item of items) {
			const id = typeof item.call_id === "string" ? item.call_id : null;
			if ((item.type === "function_call_output" || item.type === "custom_tool_call_output") && (id === null || !calls.has(`${item.type} ${id}`))) continue;
			messages.push(item);
			const answer = answerOf(item);
			if (answer && id !== null && !outputs.has(`${answer} ${id}`)) messages.push({ type: answer, call_id: id, output: "aborted" });
		}
		const m = model === null ? null : provider === null ? { modelId: model } : { provider, modelId: model };
		return { messages, model: m, thinkingLevel: effort ?? "off", activeToolNames: null };
	}

	/** pi's `buildSessionContext` (0.84's, or with `commits` 0.99's) of the branch from node
	 * `leaf`'s entry, or, at a line that holds none and at the session's leaf, from the `main`
	 * lane's leaf (branch's tip) as the file stood there. */
	function computeLanesContext(leaf, commits) {
		const entries = new Map();
		let main = null;
		let start = null;
		// At the session's leaf, the `main` lane's leaf at the end of the file; elsewhere the lines
		// up to this one are enough (ancestors come first).
		const atLeaf = leaf === view.leaf;
		const last = atLeaf ? view.nodes.length - 1 : leaf;
		for (let i = 0; i <= last && i < view.nodes.length; i++) {
			const l = originalOf(i);
			let held = null;
			// A 0.84 line is one write; a 0.85+ commit line one write or an array of them.
			for (const w of commits && Array.isArray(l) ? l : [l]) {
				if (!isObject(w)) continue;
				if (w.kind === "entry" && typeof w.id === "string") {
					entries.set(w.id, w);
					held = w.id;
					if (!commits && w.lane === "main") main = w.id;
				} else if (!commits && w.kind === "lane" && w.lane === "main") {
					main = typeof w.leafId === "string" ? w.leafId : null;
				} else if (commits && w.kind === "value" && w.namespace === "pi.branch.tip" && w.key === "main") {
					main = typeof w.value === "string" ? w.value : null;
				}
			}
			if (i === leaf && !atLeaf) start = held !== null ? held : main;
		}
		if (atLeaf) start = main;
		const path = [];
		for (let id = start; id !== null && entries.has(id) && path.length <= entries.size; ) {
			const e = entries.get(id);
			path.push(e);
			id = typeof e.parentId === "string" ? e.parentId : null;
		}
		path.reverse();
		let thinkingLevel = "off";
		let model = null;
		let activeToolNames = null;
		// 0.85+: the settings are values, not entries; an assistant message that stopped with an
		// error, aborted or deferred is left out (in a retained tail too).
		const out = commits ? ["error", "aborted", "deferred"] : ["deferred"];
		const inContext = (m) => !(isObject(m) && m.role === "assistant" && out.includes(m.stopReason));
		for (const e of commits ? [] : path) {
			if (e.type === "thinking_level_change") {
				if (has(e, "thinkingLevel")) thinkingLevel = e.thinkingLevel;
			} else if (e.type === "model_change") {
				model = {};
				if (has(e, "provider")) model.provider = e.provider;
				if (has(e, "modelId")) model.modelId = e.modelId;
			}
			else if (e.type === "message" && isObject(e.message) && e.message.role === "assistant") {
				model = {};
				if (has(e.message, "provider")) model.provider = e.message.provider;
				if (has(e.message, "model")) model.modelId = e.message.model;
			} else if (e.type === "active_tools_change") activeToolNames = has(e, "activeToolNames") ? e.activeToolNames : null;
		}
		let from = 0;
		for (let k = path.length - 1; k >= 0; k--) {
			if (path[k].type === "compaction") {
				from = k;
				break;
			}
		}
		const messages = [];
		for (const e of path.slice(from)) {
			if (e.type === "message") {
				const m = e.message;
				if (has(e, "message") && inContext(m)) messages.push(m);
			} else if (e.type === "compaction") {
				messages.push(synthetic(e, "compactionSummary", ["summary", "tokensBefore", "timestamp"]));
				if (Array.isArray(e.retainedTail)) for (const m of e.retainedTail) if (!commits || inContext(m)) messages.push(m);
			} else if (e.type === "branch_summary" && truthy(e.summary)) {
				messages.push(synthetic(e, "branchSummary", ["summary", "fromId", "timestamp"]));
			}
		}
		return { messages, model, thinkingLevel, activeToolNames };
	}

	/** The context at node `leaf` of the exported session, by its format's rules. */
	function contextOfExported(leaf) {
		if (data.format === "claude-code") return computeClaudeContext(leaf);
		if (data.format === "codex") return computeCodexContext(leaf);
		if (data.format === "pi-lanes" || data.format === "pi-commits") return computeLanesContext(leaf, data.format === "pi-commits");
		return computeContext(leaf);
	}

	// ---- the server ----
	const fragment = new URLSearchParams(location.hash.slice(1));
	const token = fragment.get("token");

	async function api(path) {
		const headers = {};
		if (token) headers.authorization = `Bearer ${token}`;
		const res = await fetch(path, { headers });
		if (!res.ok) {
			let detail = "";
			try {
				const body = await res.json();
				detail = `${body.code}: ${body.message}`;
			} catch {
				detail = res.statusText;
			}
			if (res.status === 401) detail += " (open this page as /view#token=TOKEN)";
			throw new Error(`${res.status} ${detail}`);
		}
		return res;
	}

	function sessionPath(sid, rest) {
		return `/v1/sessions/${encodeURIComponent(sid)}${rest}`;
	}

	async function listSessions() {
		const all = [];
		let after = null;
		for (;;) {
			const q = after == null ? "" : `&after=${encodeURIComponent(after)}`;
			const page = await (await api(`/v1/sessions?limit=1000${q}`)).json();
			all.push(...page.sessions);
			if (page.next == null) break;
			after = page.next;
		}
		return all;
	}

	async function openSession(sid) {
		clearError();
		$("title").textContent = sid;
		$("status").textContent = "loading…";
		const [summary, tree, entriesText, ops] = await Promise.all([
			api(sessionPath(sid, "")).then((r) => r.json()),
			api(sessionPath(sid, "/tree")).then((r) => r.json()),
			api(sessionPath(sid, "/entries")).then((r) => r.text()),
			api(sessionPath(sid, "/operations")).then((r) => r.json()),
		]);
		// The last entry of an id wins, as the server's GET .../entries/{eid} does.
		const lines = new Map();
		for (const line of entriesText.split("\n")) {
			if (line.trim() === "") continue;
			try {
				const e = JSON.parse(line);
				if (isObject(e) && typeof e.id === "string") lines.set(e.id, line);
			} catch {
				// Not JSON: the entry shows as its text when the tree names it.
			}
		}
		$("title").textContent = summary.name ? `${summary.name} (${sid})` : sid;
		load(
			tree,
			summary.leaf,
			(i) => lines.get(view.nodes[i].id) ?? null,
			(i) => api(sessionPath(sid, `/context?leaf=${encodeURIComponent(view.nodes[i].id)}`)).then((r) => r.json()),
		);
		showOperations(ops.operations);
		const params = new URLSearchParams(location.hash.slice(1));
		params.set("session", sid);
		history.replaceState(null, "", `#${params}`);
	}

	function showOperations(ops) {
		$("ops-pane").hidden = false;
		$("ops-count").textContent = `(${ops.length})`;
		const frag = document.createDocumentFragment();
		for (const op of ops) {
			const li = document.createElement("li");
			li.value = op.op;
			li.className = `op op-${op.kind}`;
			li.append(span("op-kind", op.kind), span("op-time", op.time ?? "?"), span("op-actor", op.actor ?? "-"));
			const move = op.leafBefore === op.leafAfter ? `leaf ${short(op.leafAfter ?? "root")}` : `leaf ${short(op.leafBefore ?? "root")} → ${short(op.leafAfter ?? "root")}`;
			li.append(document.createTextNode(`${move} · ${op.records} record${op.records === 1 ? "" : "s"}`));
			if (op.leafAfter != null) {
				li.title = `show ${op.leafAfter}, the leaf after operation ${op.op}`;
				li.dataset.leaf = op.leafAfter;
			}
			frag.appendChild(li);
		}
		$("ops").replaceChildren(frag);
	}

	async function startServer() {
		$("sessions-label").hidden = false;
		const sessions = await listSessions();
		const select = $("sessions");
		const frag = document.createDocumentFragment();
		const none = document.createElement("option");
		none.value = "";
		none.textContent = sessions.length === 0 ? "(no sessions)" : "(choose a session)";
		frag.appendChild(none);
		for (const s of sessions) {
			const o = document.createElement("option");
			o.value = s.id;
			o.textContent = `${s.id} · ${s.entries} entries`;
			frag.appendChild(o);
		}
		select.replaceChildren(frag);
		$("status").textContent = `${sessions.length} session${sessions.length === 1 ? "" : "s"}`;
		const wanted = fragment.get("session");
		if (wanted && sessions.some((s) => s.id === wanted)) {
			select.value = wanted;
			await openSession(wanted);
		}
	}

	// ---- events ----
	$("tree").addEventListener("scroll", () => {
		if (!view.pending) {
			view.pending = true;
			requestAnimationFrame(() => {
				view.pending = false;
				render();
			});
		}
	});
	$("tree").addEventListener("click", (ev) => {
		const target = ev.target instanceof Element ? ev.target : null;
		const twisty = target?.closest("[data-toggle]");
		if (twisty) {
			toggle(Number(twisty.getAttribute("data-toggle")));
			return;
		}
		const row = target?.closest(".row");
		if (row) select(view.rows[Number(row.getAttribute("data-row"))]);
	});
	$("tree").addEventListener("keydown", (ev) => {
		if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
		ev.preventDefault();
		const r = view.selected >= 0 ? view.rowOf[view.selected] : -1;
		const next = Math.min(view.rows.length - 1, Math.max(0, r + (ev.key === "ArrowDown" ? 1 : -1)));
		if (next >= 0) reveal(view.rows[next]);
	});
	window.addEventListener("resize", render);
	$("context-raw").addEventListener("toggle", fillContextJson);
	$("expand-all").addEventListener("click", () => expandAll(true));
	$("collapse-all").addEventListener("click", () => {
		view.expanded = new Set();
		buildRows();
		render();
	});
	$("goto-form").addEventListener("submit", (ev) => {
		ev.preventDefault();
		const want = $("goto").value.trim();
		if (want === "") return;
		let found = view.indexOf.get(want);
		if (found === undefined) {
			const matches = [];
			for (let i = 0; i < view.nodes.length && matches.length < 2; i++) {
				if (view.nodes[i].id.startsWith(want)) matches.push(i);
			}
			if (matches.length !== 1) {
				showError(matches.length === 0 ? `no entry ${want}` : `${want} is ambiguous`);
				return;
			}
			found = matches[0];
		}
		clearError();
		reveal(found);
	});
	$("sessions").addEventListener("change", () => {
		const sid = $("sessions").value;
		if (sid) openSession(sid).catch((err) => showError(err.message || String(err)));
	});
	$("ops").addEventListener("click", (ev) => {
		const li = ev.target instanceof Element ? ev.target.closest("li[data-leaf]") : null;
		const i = li ? view.indexOf.get(li.getAttribute("data-leaf")) : undefined;
		if (i !== undefined) reveal(i);
	});

	// ---- start ----
	if (data.mode === "export") {
		const s = data.session;
		$("title").textContent = s.name ? `${s.name} (${s.id})` : s.id;
		document.title = `grove · ${s.name || s.id}`;
		load({ nodes: data.nodes, roots: data.roots }, data.leaf, (i) => data.lines[i], contextOfExported);
	} else {
		startServer().catch((err) => showError(err.message || String(err)));
	}
	// For tests and the console: what is shown.
	window.groveView = { view, computeContext: (id) => contextOfExported(view.indexOf.get(id)), reveal: (id) => reveal(view.indexOf.get(id)) };
})();
