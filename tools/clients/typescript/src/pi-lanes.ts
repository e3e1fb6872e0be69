/**
 * pi 0.84's lane-based session storage (pi-agent-core 0.84: `SessionRepo` with lanes, records and
 * facts) on grove: `GrovePiLaneRepo` is a `SessionRepo` whose sessions are pi's own, kept by pi's
 * own `JsonlSessionRepo` on `GroveLaneFileSystem`, a filesystem whose files are grove sessions.
 * docs/pi.md, "0.84 on grove", is the mapping.
 *
 * pi 0.84 keeps a session as a JSONL file: a header, then one line per mutation (an entry, a
 * record, a lane move, a fact), each numbered by one sequence; its storage replays the file into
 * its state on open and appends a line per write. Here every file is one grove session and every
 * line one entry (`custom`, `customType` `pi-lanes.` + the line's `kind`, `data` the line), the
 * session's header naming the file (`metadata.foreign`, as `grove import --format pi-lanes`
 * writes it), so `grove export --format pi-lanes` gives pi's file back byte for byte. A line is
 * appended as a child of the line before it only if that is still the session's leaf
 * (`POST .../entries/if`): a second writer of a session is refused (pi's `storage` error), never
 * interleaved. A fork's new file is written whole, then published as one import: atomically.
 *
 * `GroveLaneSessionSearch` is pi 0.84's `SessionSearch` over these sessions, by grove's index.
 *
 * pi 0.83, 0.84 and 0.99 are versions of one npm package, which a project has one of; so this
 * module imports nothing of pi. What it needs of pi's code comes in a kit: the caller's
 * `import * as pi from "@earendil-works/pi-agent-core"` of 0.84 is one.
 */
import { createHash } from "node:crypto";
import { posix } from "node:path";
import type { GroveClient } from "./client.js";
import { GroveError } from "./errors.js";
import { type GroveSearchHit, type PiSearchOptions, SEARCH_MAX_HITS, searchesNothing, throwIfAborted } from "./pi-search.js";
import type { SearchResults, SessionSummary, WireEntry } from "./types.js";

export { type GroveSearchHit, type PiSearchOptions, SEARCH_MAX_HITS } from "./pi-search.js";

/** The `customType` of a line's entry: this prefix and the line's `kind`. */
export const LANE_LINE = "pi-lanes.";

/** pi's `FileError` (its fields; pi only reads `code` and `message`). */
export interface LaneFileError extends Error {
	code: "not_found" | "not_supported" | "invalid" | "unknown";
	path?: string;
}

/** pi's `Result`. */
export type LaneResult<T> = { ok: true; value: T } | { ok: false; error: LaneFileError };

/** pi's `FileInfo`. */
export interface LaneFileInfo {
	name: string;
	path: string;
	kind: "file" | "directory";
	size: number;
	mtimeMs: number;
}

/** What `GrovePiLaneRepo` needs of pi 0.84: its JSONL repository. */
export interface PiLanesKit<Repo> {
	JsonlSessionRepo: new (options: { fs: GroveLaneFileSystem; sessionsRoot: string }) => Repo;
}

/** pi 0.84's `JsonlSessionRepo`, as this module calls it. */
export interface JsonlRepoLike<S, M> {
	create(options: { cwd: string; id?: string; parentSessionId?: string }): Promise<S>;
	open(metadata: M): Promise<S>;
	list(options?: { cwd?: string }): Promise<M[]>;
	delete(metadata: M): Promise<void>;
	fork(source: M, options: { cwd: string; id?: string; parentSessionId?: string }): Promise<S>;
}

function ok<T>(value: T): LaneResult<T> {
	return { ok: true, value };
}

function fail<T>(code: LaneFileError["code"], message: string, path?: string): LaneResult<T> {
	return { ok: false, error: Object.assign(new Error(message), { name: "FileError", code, path }) };
}

const TMP = ".tmp";
/** The longest path named by its hex in a session id (grove's ids are at most 256 bytes). */
const HEX_PATH_MAX = 120;

/**
 * A filesystem whose `.jsonl` files are grove sessions and whose directories are the folders of
 * their paths: just what pi 0.84's `JsonlSessionRepo` calls. Files ending in `.tmp` (a fork's
 * file while pi writes it) live in memory until renamed.
 */
export class GroveLaneFileSystem {
	readonly cwd = "/";
	/** Files being written (`.tmp`): their text. */
	private readonly pending = new Map<string, string>();
	/** Directories made here (those holding a session exist anyway). */
	private readonly dirs = new Set<string>(["/"]);
	/** Each session file's last line, as an entry id, when this filesystem last read or wrote it. */
	private readonly tips = new Map<string, string | null>();

	constructor(
		private readonly client: GroveClient,
		/** Sessions of this filesystem are named `PREFIX-…` or `PREFIX.…` (letters and digits). */
		readonly prefix = "pl",
	) {
		if (!/^[A-Za-z0-9]+$/.test(prefix)) throw new Error(`the prefix must be letters and digits: ${JSON.stringify(prefix)}`);
	}

	/** The grove session of a file: `PREFIX-` + its path's hex, or `PREFIX.` + its SHA-256 when long. */
	sessionOf(path: string): string {
		const hex = Buffer.from(path, "utf8").toString("hex");
		if (path.length <= HEX_PATH_MAX) return `${this.prefix}-${hex}`;
		return `${this.prefix}.${createHash("sha256").update(path, "utf8").digest("hex")}`;
	}

	async absolutePath(path: string): Promise<LaneResult<string>> {
		return ok(posix.resolve(this.cwd, path));
	}

	async canonicalPath(path: string): Promise<LaneResult<string>> {
		return this.absolutePath(path);
	}

	async joinPath(parts: string[]): Promise<LaneResult<string>> {
		return ok(posix.join(...parts));
	}

	/** The session's lines, as the file it keeps (each line with its newline). */
	async readTextFile(path: string): Promise<LaneResult<string>> {
		const held = this.pending.get(path);
		if (held !== undefined) return ok(held);
		let entries: WireEntry[];
		try {
			entries = await this.client.entries(this.sessionOf(path));
		} catch (e) {
			if (e instanceof GroveError && e.code === "not_found") return fail("not_found", `no session file ${path}`, path);
			return fail("unknown", `reading ${path}: ${String(e)}`, path);
		}
		let text = "";
		for (const entry of entries) {
			if (typeof entry.customType !== "string" || !entry.customType.startsWith(LANE_LINE)) continue;
			text += `${typeof entry.text === "string" ? entry.text : JSON.stringify(entry.data)}\n`;
		}
		this.tips.set(path, entries.at(-1)?.id ?? null);
		return ok(text);
	}

	async readTextLines(path: string, options: { maxLines?: number } = {}): Promise<LaneResult<string[]>> {
		const text = await this.readTextFile(path);
		if (!text.ok) return text;
		const lines = text.value.split("\n");
		if (lines.at(-1) === "") lines.pop();
		return ok(options.maxLines === undefined ? lines : lines.slice(0, options.maxLines));
	}

	async readBinaryFile(path: string): Promise<LaneResult<Uint8Array>> {
		const text = await this.readTextFile(path);
		return text.ok ? ok(Buffer.from(text.value, "utf8")) : text;
	}

	/** Makes a session file (pi writes a new file's header so), or a `.tmp` file in memory. */
	async writeFile(path: string, content: string | Uint8Array): Promise<LaneResult<void>> {
		const text = typeof content === "string" ? content : Buffer.from(content).toString("utf8");
		if (path.endsWith(TMP)) {
			this.pending.set(path, text);
			return ok(undefined);
		}
		return this.publish(path, text);
	}

	/** Appends lines to a session file, each only if the file's last line is still the one this filesystem saw. */
	async appendFile(path: string, content: string | Uint8Array): Promise<LaneResult<void>> {
		const text = typeof content === "string" ? content : Buffer.from(content).toString("utf8");
		const held = this.pending.get(path);
		if (held !== undefined) {
			this.pending.set(path, held + text);
			return ok(undefined);
		}
		const sid = this.sessionOf(path);
		for (const line of text.split("\n")) {
			if (line === "") continue;
			let data: { kind?: unknown };
			try {
				data = JSON.parse(line) as { kind?: unknown };
			} catch {
				return fail("invalid", `not a JSON line for ${path}: ${line.slice(0, 80)}`, path);
			}
			const kind = typeof data.kind === "string" ? data.kind : "line";
			try {
				const tip = this.tips.has(path) ? (this.tips.get(path) ?? null) : await this.client.leaf(sid);
				const result = await this.client.appendIf(sid, tip, { type: "custom", customType: `${LANE_LINE}${kind}`, data });
				if (!result.appended) {
					this.tips.delete(path);
					return fail("unknown", `another writer appended to ${path} (session ${sid}): reopen it`, path);
				}
				this.tips.set(path, result.id);
			} catch (e) {
				if (e instanceof GroveError && e.code === "not_found") return fail("not_found", `no session file ${path}`, path);
				return fail("unknown", `appending to ${path}: ${String(e)}`, path);
			}
		}
		return ok(undefined);
	}

	/** Publishes a `.tmp` file as its session file (one import: all of it or nothing). */
	async renameFile(source: string, destination: string): Promise<LaneResult<void>> {
		const held = this.pending.get(source);
		if (held === undefined) return fail("not_supported", `only a file being written can be renamed: ${source}`, source);
		const published = await this.publish(destination, held);
		if (published.ok) this.pending.delete(source);
		return published;
	}

	/** A new session holding `text`'s lines, its header naming the file. */
	private async publish(path: string, text: string): Promise<LaneResult<void>> {
		const lines = text.split("\n");
		if (lines.at(-1) === "") lines.pop();
		let header: { createdAt?: unknown; cwd?: unknown };
		try {
			header = JSON.parse(lines[0] ?? "") as { createdAt?: unknown; cwd?: unknown };
		} catch {
			return fail("invalid", `${path} does not start with a JSON header`, path);
		}
		const sid = this.sessionOf(path);
		const created = typeof header.createdAt === "number" ? header.createdAt : Date.now();
		const timestamp = new Date(created).toISOString();
		const cwd = typeof header.cwd === "string" && header.cwd !== "" ? header.cwd : "/";
		const foreign = { format: "pi-lanes", file: path, lines: lines.length, finalNewline: true };
		let jsonl = `${JSON.stringify({ type: "session", version: 3, id: sid, timestamp, cwd, metadata: { foreign } })}\n`;
		for (const [i, line] of lines.entries()) {
			let kind = "line";
			try {
				const parsed = JSON.parse(line) as { kind?: unknown };
				if (typeof parsed.kind === "string") kind = parsed.kind;
			} catch {
				return fail("invalid", `line ${i + 1} of ${path} is not JSON`, path);
			}
			const parent = i === 0 ? "null" : JSON.stringify(`L${i}`);
			jsonl += `{"type":"custom","customType":${JSON.stringify(LANE_LINE + kind)},"id":"L${i + 1}","parentId":${parent},"timestamp":${JSON.stringify(timestamp)},"data":${line}}\n`;
		}
		try {
			await this.client.importSession(jsonl);
		} catch (e) {
			return fail("unknown", `writing ${path} (session ${sid}): ${String(e)}`, path);
		}
		this.tips.set(path, lines.length === 0 ? null : `L${lines.length}`);
		return ok(undefined);
	}

	async fileInfo(path: string): Promise<LaneResult<LaneFileInfo>> {
		const held = this.pending.get(path);
		const name = posix.basename(path);
		if (held !== undefined) return ok({ name, path, kind: "file", size: Buffer.byteLength(held), mtimeMs: Date.now() });
		if (this.dirs.has(path)) return ok({ name, path, kind: "directory", size: 0, mtimeMs: 0 });
		try {
			const session = await this.client.getSession(this.sessionOf(path));
			return ok({ name, path, kind: "file", size: 0, mtimeMs: Date.parse(session.created) });
		} catch (e) {
			if (e instanceof GroveError && e.code === "not_found") return fail("not_found", `no file ${path}`, path);
			return fail("unknown", `${path}: ${String(e)}`, path);
		}
	}

	/** The sessions whose ids start with `start`, in id order, page by page (the store's id order makes it a range). */
	private async *range(start: string): AsyncGenerator<SessionSummary, void, undefined> {
		let after = start;
		for (;;) {
			const page = await this.client.listSessions({ after, limit: 500 });
			for (const s of page.sessions) {
				if (!s.id.startsWith(start)) return;
				yield s;
			}
			if (page.next === null || page.next === undefined) return;
			after = page.next;
		}
	}

	/**
	 * The session files under `dir` (at any depth): their paths and when their sessions were made.
	 * A path's hex starts with its folder's, so the short paths are one range of ids; only the
	 * few long ones (hashed) are read from their headers.
	 */
	private async files(dir: string): Promise<{ path: string; mtimeMs: number }[]> {
		const folder = dir === "/" ? "/" : `${dir}/`;
		const out: { path: string; mtimeMs: number }[] = [];
		const short = `${this.prefix}-${Buffer.from(folder, "utf8").toString("hex")}`;
		for await (const s of this.range(short)) {
			const path = Buffer.from(s.id.slice(this.prefix.length + 1), "hex").toString("utf8");
			if (this.sessionOf(path) === s.id) out.push({ path, mtimeMs: Date.parse(s.created) });
		}
		for await (const s of this.range(`${this.prefix}.`)) {
			const foreign = (await this.client.getSession(s.id)).metadata?.foreign as { file?: unknown } | undefined;
			const path = foreign?.file;
			if (typeof path === "string" && path.startsWith(folder) && this.sessionOf(path) === s.id) {
				out.push({ path, mtimeMs: Date.parse(s.created) });
			}
		}
		return out;
	}

	async listDir(dir: string): Promise<LaneResult<LaneFileInfo[]>> {
		const children = new Map<string, LaneFileInfo>();
		const under = (path: string) => path.startsWith(dir === "/" ? "/" : `${dir}/`) && path !== dir;
		const add = (path: string, info: Omit<LaneFileInfo, "name" | "path">) => {
			const rest = path.slice(dir === "/" ? 1 : dir.length + 1);
			const child = rest.split("/")[0] ?? rest;
			const childPath = posix.join(dir, child);
			const kind = childPath === path ? info.kind : "directory";
			if (!children.has(childPath)) children.set(childPath, { name: child, path: childPath, ...info, kind });
		};
		try {
			for (const f of await this.files(dir)) if (under(f.path)) add(f.path, { kind: "file", size: 0, mtimeMs: f.mtimeMs });
		} catch (e) {
			return fail("unknown", `listing ${dir}: ${String(e)}`, dir);
		}
		for (const d of this.dirs) if (under(d)) add(d, { kind: "directory", size: 0, mtimeMs: 0 });
		for (const p of this.pending.keys()) if (under(p)) add(p, { kind: "file", size: 0, mtimeMs: Date.now() });
		return ok([...children.values()]);
	}

	async exists(path: string): Promise<LaneResult<boolean>> {
		if (this.pending.has(path) || this.dirs.has(path)) return ok(true);
		try {
			if (await this.client.sessionExists(this.sessionOf(path))) return ok(true);
			return ok((await this.files(path)).length > 0);
		} catch (e) {
			return fail("unknown", `${path}: ${String(e)}`, path);
		}
	}

	async createDir(path: string): Promise<LaneResult<void>> {
		for (let d = path; d !== "/" && d !== "."; d = posix.dirname(d)) this.dirs.add(d);
		return ok(undefined);
	}

	async remove(path: string, options: { force?: boolean } = {}): Promise<LaneResult<void>> {
		if (this.pending.delete(path)) return ok(undefined);
		this.tips.delete(path);
		try {
			await this.client.deleteSession(this.sessionOf(path));
			return ok(undefined);
		} catch (e) {
			if (e instanceof GroveError && e.code === "not_found") {
				return options.force === true ? ok(undefined) : fail("not_found", `no file ${path}`, path);
			}
			return fail("unknown", `removing ${path}: ${String(e)}`, path);
		}
	}

	async createTempDir(): Promise<LaneResult<string>> {
		return fail("not_supported", "no temporary directories on grove");
	}

	async createTempFile(): Promise<LaneResult<string>> {
		return fail("not_supported", "no temporary files on grove");
	}

	async cleanup(): Promise<void> {}
}

/**
 * pi 0.84's `SessionRepo` on grove: pi's own `JsonlSessionRepo` on a `GroveLaneFileSystem`, its
 * sessions made in `cwd` unless a create or fork names another (pi's repository contract has no
 * working directory; its JSONL repository files sessions by one).
 */
export class GrovePiLaneRepo<S, M> {
	readonly fs: GroveLaneFileSystem;
	private readonly jsonl: JsonlRepoLike<S, M>;
	private readonly cwd: string;

	constructor(client: GroveClient, pi: PiLanesKit<JsonlRepoLike<S, M>>, options: { prefix?: string; cwd?: string; sessionsRoot?: string } = {}) {
		this.fs = new GroveLaneFileSystem(client, options.prefix);
		this.cwd = options.cwd ?? "/";
		this.jsonl = new pi.JsonlSessionRepo({ fs: this.fs, sessionsRoot: options.sessionsRoot ?? "/sessions" });
	}

	create(options: { id?: string; parentSessionId?: string; cwd?: string } = {}): Promise<S> {
		return this.jsonl.create({ ...options, cwd: options.cwd ?? this.cwd });
	}

	open(metadata: M): Promise<S> {
		return this.jsonl.open(metadata);
	}

	/** The sessions (in `options.cwd` only, when given), newest first. */
	list(options?: { cwd?: string } | void): Promise<M[]> {
		return this.jsonl.list(options || {});
	}

	delete(metadata: M): Promise<void> {
		return this.jsonl.delete(metadata);
	}

	fork(source: M, options: { id?: string; parentSessionId?: string; cwd?: string } = {}): Promise<S> {
		const cwd = options.cwd ?? (source as { cwd?: unknown }).cwd;
		return this.jsonl.fork(source, { ...options, cwd: typeof cwd === "string" ? cwd : this.cwd });
	}
}

/** A lane file's line: an entry's (`kind` `entry`) carries the entry's fields, the header (`kind` `header`) the session's `id`. */
interface LaneLine {
	kind?: unknown;
	id?: unknown;
	type?: unknown;
}

/** The line an entry keeps: its `data`, or its `text` (a line with more than the object, docs/format.md). */
function lineOf(entry: WireEntry | undefined): LaneLine | undefined {
	if (entry === undefined) return undefined;
	if (typeof entry.data === "object" && entry.data !== null) return entry.data as LaneLine;
	if (typeof entry.text !== "string") return undefined;
	try {
		return JSON.parse(entry.text) as LaneLine;
	} catch {
		return undefined;
	}
}

/**
 * pi 0.84's `SessionSearch` over the sessions of `GroveLaneFileSystem`s of one prefix, by
 * grove's index: a hit's `sessionId` is pi's session id (the file's header's `id`), its
 * `entryId` pi's entry id. grove indexes the lines (custom entries `pi-lanes.KIND`, their
 * strings: the entry's text, and the line's kind and lane), so a hit is read back to its line
 * and kept only when the line is an entry (not a record, a lane move or a fact) of the types
 * asked for; the search asks grove for more hits (up to `SEARCH_MAX_HITS`) while too few are
 * kept. docs/pi.md, "Search", says how it differs from pi's own scanning search.
 */
export class GroveLaneSessionSearch {
	/** Each grove session's pi session id, once read. */
	private readonly piIds = new Map<string, string | undefined>();

	constructor(
		private readonly client: GroveClient,
		/** The prefix of the filesystem (`GroveLaneFileSystem`'s, default `pl`). */
		readonly prefix = "pl",
	) {}

	async *search(text: string, options: PiSearchOptions = {}): AsyncGenerator<GroveSearchHit, void, undefined> {
		if (searchesNothing(text, options)) return;
		const { signal } = options;
		const wanted = options.limit ?? Number.POSITIVE_INFINITY;
		const types = options.entryTypes === undefined ? undefined : new Set(options.entryTypes);
		const seen = new Set<string>();
		let found = 0;
		let ask = Math.min(Math.max(2 * wanted, 20), SEARCH_MAX_HITS);
		for (;;) {
			let results: SearchResults;
			try {
				results = await this.client.search(text.trim(), { types: ["custom"], limit: ask, signal });
			} catch (error) {
				throwIfAborted(signal);
				throw error;
			}
			for (const hit of results.hits) {
				throwIfAborted(signal);
				const key = `${hit.session}\n${hit.entry}`;
				if (seen.has(key)) continue;
				seen.add(key);
				if (!hit.session.startsWith(`${this.prefix}-`) && !hit.session.startsWith(`${this.prefix}.`)) continue;
				const line = await this.entryLine(hit.session, hit.entry);
				if (line === undefined || (types !== undefined && !types.has(line.type))) continue;
				const sessionId = await this.piSessionId(hit.session);
				if (sessionId === undefined) continue;
				yield { sessionId, entryId: line.id, snippet: hit.snippet, score: hit.score };
				found += 1;
				if (found >= wanted) return;
			}
			// Every match seen, or as many as grove gives at once.
			if (results.hits.length >= results.total || ask >= SEARCH_MAX_HITS) return;
			ask = SEARCH_MAX_HITS;
		}
	}

	/** The entry's line when it is one of pi's entries: its id and type; else (or gone) undefined. */
	private async entryLine(sid: string, eid: string): Promise<{ id: string; type: string } | undefined> {
		let entry: WireEntry;
		try {
			entry = await this.client.getEntry(sid, eid);
		} catch (e) {
			if (e instanceof GroveError && e.code === "not_found") return undefined; // deleted meanwhile
			throw e;
		}
		const line = lineOf(entry);
		if (entry.customType !== `${LANE_LINE}entry` || line === undefined) return undefined;
		return typeof line.id === "string" && typeof line.type === "string" ? { id: line.id, type: line.type } : undefined;
	}

	/** pi's session id of a grove session: its file's header's `id` (its first line). */
	private async piSessionId(sid: string): Promise<string | undefined> {
		if (this.piIds.has(sid)) return this.piIds.get(sid);
		let first: WireEntry | undefined;
		try {
			[first] = await this.client.entries(sid, { limit: 1 });
		} catch (e) {
			if (e instanceof GroveError && e.code === "not_found") return undefined;
			throw e;
		}
		const header = lineOf(first);
		const id = header?.kind === "header" && typeof header.id === "string" ? header.id : undefined;
		this.piIds.set(sid, id);
		return id;
	}
}
