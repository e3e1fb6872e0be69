/**
 * pi's commit-based session storage (pi-agent-core 0.85 to 0.99: `Storage`, `SessionRepo`) on
 * grove: `GroveStorage` is one pi session's `Storage`, `GrovePiSessionRepo` its `SessionRepo`,
 * whose sessions are pi's own `StorageBackedSession`. docs/pi.md, "0.85–0.99 on grove", is the
 * mapping.
 *
 * pi 0.83's adapter (`./pi.js`) and this one serve two versions of the same npm package, which a
 * project has only one of; so this module imports nothing of pi. Its types are the contract's
 * shapes, restated, and what it needs of pi's code at run time (the session class, the fork
 * policy, the commit checks) comes in a `PiKit`: the caller's `import * as pi from
 * "@earendil-works/pi-agent-core"` of 0.85 or later is one.
 *
 * The mapping: a pi session is a grove session (`PREFIX-ID`), its metadata in the header. Each
 * commit is one grove entry (`custom`, `customType` `pi.commit`, id `c` + its first seq, `data`
 * `{writes}`: the committed writes as pi's JSONL format 4 writes them), appended as a child of the
 * commit before it only if that is still the session's leaf (`POST .../entries/if`): a commit is
 * atomic, and a second writer is refused, never merged. Opening a session reads its commits once
 * and keeps pi's state in memory, as pi's own JSONL storage does; every read is answered from it.
 */
import type { GroveClient } from "./client.js";
import { GroveError } from "./errors.js";
import type { WireEntry } from "./types.js";

// The contract's shapes (pi-agent-core 0.99.1, dist/harness/session/types.d.ts and values.d.ts).

export type EntryType = "message" | "compaction" | "branch_summary" | "custom";

/** A JSON value (pi's `JsonValue`). */
export type PiJson = null | boolean | number | string | PiJson[] | { [key: string]: PiJson };

/** A committed entry: pi's `Entry` (its other fields pass through). */
export interface PiEntry {
	id: string;
	parentId: string | null;
	seq: number;
	timestamp: number;
	type: EntryType;
	customType?: string;
	[field: string]: unknown;
}

export interface PiUsage {
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
	cacheWrite1h?: number;
	reasoning?: number;
	totalTokens: number;
	cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}

export interface PiUsageRow {
	id: string;
	seq: number;
	usage: PiUsage;
	entryId?: string;
	adjustment: boolean;
	details?: PiJson;
}

export interface PiAddress {
	readonly namespace: string;
	readonly key: string;
	readonly kind: "value" | "list";
}

/** A scalar value's address (pi's `Value<T>`). */
export interface PiValueAddress extends PiAddress {
	readonly kind: "value";
}

/** A list's address (pi's `ValueList<T>`). */
export interface PiListAddress extends PiAddress {
	readonly kind: "list";
}

export interface PiStoredValue<T = unknown> {
	address: PiValueAddress;
	value: T;
	seq: number;
}

export interface PiListElement<T = unknown> {
	seq: number;
	value: T;
}

export interface PiListReadOptions {
	cursor?: { seq: number };
	order?: "asc" | "desc";
	limit?: number;
}

/** A write as the caller hands it to `commit`. */
export type PiWrite =
	| { kind: "entry"; entry: Omit<PiEntry, "seq" | "timestamp"> }
	| { kind: "usage"; row: Omit<PiUsageRow, "seq"> }
	| { kind: "value"; op: "set"; namespace: string; key: string; value: unknown }
	| { kind: "value"; op: "delete"; namespace: string; key: string }
	| { kind: "list"; op: "append"; namespace: string; key: string; value: unknown }
	| { kind: "list"; op: "delete"; namespace: string; key: string };

/** A write as committed (pi's format-4 line): the entry or row flattened, with its seq. */
export type PiCommittedWrite =
	| ({ kind: "entry" } & PiEntry)
	| ({ kind: "usage" } & PiUsageRow)
	| { kind: "value"; op: "set" | "delete"; seq: number; namespace: string; key: string; value?: unknown }
	| { kind: "list"; op: "append" | "delete"; seq: number; namespace: string; key: string; value?: unknown };

export interface PiStats {
	messageCount: number;
	usage: PiUsage;
}

export interface PiCommitResult {
	firstSeq: number;
	seqs: number[];
	timestamp: number;
	stats: PiStats;
}

export interface PiBranchScan {
	start: string;
	stopAtType?: EntryType;
	stopAtId?: string;
	type?: EntryType;
	customType?: string;
	order?: "newestFirst" | "oldestFirst";
	limit?: number;
	cursor?: { seq: number };
}

export interface PiEntryScan {
	type?: EntryType;
	customType?: string;
	fromSeq?: number;
	toSeq?: number;
	order?: "asc" | "desc";
	limit?: number;
}

export interface PiUsageScan {
	fromSeq?: number;
	toSeq?: number;
	order?: "asc" | "desc";
	limit?: number;
}

export interface PiSessionMetadata {
	id: string;
	createdAt: number;
	storageVersion: number;
	cwd?: string;
	parentSessionId?: string;
	legacyParentSessionPath?: string;
}

export type PiForkOptions =
	| { scope: "branch"; branch: string; entryId?: string; position?: "before" | "at"; id?: string }
	| { scope: "tree"; id?: string };

/** What pi's own code provides: `import * as pi from "@earendil-works/pi-agent-core"` (0.85+). */
export interface PiKit<TSession = unknown> {
	StorageBackedSession: new (metadata: never, storage: never, options?: { onClose?: () => void }) => TSession;
	branchTip(branch: string): PiAddress;
	laneConfig(lane: string): PiAddress;
	laneState(lane: string): PiAddress;
	projectForkCurrentStateWrite(write: never, plan: never, isEntryCopied: (entryId: string) => boolean): unknown;
	prepareStorageCommit(writes: never[], firstSeq: number, timestamp: number): { writes: unknown[]; result: unknown };
	validateCommittedWrites(
		writes: never[],
		firstSeq: number,
		state: { hasEntryOrUsageId(id: string): boolean; hasEntryId(id: string): boolean },
	): void;
	resolveListReadOptions(options?: never): { cursor?: { seq: number }; order: "asc" | "desc"; limit: number };
	uuidv7(timestampMs?: number): string;
}

/** The `customType` of a commit's entry. */
export const COMMIT = "pi.commit";
/** The header metadata field holding pi's session metadata. */
const FIELD = "piSession";
/** The storage version this adapter writes (pi's `storageVersion`). */
export const STORAGE_VERSION = 1;

// The state of one session, as its commits leave it.

function emptyUsage(): PiUsage {
	return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
}

function addUsage(a: PiUsage, b: PiUsage): PiUsage {
	const sum: PiUsage = {
		input: a.input + b.input,
		output: a.output + b.output,
		cacheRead: a.cacheRead + b.cacheRead,
		cacheWrite: a.cacheWrite + b.cacheWrite,
		totalTokens: a.totalTokens + b.totalTokens,
		cost: {
			input: a.cost.input + b.cost.input,
			output: a.cost.output + b.cost.output,
			cacheRead: a.cost.cacheRead + b.cost.cacheRead,
			cacheWrite: a.cost.cacheWrite + b.cost.cacheWrite,
			total: a.cost.total + b.cost.total,
		},
	};
	if (a.cacheWrite1h !== undefined || b.cacheWrite1h !== undefined) sum.cacheWrite1h = (a.cacheWrite1h ?? 0) + (b.cacheWrite1h ?? 0);
	if (a.reasoning !== undefined || b.reasoning !== undefined) sum.reasoning = (a.reasoning ?? 0) + (b.reasoning ?? 0);
	return sum;
}

/** A key's order: by code points, as pi orders scanned values. */
function byCodePoints(a: string, b: string): number {
	const left = Array.from(a);
	const right = Array.from(b);
	for (let i = 0; i < Math.min(left.length, right.length); i++) {
		const d = (left[i]!.codePointAt(0) ?? 0) - (right[i]!.codePointAt(0) ?? 0);
		if (d !== 0) return d;
	}
	return left.length - right.length;
}

function slot(namespace: string, key: string): string {
	return `${namespace}\u0000${key}`;
}

/** Everything a session's commits say, in memory. */
class Ledger {
	readonly entries = new Map<string, PiEntry>();
	readonly bySeq: PiEntry[] = [];
	readonly values = new Map<string, PiStoredValue>();
	readonly lists = new Map<string, { address: PiListAddress; elements: PiListElement[] }>();
	readonly usage = new Map<string, PiUsageRow>();
	stats: PiStats = { messageCount: 0, usage: emptyUsage() };
	nextSeq = 1;

	/** Applies committed writes (already checked). */
	apply(writes: readonly PiCommittedWrite[]): void {
		for (const write of writes) {
			switch (write.kind) {
				case "entry": {
					const { kind: _kind, ...entry } = write;
					this.entries.set(entry.id, entry);
					this.bySeq.push(entry);
					if (entry.type === "message") this.stats = { ...this.stats, messageCount: this.stats.messageCount + 1 };
					break;
				}
				case "usage": {
					const { kind: _kind, ...row } = write;
					this.usage.set(row.id, row);
					this.stats = { ...this.stats, usage: addUsage(this.stats.usage, row.usage) };
					break;
				}
				case "value":
					if (write.op === "delete") this.values.delete(slot(write.namespace, write.key));
					else this.values.set(slot(write.namespace, write.key), { address: { namespace: write.namespace, key: write.key, kind: "value" }, value: write.value, seq: write.seq });
					break;
				case "list": {
					const at = slot(write.namespace, write.key);
					if (write.op === "delete") this.lists.delete(at);
					else {
						const element = { seq: write.seq, value: write.value };
						const stored = this.lists.get(at);
						if (stored) stored.elements.push(element);
						else this.lists.set(at, { address: { namespace: write.namespace, key: write.key, kind: "list" }, elements: [element] });
					}
					break;
				}
			}
			this.nextSeq = Math.max(this.nextSeq, write.seq + 1);
		}
	}

	scanBranch(query: PiBranchScan): PiEntry[] {
		let entry = this.entries.get(query.start);
		if (entry === undefined) throw new Error(`Unknown branch start: ${query.start}`);
		const path: PiEntry[] = [];
		while (entry !== undefined) {
			path.push(entry);
			if (entry.parentId === null) break;
			const parent: PiEntry | undefined = this.entries.get(entry.parentId);
			if (parent === undefined) throw new Error(`Corrupt branch: entry ${entry.id} has a missing parent ${entry.parentId}`);
			entry = parent;
		}
		const oldestFirst = query.order === "oldestFirst";
		if (oldestFirst) path.reverse();
		const found: PiEntry[] = [];
		const limit = query.limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, query.limit);
		for (const candidate of path) {
			const stop = candidate.id === query.stopAtId || candidate.type === query.stopAtType;
			const kept =
				(query.type === undefined || candidate.type === query.type) &&
				(query.customType === undefined || candidate.customType === query.customType) &&
				(query.cursor === undefined || (oldestFirst ? candidate.seq > query.cursor.seq : candidate.seq < query.cursor.seq));
			if (kept && found.length < limit) found.push(candidate);
			if (stop) break;
		}
		return found;
	}

	scanEntries(query: PiEntryScan): PiEntry[] {
		const limit = query.limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.trunc(query.limit));
		const ordered = query.order === "desc" ? [...this.bySeq].reverse() : this.bySeq;
		const found: PiEntry[] = [];
		for (const entry of ordered) {
			if (found.length >= limit) break;
			if (query.type !== undefined && entry.type !== query.type) continue;
			if (query.customType !== undefined && entry.customType !== query.customType) continue;
			if (query.fromSeq !== undefined && entry.seq < query.fromSeq) continue;
			if (query.toSeq !== undefined && entry.seq > query.toSeq) continue;
			found.push(entry);
		}
		return found;
	}

	scanUsage(query: PiUsageScan): PiUsageRow[] {
		const rows = [...this.usage.values()]
			.filter((row) => (query.fromSeq === undefined || row.seq >= query.fromSeq) && (query.toSeq === undefined || row.seq <= query.toSeq))
			.sort((a, b) => (query.order === "desc" ? b.seq - a.seq : a.seq - b.seq));
		return query.limit === undefined ? rows : rows.slice(0, Math.max(0, query.limit));
	}
}

/** JSON's copy of a value: what a reopened session reads back. */
function copy<T>(value: T): T {
	return JSON.parse(JSON.stringify(value)) as T;
}

/** Reads a session's commits into a ledger; also the id of its last commit (the leaf). */
async function readLedger(client: GroveClient, sid: string): Promise<{ ledger: Ledger; leaf: string | null }> {
	const ledger = new Ledger();
	for await (const entry of client.iterLog(sid, { type: "custom" })) {
		if (entry.customType !== COMMIT) continue;
		const data = entry.data as { writes?: PiCommittedWrite[]; nextSeq?: number } | undefined;
		if (!Array.isArray(data?.writes)) throw new GroveError("invalid_entry", 0, `session ${sid}, commit ${entry.id}: no writes`);
		ledger.apply(data.writes);
		if (typeof data.nextSeq === "number") ledger.nextSeq = Math.max(ledger.nextSeq, data.nextSeq);
	}
	return { ledger, leaf: await client.leaf(sid) };
}

/**
 * pi's `Storage` of one grove session. Commits run one at a time, in call order; reads answer
 * from memory. Only one `GroveStorage` may write a session: a commit made meanwhile by another is
 * found (the session's leaf moved) and this commit is refused.
 */
export class GroveStorage<E extends { id: string; seq: number } = PiEntry> {
	readonly client: GroveClient;
	/** The grove session. */
	readonly sessionId: string;
	private readonly kit: PiKit;
	private readonly ledger: Ledger;
	private leaf: string | null;
	private queue: Promise<unknown> = Promise.resolve();
	private state: "open" | "closing" | "closed" = "open";
	private closing: Promise<void> | undefined;

	private constructor(client: GroveClient, sessionId: string, kit: PiKit, ledger: Ledger, leaf: string | null) {
		this.client = client;
		this.sessionId = sessionId;
		this.kit = kit;
		this.ledger = ledger;
		this.leaf = leaf;
	}

	/** The storage of an existing grove session, its commits read. */
	static async open<E extends { id: string; seq: number } = PiEntry>(client: GroveClient, sessionId: string, kit: PiKit): Promise<GroveStorage<E>> {
		const { ledger, leaf } = await readLedger(client, sessionId);
		return new GroveStorage<E>(client, sessionId, kit, ledger, leaf);
	}

	async commit(writes: PiWrite[], _context?: unknown): Promise<PiCommitResult> {
		this.assertOpen();
		const done = this.queue.then(() => this.commitNow(writes));
		this.queue = done.catch(() => undefined);
		return done;
	}

	private async commitNow(writes: PiWrite[]): Promise<PiCommitResult> {
		const ledger = this.ledger;
		const prepared = this.kit.prepareStorageCommit(writes as never[], ledger.nextSeq, Date.now()) as {
			writes: PiCommittedWrite[];
			result: Omit<PiCommitResult, "stats">;
		};
		this.kit.validateCommittedWrites(prepared.writes as never[], ledger.nextSeq, {
			hasEntryOrUsageId: (id) => ledger.entries.has(id) || ledger.usage.has(id),
			hasEntryId: (id) => ledger.entries.has(id),
		});
		if (prepared.writes.length > 0) {
			const committed = copy(prepared.writes);
			const id = `c${prepared.result.firstSeq}`;
			const outcome = await this.client.appendIf(this.sessionId, this.leaf, { type: "custom", customType: COMMIT, id, data: { writes: committed } });
			if (!outcome.appended) {
				throw new GroveError("conflict", 0, `session ${this.sessionId}: another writer committed to it (its leaf is ${outcome.leaf}); reopen it`);
			}
			this.leaf = id;
			ledger.apply(committed);
		}
		return { ...prepared.result, stats: ledger.stats };
	}

	async getEntries(ids: string[], _context?: unknown): Promise<Map<string, E>> {
		this.assertOpen();
		const found = new Map<string, E>();
		for (const id of ids) {
			const entry = this.ledger.entries.get(id);
			if (entry !== undefined) found.set(id, entry as unknown as E);
		}
		return found;
	}

	async getValue<T>(address: PiValueAddress, _context?: unknown): Promise<PiStoredValue<T> | undefined> {
		this.assertOpen();
		return this.ledger.values.get(slot(address.namespace, address.key)) as PiStoredValue<T> | undefined;
	}

	async scanValues<T>(prefix: PiValueAddress, _context?: unknown): Promise<PiStoredValue<T>[]> {
		this.assertOpen();
		return [...this.ledger.values.values()]
			.filter((stored) => stored.address.namespace === prefix.namespace && stored.address.key.startsWith(prefix.key))
			.sort((a, b) => byCodePoints(a.address.key, b.address.key)) as PiStoredValue<T>[];
	}

	async readList<T>(address: PiListAddress, options: PiListReadOptions | undefined, _context?: unknown): Promise<PiListElement<T>[]> {
		this.assertOpen();
		const resolved = this.kit.resolveListReadOptions(options as never);
		const elements = this.ledger.lists.get(slot(address.namespace, address.key))?.elements ?? [];
		const asc = resolved.order === "asc";
		const cursor = resolved.cursor;
		const after = cursor === undefined ? elements : elements.filter((e) => (asc ? e.seq > cursor.seq : e.seq < cursor.seq));
		return (asc ? after : [...after].reverse()).slice(0, resolved.limit) as PiListElement<T>[];
	}

	async scanBranch(query: PiBranchScan, _context?: unknown): Promise<E[]> {
		this.assertOpen();
		return this.ledger.scanBranch(query) as unknown as E[];
	}

	async scanBranchStructure(query: PiBranchScan, _context?: unknown): Promise<Pick<PiEntry, "id" | "parentId" | "seq" | "timestamp" | "type" | "customType">[]> {
		this.assertOpen();
		return this.ledger.scanBranch(query).map(({ id, parentId, seq, timestamp, type, customType }) => ({
			id,
			parentId,
			seq,
			timestamp,
			type,
			...(customType === undefined ? {} : { customType }),
		}));
	}

	async scanEntries(query: PiEntryScan, _context?: unknown): Promise<E[]> {
		this.assertOpen();
		return this.ledger.scanEntries(query) as unknown as E[];
	}

	async scanUsage(query: PiUsageScan, _context?: unknown): Promise<PiUsageRow[]> {
		this.assertOpen();
		return this.ledger.scanUsage(query);
	}

	async getStats(_context?: unknown): Promise<PiStats> {
		this.assertOpen();
		return this.ledger.stats;
	}

	/** Waits for the commits in flight, then refuses every call. */
	close(_context?: unknown): Promise<void> {
		if (this.closing === undefined) {
			this.state = "closing";
			this.closing = this.queue.then(() => {
				this.state = "closed";
			});
		}
		return this.closing;
	}

	/**
	 * `read` of the state once the commits in flight are done, before any later one (one boundary
	 * between commits: what a fork copies).
	 */
	snapshot<T>(read: (ledger: Ledger) => T): Promise<T> {
		const taken = this.queue.then(() => read(this.ledger));
		this.queue = taken.catch(() => undefined);
		return taken;
	}

	private assertOpen(): void {
		if (this.state !== "open") throw new GroveError("closed", 0, `pi session storage ${this.sessionId} is closed`);
	}
}

export interface GrovePiSessionRepoOptions {
	/** Begins every grove session id of this repo (letters and digits; default `pi`). */
	prefix?: string;
	/** The working directory kept in new sessions' metadata and header. */
	cwd?: string;
}

const SAFE_ID = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

/**
 * pi's `SessionRepo` on grove: sessions are pi's own `StorageBackedSession` (from the kit) on a
 * `GroveStorage`. A session is open at most once per repo; opening it again before it closes is
 * refused, as pi's repos refuse it.
 */
export class GrovePiSessionRepo<TSession extends { close(context?: unknown): Promise<void> } = { close(context?: unknown): Promise<void> }> {
	readonly client: GroveClient;
	readonly prefix: string;
	private readonly kit: PiKit<TSession>;
	private readonly cwd: string | undefined;
	/** Ids being made (by create or fork), reserved at once. */
	private readonly reserved = new Set<string>();
	/** The storages of the sessions open here, by pi id. */
	private readonly open_ = new Map<string, { storage: GroveStorage<PiEntry>; session: TSession }>();
	private closed = false;

	constructor(client: GroveClient, kit: PiKit<TSession>, options: GrovePiSessionRepoOptions = {}) {
		const prefix = options.prefix ?? "pi";
		if (!/^[A-Za-z0-9]+$/.test(prefix)) throw new Error(`prefix ${JSON.stringify(prefix)}: letters and digits only`);
		this.client = client;
		this.kit = kit;
		this.prefix = prefix;
		this.cwd = options.cwd;
	}

	/** The grove session of a pi session id: `PREFIX-ID`, or `PREFIX.` + its hex when the id has other characters. */
	sessionIdOf(id: string): string {
		return SAFE_ID.test(id) ? `${this.prefix}-${id}` : `${this.prefix}.${Buffer.from(id, "utf8").toString("hex")}`;
	}

	async create(options: { id?: string; parentSessionId?: string }, _context?: unknown): Promise<TSession> {
		this.assertOpen();
		const createdAt = Date.now();
		const id = options.id ?? this.kit.uuidv7(createdAt);
		this.reserve(id);
		try {
			const metadata: PiSessionMetadata = {
				id,
				createdAt,
				storageVersion: STORAGE_VERSION,
				...(this.cwd === undefined ? {} : { cwd: this.cwd }),
				...(options.parentSessionId === undefined ? {} : { parentSessionId: options.parentSessionId }),
			};
			const sid = await this.make(metadata);
			return this.attach(metadata, await GroveStorage.open(this.client, sid, this.kit as PiKit));
		} finally {
			this.reserved.delete(id);
		}
	}

	async open(metadata: PiSessionMetadata, _context?: unknown): Promise<TSession> {
		this.assertOpen();
		if (this.open_.has(metadata.id) || this.reserved.has(metadata.id)) throw new Error(`Session is already open: ${metadata.id}`);
		this.reserved.add(metadata.id);
		try {
			const sid = this.sessionIdOf(metadata.id);
			const stored = await this.metadataOf(sid);
			if (stored === undefined) throw new Error(`Unknown session: ${metadata.id}`);
			return this.attach(stored, await GroveStorage.open(this.client, sid, this.kit as PiKit));
		} finally {
			this.reserved.delete(metadata.id);
		}
	}

	async list(_options?: unknown, _context?: unknown): Promise<PiSessionMetadata[]> {
		this.assertOpen();
		const found: PiSessionMetadata[] = [];
		let after: string | null = this.prefix;
		while (after !== null) {
			const page = await this.client.listSessions({ after, limit: 1000 });
			for (const summary of page.sessions) {
				if (!summary.id.startsWith(`${this.prefix}-`) && !summary.id.startsWith(`${this.prefix}.`)) {
					if (summary.id > `${this.prefix}.`) return found;
					continue;
				}
				const metadata = await this.metadataOf(summary.id);
				if (metadata !== undefined) found.push(metadata);
			}
			after = page.next;
		}
		return found;
	}

	async delete(metadata: PiSessionMetadata, _context?: unknown): Promise<void> {
		this.assertOpen();
		if (this.open_.has(metadata.id)) throw new Error(`Session is open: ${metadata.id}`);
		const sid = this.sessionIdOf(metadata.id);
		if ((await this.metadataOf(sid)) === undefined) throw new Error(`Unknown session: ${metadata.id}`);
		await this.client.deleteSession(sid);
	}

	async fork(source: PiSessionMetadata, options: PiForkOptions, _context?: unknown): Promise<TSession> {
		this.assertOpen();
		const createdAt = Date.now();
		const id = options.id ?? this.kit.uuidv7(createdAt);
		this.reserve(id);
		try {
			// The source's state at one boundary between its commits: from its open storage (after
			// the commits in flight), else as stored.
			const live = this.open_.get(source.id);
			let fork: { writes: PiCommittedWrite[]; nextSeq: number };
			const copyOf = (ledger: Ledger) => ({ writes: this.forkWrites(ledger, options), nextSeq: ledger.nextSeq });
			if (live) fork = await live.storage.snapshot(copyOf);
			else {
				const stored = await readLedger(this.client, this.sessionIdOf(source.id)).catch((error: unknown) => {
					if (error instanceof GroveError && error.code === "not_found") throw new Error(`Unknown session: ${source.id}`);
					throw error;
				});
				fork = copyOf(stored.ledger);
			}
			const metadata: PiSessionMetadata = {
				id,
				createdAt,
				storageVersion: STORAGE_VERSION,
				...(this.cwd === undefined ? {} : { cwd: this.cwd }),
				parentSessionId: source.id,
			};
			const sid = await this.make(metadata, fork);
			return this.attach(metadata, await GroveStorage.open(this.client, sid, this.kit as PiKit));
		} finally {
			this.reserved.delete(id);
		}
	}

	/** Closes every session open here. */
	async close(context?: unknown): Promise<void> {
		this.closed = true;
		await Promise.all([...this.open_.values()].map(({ session }) => session.close(context)));
	}

	/**
	 * The destination's writes of a fork: the entries it copies (the whole tree, or the source
	 * branch's path from the root to the fork point) with their seqs, and the values and list
	 * elements pi's fork policy (`projectForkCurrentStateWrite`) keeps of the source's, with theirs.
	 */
	private forkWrites(ledger: Ledger, options: PiForkOptions): PiCommittedWrite[] {
		const kit = this.kit;
		let copied: (entryId: string) => boolean = () => true;
		let plan: unknown = { scope: "tree" };
		if (options.scope === "branch") {
			const at = (address: PiAddress) => slot(address.namespace, address.key);
			const tip = ledger.values.get(at(kit.branchTip(options.branch)));
			if (tip === undefined) throw new Error(`Unknown source branch: ${options.branch}`);
			const requested = options.entryId ?? (tip.value as string | null);
			const ids = new Set<string>();
			let found = requested === null;
			let destinationTip: string | null = null;
			for (let id = tip.value as string | null; id !== null; ) {
				const entry = ledger.entries.get(id);
				if (entry === undefined) throw new Error(`Corrupt source branch: missing entry ${id}`);
				if (id === requested) {
					found = true;
					destinationTip = options.position === "before" ? entry.parentId : id;
					if (options.position !== "before") ids.add(id);
				} else if (found) ids.add(id);
				id = entry.parentId;
			}
			if (!found) throw new Error(`Fork entry ${requested} is not on source branch ${JSON.stringify(options.branch)}`);
			if (!ledger.values.has(at(kit.laneConfig(options.branch))) || !ledger.values.has(at(kit.laneState(options.branch)))) {
				throw new Error(`Source branch ${JSON.stringify(options.branch)} is not a configured AgentLane`);
			}
			copied = (entryId) => ids.has(entryId);
			plan = { scope: "branch", branch: options.branch, destinationTip };
		}
		const writes: PiCommittedWrite[] = [];
		for (const entry of ledger.bySeq) if (copied(entry.id)) writes.push({ kind: "entry", ...entry });
		const project = (write: PiCommittedWrite) => {
			const kept = kit.projectForkCurrentStateWrite(write as never, plan as never, copied);
			if (kept !== undefined) writes.push(kept as PiCommittedWrite);
		};
		for (const stored of ledger.values.values()) {
			project({ kind: "value", op: "set", seq: stored.seq, namespace: stored.address.namespace, key: stored.address.key, value: stored.value });
		}
		for (const stored of ledger.lists.values()) {
			for (const element of stored.elements) {
				project({ kind: "list", op: "append", seq: element.seq, namespace: stored.address.namespace, key: stored.address.key, value: element.value });
			}
		}
		return copy(writes.sort((a, b) => a.seq - b.seq));
	}

	/**
	 * Makes the grove session of `metadata`, with a fork's state as its first commit (its writes
	 * keep the source's seqs; `nextSeq` is the source's, so that cursors taken there go on here).
	 */
	private async make(metadata: PiSessionMetadata, fork?: { writes: PiCommittedWrite[]; nextSeq: number }): Promise<string> {
		const sid = this.sessionIdOf(metadata.id);
		try {
			await this.client.createSession({ id: sid, cwd: this.cwd, metadata: { [FIELD]: metadata } });
		} catch (error) {
			if (error instanceof GroveError && error.code === "invalid_argument" && (await this.client.sessionExists(sid))) {
				throw new Error(`Session already exists: ${metadata.id}`);
			}
			throw error;
		}
		if (fork !== undefined) {
			await this.client.appendIf(sid, null, { type: "custom", customType: COMMIT, id: "c0", data: fork });
		}
		return sid;
	}

	private attach(metadata: PiSessionMetadata, storage: GroveStorage<PiEntry>): TSession {
		const record = { storage, session: undefined as unknown as TSession };
		const Session = this.kit.StorageBackedSession as unknown as new (
			metadata: PiSessionMetadata,
			storage: GroveStorage<PiEntry>,
			options: { onClose: () => void },
		) => TSession;
		record.session = new Session(metadata, storage, {
			onClose: () => {
				if (this.open_.get(metadata.id) === record) this.open_.delete(metadata.id);
			},
		});
		this.open_.set(metadata.id, record);
		return record.session;
	}

	private async metadataOf(sid: string): Promise<PiSessionMetadata | undefined> {
		try {
			const details = await this.client.getSession(sid);
			const metadata = (details.metadata as Record<string, unknown> | null)?.[FIELD];
			return typeof metadata === "object" && metadata !== null ? (metadata as PiSessionMetadata) : undefined;
		} catch (error) {
			if (error instanceof GroveError && error.code === "not_found") return undefined;
			throw error;
		}
	}

	private reserve(id: string): void {
		if (this.open_.has(id) || this.reserved.has(id)) throw new Error(`Session already exists: ${id}`);
		this.reserved.add(id);
	}

	private assertOpen(): void {
		if (this.closed) throw new Error("GrovePiSessionRepo is closed");
	}
}

export type { WireEntry };
