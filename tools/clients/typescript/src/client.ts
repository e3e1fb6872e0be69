/**
 * `GroveClient`: one method per route of docs/api.md, over one keep-alive connection pool.
 *
 * Streamed routes (`application/x-ndjson`) have two faces: `iterX` yields the values as their
 * lines arrive (bounded memory whatever the session's size) and `x` collects them to an array.
 * Every failure is a `GroveError` carrying the server's `code`; nothing is retried.
 */
import { createReadStream } from "node:fs";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { GroveError } from "./errors.js";
import {
	type Endpoint,
	parseEndpoint,
	type Query,
	readAllLines,
	readJson,
	readLines,
	readText,
	Transport,
	type ClientTransport,
} from "./transport.js";
import type {
	AppendIfResult,
	AppendOptions,
	BatchAppend,
	BatchResult,
	Context,
	ContextOptions,
	CreateSessionOptions,
	EntryProof,
	Cursor,
	ExportFlavor,
	ForkOptions,
	GcReport,
	Health,
	ImportResult,
	LeafHistoryItem,
	LeafMove,
	ListSessionsOptions,
	LogCursor,
	NewEntry,
	Operation,
	ReplayEvent,
	ContextChange,
	PathOptions,
	PinState,
	PointInTime,
	RedactOptions,
	Redaction,
	RetentionPlan,
	RetentionPolicy,
	RetentionRun,
	Seal,
	SealCheck,
	SearchOptions,
	SearchResults,
	SessionDetails,
	SessionPage,
	SessionSummary,
	Stats,
	StoreOperation,
	Tree,
	VerifyReport,
	WireEntry,
} from "./types.js";

export interface GroveClientOptions {
	/** `unix:/path/to/socket` or `http://host:port`. */
	url: string;
	/** The bearer token (needed over TCP). */
	token?: string;
	/**
	 * How long to wait for an answer's head, and then between two pieces of its body, in
	 * milliseconds; no limit by default.
	 */
	timeoutMs?: number;
	/** An undici dispatcher (`Pool`, `Agent`) to share instead of the client's own pool. */
	dispatcher?: Dispatcher;
	/**
	 * Who this client is (1 to 64 printable ASCII characters), sent as `Grove-Client`: the
	 * operations its requests make are stamped with it (`operations`). Without it, `server`.
	 */
	name?: string;
}

const V1 = "/v1";

/** The context after a replayed record: `context` (the one before it) with `change` applied. */
export function applyContextChange(context: Context, change: ContextChange): Context {
	if (change.keep > context.messages.length || change.keep + change.append.length !== change.messages) {
		throw new RangeError(`a context change of ${change.keep} kept and ${change.append.length} added messages does not fit a context of ${context.messages.length}`);
	}
	return {
		messages: [...context.messages.slice(0, change.keep), ...change.append],
		model: change.model === undefined ? context.model : change.model,
		thinkingLevel: change.thinkingLevel === undefined ? context.thinkingLevel : change.thinkingLevel,
		activeToolNames: change.activeToolNames === undefined ? context.activeToolNames : change.activeToolNames,
	};
}

function sessionPath(sid: string, rest = ""): string {
	return `${V1}/sessions/${encodeURIComponent(sid)}${rest}`;
}

/** `atOp` / `atTime` of a point in time. */
function atQuery(at: PointInTime | undefined): Query {
	if (at === undefined) return {};
	return "op" in at ? { atOp: at.op } : { atTime: at.time };
}

/** `branch` and `path`'s query: a start entry, or options. */
function pathQuery(from: string | PathOptions | undefined): Query {
	if (typeof from !== "object") return { from };
	return { from: from.from, ...atQuery(from.at) };
}

/** The longest `Grove-Client` name the server takes. */
const MAX_NAME = 64;

/** Throws a `TypeError` for a client name the server would refuse. */
export function checkName(name: string): void {
	if (name.length === 0 || name.length > MAX_NAME || !/^[\x20-\x7e]*$/.test(name)) {
		throw new TypeError(`client name ${JSON.stringify(name)}: 1 to ${MAX_NAME} printable ASCII characters expected`);
	}
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
	const out: T[] = [];
	for await (const item of items) out.push(item);
	return out;
}

export class GroveClient {
	/** What carries this client's requests (HTTP to a server, or a store in this process). */
	readonly transport: ClientTransport;

	/** A client of `grove serve` at `options.url`, or over the given transport (`openStore`). */
	constructor(options: GroveClientOptions | { transport: ClientTransport }) {
		if ("transport" in options) {
			this.transport = options.transport;
			return;
		}
		const name = options.name;
		if (name !== undefined) checkName(name);
		this.transport = new Transport({
			endpoint: parseEndpoint(options.url),
			token: options.token,
			name,
			timeoutMs: options.timeoutMs,
			dispatcher: options.dispatcher,
		});
	}

	/** A client for `GROVE_URL` (and `GROVE_TOKEN`) of the given environment. */
	static fromEnv(env: NodeJS.ProcessEnv = process.env): GroveClient {
		const url = env.GROVE_URL;
		if (!url) throw new TypeError("GROVE_URL is not set (unix:/path/to/socket or http://host:port)");
		return new GroveClient({ url, token: env.GROVE_TOKEN || undefined });
	}

	/** Where this client's server listens (an in-process client has none: `undefined`). */
	get endpoint(): Endpoint | undefined {
		return this.transport instanceof Transport ? this.transport.endpoint : undefined;
	}

	/** Where requests go: `unix:PATH`, `http://HOST:PORT`, or `in-process:DIR` for a store opened in this process. */
	get where(): string {
		return this.transport.where;
	}

	/**
	 * Closes idle connections (requests after this open new ones); a client of a store opened in
	 * this process (`openStore`) flushes and closes the store, and requests after this fail.
	 */
	close(): void {
		this.transport.close();
	}

	/**
	 * A client of the same server or in-process store whose requests name `name`
	 * (`Grove-Client`: its operations are stamped with it; none: the default actor). Closing it
	 * leaves the store open.
	 */
	withName(name: string | undefined): GroveClient {
		if (name !== undefined) checkName(name);
		return new GroveClient({ transport: this.transport.named(name) });
	}

	/** One request whose JSON answer is returned (`undefined` for an empty body, e.g. 204). */
	request<T>(method: string, path: string, options: { query?: Query; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
		// Handed over as it is (no await of our own): a read the store answers on this thread
		// costs one promise, not one per layer.
		if (this.transport.json) return this.transport.json(method, path, options) as Promise<T>;
		return this.requestSent<T>(method, path, options);
	}

	private async requestSent<T>(
		method: string,
		path: string,
		options: { query?: Query; body?: unknown; signal?: AbortSignal },
	): Promise<T> {
		const response = await this.transport.send(method, path, options);
		return (await readJson(method, path, response)) as T;
	}

	/** One request whose JSON-lines answer is yielded value by value. */
	async *stream<T>(method: string, path: string, query?: Query): AsyncGenerator<T, void, undefined> {
		const response = await this.transport.send(method, path, { query });
		yield* readLines(method, path, response) as AsyncGenerator<T, void, undefined>;
	}

	/** One request whose JSON-lines answer is collected whole. */
	async streamAll<T>(method: string, path: string, query?: Query): Promise<T[]> {
		if (this.transport.jsonLines) return (await this.transport.jsonLines(method, path, { query })) as T[];
		const response = await this.transport.send(method, path, { query });
		return (await readAllLines(method, path, response)) as T[];
	}

	// Server

	health(): Promise<Health> {
		return this.request("GET", `${V1}/health`);
	}

	verify(): Promise<VerifyReport> {
		return this.request("POST", `${V1}/verify`);
	}

	/**
	 * Removes the payloads no session references any more, and lists them (`grove gc`). With
	 * `rewrite`, a server of a store in a directory then rewrites its files (no page keeps a
	 * redacted byte), pausing every request meanwhile; `invalid_state` where it cannot.
	 */
	gc(options: { rewrite?: boolean } = {}): Promise<GcReport> {
		return this.request("POST", `${V1}/gc`, options.rewrite ? { query: { rewrite: "true" } } : {});
	}

	// Retention

	/**
	 * What `policy` removes now (`POST /v1/retain`): the sessions that go and those selected but
	 * spared (pinned or labelled), each with its export's bytes, entries, last activity and the
	 * rules that selected it. Nothing is changed. `invalid_argument` for a policy without rules,
	 * a rule without a condition, an age or size that does not read, or an `archive`.
	 */
	retentionPlan(policy: RetentionPolicy): Promise<RetentionPlan> {
		return this.request("POST", `${V1}/retain`, { body: { policy } });
	}

	/**
	 * Applies `policy` now (`POST /v1/retain` with `apply`): deletes the sessions its plan
	 * removes, recorded in the store's operation log (`retentionLog`) before anything is deleted.
	 * The run: the plan's fields, its `op`, the sessions `removed` and those that `failed` (they
	 * stay). Refused as `retentionPlan` refuses, with nothing changed.
	 */
	retain(policy: RetentionPolicy): Promise<RetentionRun> {
		return this.request("POST", `${V1}/retain`, { body: { policy, apply: true } });
	}

	/** The store's operations (retention runs, the server's scheduled ones too), oldest first. */
	async retentionLog(): Promise<StoreOperation[]> {
		const answer = await this.request<{ operations: StoreOperation[] }>("GET", `${V1}/retain/log`);
		return answer.operations;
	}

	/** Pins the session (retention spares it, whatever the policy) or unpins it; `not_found` for an unknown session. */
	setPinned(sid: string, pinned: boolean): Promise<PinState> {
		return this.request("PUT", sessionPath(sid, "/pin"), { body: { pinned } });
	}

	// Search

	/**
	 * The entries of every session whose text matches `query`, best first (`GET /v1/search`):
	 * every word must occur unless the words are joined by `OR`, `"a phrase"` matches the words
	 * in order, `word*` a prefix. Anything appended before the call is found.
	 */
	async search(query: string, options: SearchOptions = {}): Promise<SearchResults> {
		const { signal } = options;
		signal?.throwIfAborted();
		const types = options.types === undefined ? undefined : options.types.join(",");
		const q: Query = { q: query, session: options.session, type: types, since: options.since, limit: options.limit };
		// Over HTTP the signal cuts the request off; in this process it is checked when the answer came.
		const answer = await this.request<SearchResults>("GET", `${V1}/search`, { query: q, signal });
		signal?.throwIfAborted();
		return answer;
	}

	// Sessions

	/**
	 * One page of sessions in id order (`order: "desc"`: from the last, newest first for
	 * grove's UUIDv7 ids); pass `next` as `after` for the following page, in the same order and
	 * with the same filters. The filters (`cwd`, `name`, `label`, `createdAfter`,
	 * `createdBefore`, `updatedAfter`, `updatedBefore`) must all hold; "after" includes its
	 * bound, "before" excludes it, and "updated" is the session's last activity.
	 */
	listSessions(options: ListSessionsOptions = {}): Promise<SessionPage> {
		const { after, limit, order, cwd, name, label, createdAfter, createdBefore, updatedAfter, updatedBefore } = options;
		const query: Query = { after, limit, order, cwd, name, label, createdAfter, createdBefore, updatedAfter, updatedBefore };
		return this.request("GET", `${V1}/sessions`, { query });
	}

	/** Every session, page by page. */
	async *iterSessions(pageSize?: number): AsyncGenerator<SessionSummary, void, undefined> {
		let after: string | undefined;
		for (;;) {
			const page = await this.listSessions({ after, limit: pageSize });
			yield* page.sessions;
			if (page.next === null || page.next === undefined) return;
			after = page.next;
		}
	}

	allSessions(pageSize?: number): Promise<SessionSummary[]> {
		return collect(this.iterSessions(pageSize));
	}

	createSession(options: CreateSessionOptions = {}): Promise<SessionSummary> {
		return this.request("POST", `${V1}/sessions`, { body: options });
	}

	getSession(sid: string): Promise<SessionDetails> {
		return this.request("GET", sessionPath(sid));
	}

	async deleteSession(sid: string): Promise<void> {
		await this.request("DELETE", sessionPath(sid));
	}

	/**
	 * Imports a pi session JSONL file; its header line names the session id. A stream is sent
	 * as it is read, and the server imports it as it arrives (up to its `--max-import`).
	 */
	async importSession(jsonl: string | Uint8Array | Readable): Promise<ImportResult> {
		const path = `${V1}/import`;
		const response = await this.transport.send("POST", path, {
			raw: { data: jsonl, contentType: "application/x-ndjson" },
		});
		return (await readJson("POST", path, response)) as ImportResult;
	}

	/** Imports the pi session JSONL file at `path`, streamed from disk. */
	importFile(path: string): Promise<ImportResult> {
		return this.importSession(createReadStream(path));
	}

	/** The session as a pi JSONL file, one parsed line (header first) at a time. */
	async *iterExport(sid: string, options: { flavor?: ExportFlavor } = {}): AsyncGenerator<unknown, void, undefined> {
		yield* this.stream("GET", sessionPath(sid, "/export"), { flavor: options.flavor });
	}

	/** The session as a pi JSONL file, the text as served. */
	async exportSession(sid: string, options: { flavor?: ExportFlavor } = {}): Promise<string> {
		const path = sessionPath(sid, "/export");
		const response = await this.transport.send("GET", path, { query: { flavor: options.flavor } });
		return readText("GET", path, response);
	}

	forkSession(sid: string, options: ForkOptions = {}): Promise<SessionSummary> {
		return this.request("POST", sessionPath(sid, "/fork"), { body: options });
	}

	// Appending

	/** Appends a child of the leaf, which becomes the leaf. */
	async append(sid: string, entry: NewEntry, options: AppendOptions = {}): Promise<string> {
		const answer = await this.request<{ id: string }>("POST", sessionPath(sid, "/entries"), {
			body: { entry, ...options },
		});
		return answer.id;
	}

	/**
	 * Appends the caller's exact entry (pi's `SessionStorage.appendEntry`). `keepLeaf`: the leaf
	 * stays where it is (one operation, atomically).
	 */
	appendExact(sid: string, entry: WireEntry, options: { keepLeaf?: boolean } = {}): Promise<{ id: string; leaf: string | null }> {
		const query = { keepLeaf: options.keepLeaf === true ? "true" : undefined };
		return this.request("POST", sessionPath(sid, "/entries/exact"), { query, body: entry });
	}

	/** `count` distinct entry ids unused in the session now (pi's `createEntryId` in bulk; nothing reserves them). */
	async freshIds(sid: string, count: number): Promise<string[]> {
		const answer = await this.request<{ ids: string[] }>("POST", sessionPath(sid, "/ids"), { body: { count } });
		return answer.ids;
	}

	/** Appends only if the leaf is still `expectedLeaf`; a moved leaf is a result, not an error. */
	appendIf(sid: string, expectedLeaf: string | null, entry: NewEntry): Promise<AppendIfResult> {
		return this.request("POST", sessionPath(sid, "/entries/if"), { body: { expectedLeaf, entry } });
	}

	/** Appends a chain of entries atomically; returns their ids. */
	async appendMany(sid: string, entries: NewEntry[]): Promise<string[]> {
		const answer = await this.request<{ ids: string[] }>("POST", sessionPath(sid, "/entries/many"), {
			body: { entries },
		});
		return answer.ids;
	}

	/**
	 * Appends to many sessions in one request (`POST /v1/appends`): one result per item, in
	 * order; each item is its own append (one that fails does not stop the others), and all are
	 * acknowledged by one flush. `AppendBatcher` gathers concurrent `append`s into these.
	 */
	async appendBatch(items: BatchAppend[]): Promise<BatchResult[]> {
		const answer = await this.request<{ results: BatchResult[] }>("POST", `${V1}/appends`, {
			body: { appends: items },
		});
		if (!Array.isArray(answer?.results) || answer.results.length !== items.length) {
			throw new GroveError(
				"invalid_response",
				200,
				`POST ${V1}/appends: ${items.length} items sent, the answer has no result for each`,
			);
		}
		return answer.results;
	}

	// Reading

	/** The tree entries in log order (no leaf records). */
	iterEntries(sid: string, cursor: Cursor = {}): AsyncGenerator<WireEntry, void, undefined> {
		return this.stream("GET", sessionPath(sid, "/entries"), { after: cursor.after, limit: cursor.limit });
	}

	entries(sid: string, cursor: Cursor = {}): Promise<WireEntry[]> {
		return this.streamAll("GET", sessionPath(sid, "/entries"), { after: cursor.after, limit: cursor.limit });
	}

	/** Entries and leaf records in log order (pi's `getEntries`, `findEntries` with `type`). */
	iterLog(sid: string, cursor: LogCursor = {}): AsyncGenerator<WireEntry, void, undefined> {
		return this.stream("GET", sessionPath(sid, "/log"), {
			after: cursor.after,
			limit: cursor.limit,
			type: cursor.type,
		});
	}

	log(sid: string, cursor: LogCursor = {}): Promise<WireEntry[]> {
		return this.streamAll("GET", sessionPath(sid, "/log"), {
			after: cursor.after,
			limit: cursor.limit,
			type: cursor.type,
		});
	}

	/** One entry; with `log: true` leaf records too. A missing one is a `not_found` error. */
	getEntry(sid: string, eid: string, options: { log?: boolean } = {}): Promise<WireEntry> {
		return this.request("GET", sessionPath(sid, `/entries/${encodeURIComponent(eid)}`), {
			query: { log: options.log ? "true" : undefined },
		});
	}

	/**
	 * A tree entry with its digest, path digest and its parent's path digest, recomputed and
	 * checked by the server from the stored bytes (`grove show`).
	 */
	proof(sid: string, eid: string): Promise<EntryProof> {
		return this.request("GET", sessionPath(sid, `/entries/${encodeURIComponent(eid)}/proof`));
	}

	/** One entry, or `undefined` when there is none of that id. */
	async findEntry(sid: string, eid: string, options: { log?: boolean } = {}): Promise<WireEntry | undefined> {
		try {
			return await this.getEntry(sid, eid, options);
		} catch (error) {
			if (error instanceof GroveError && error.code === "not_found" && (await this.sessionExists(sid))) {
				return undefined;
			}
			throw error;
		}
	}

	/** Whether the session exists. */
	async sessionExists(sid: string): Promise<boolean> {
		try {
			await this.getSession(sid);
			return true;
		} catch (error) {
			if (error instanceof GroveError && error.code === "not_found") return false;
			throw error;
		}
	}

	/** The children of `parent`, or the roots when it is undefined. */
	iterChildren(sid: string, parent?: string): AsyncGenerator<WireEntry, void, undefined> {
		return this.stream("GET", sessionPath(sid, "/children"), { parent });
	}

	children(sid: string, parent?: string): Promise<WireEntry[]> {
		return this.streamAll("GET", sessionPath(sid, "/children"), { parent });
	}

	/**
	 * pi's `getPathToRootOrCompaction(from)` (default the leaf), root first; with `{ at }`, as
	 * the session stood then.
	 */
	iterBranch(sid: string, from?: string | PathOptions): AsyncGenerator<WireEntry, void, undefined> {
		return this.stream("GET", sessionPath(sid, "/branch"), pathQuery(from));
	}

	branch(sid: string, from?: string | PathOptions): Promise<WireEntry[]> {
		return this.streamAll("GET", sessionPath(sid, "/branch"), pathQuery(from));
	}

	/** The full path from `from` (default the leaf) to the root, root first; with `{ at }`, as the session stood then. */
	iterPath(sid: string, from?: string | PathOptions): AsyncGenerator<WireEntry, void, undefined> {
		return this.stream("GET", sessionPath(sid, "/path"), pathQuery(from));
	}

	path(sid: string, from?: string | PathOptions): Promise<WireEntry[]> {
		return this.streamAll("GET", sessionPath(sid, "/path"), pathQuery(from));
	}

	/** pi's context of the session (of `leaf` when given, or as it stood `at`), by a preset's rules. */
	context(sid: string, options: ContextOptions = {}): Promise<Context> {
		return this.request("GET", sessionPath(sid, "/context"), {
			query: { preset: options.preset, leaf: options.leaf, ...atQuery(options.at) },
		});
	}

	/** The session's tree; with `at`, its entries, labels and active path then. */
	tree(sid: string, options: { at?: PointInTime } = {}): Promise<Tree> {
		return this.request("GET", sessionPath(sid, "/tree"), { query: atQuery(options.at) });
	}

	/** Every label by its target id. */
	labels(sid: string): Promise<Record<string, string>> {
		return this.request("GET", sessionPath(sid, "/labels"));
	}

	async label(sid: string, eid: string): Promise<string | null> {
		const answer = await this.request<{ label: string | null }>(
			"GET",
			sessionPath(sid, `/labels/${encodeURIComponent(eid)}`),
		);
		return answer.label;
	}

	/** Appends a label entry (null clears the label); returns its id. */
	async setLabel(sid: string, targetId: string, label: string | null): Promise<string> {
		const answer = await this.request<{ id: string }>("POST", sessionPath(sid, "/labels"), {
			body: { targetId, label },
		});
		return answer.id;
	}

	async name(sid: string): Promise<string | null> {
		const answer = await this.request<{ name: string | null }>("GET", sessionPath(sid, "/name"));
		return answer.name;
	}

	/** Appends a session_info entry; returns its id. */
	async setName(sid: string, name: string): Promise<string> {
		const answer = await this.request<{ id: string }>("PUT", sessionPath(sid, "/name"), { body: { name } });
		return answer.id;
	}

	stats(sid: string): Promise<Stats> {
		return this.request("GET", sessionPath(sid, "/stats"));
	}

	// The leaf

	async leaf(sid: string): Promise<string | null> {
		const answer = await this.request<{ leaf: string | null }>("GET", sessionPath(sid, "/leaf"));
		return answer.leaf;
	}

	/** Moves the leaf (null: before the first entry) and records the move (pi's `setLeafId`). */
	setLeaf(sid: string, target: string | null): Promise<LeafMove> {
		return this.request("PUT", sessionPath(sid, "/leaf"), { body: { target } });
	}

	leafHistory(sid: string): Promise<LeafHistoryItem[]> {
		return this.request("GET", sessionPath(sid, "/leaf/history"));
	}

	// Operations

	/** The session's operations, newest first (at most `limit`). */
	async operations(sid: string, options: { limit?: number } = {}): Promise<Operation[]> {
		const answer = await this.request<{ operations: Operation[] }>("GET", sessionPath(sid, "/operations"), {
			query: { limit: options.limit },
		});
		return answer.operations;
	}

	/**
	 * Puts the leaf back where it was before the last operation (or before operation `toOp`),
	 * recorded as an `undo` operation, which is returned; nothing is removed. `busy` while
	 * another client holds the session's turn.
	 */
	undo(sid: string, options: { toOp?: number } = {}): Promise<Operation> {
		const body = options.toOp === undefined ? {} : { toOp: options.toOp };
		return this.request("POST", sessionPath(sid, "/undo"), { body });
	}

	/**
	 * Redacts the value at `path` (a JSON pointer such as `/message/content/0/text`) of entry
	 * `entryId`, or without `path` its whole content: it reads as `"[redacted]"` from then on in
	 * every read, and its bytes leave the log. Recorded as an operation of kind `redact` (the leaf
	 * stays where it is); seals taken before still hold. `invalid_argument` for an empty reason,
	 * a path that is not a JSON pointer, names no value or names what the tree reads (`/id`,
	 * `/message/role`, …), an entry with nothing to redact or a value already redacted;
	 * `not_found` for an unknown entry.
	 */
	redact(sid: string, entryId: string, options: RedactOptions): Promise<Redaction> {
		const { path, reason } = options;
		const body = path === undefined ? { entryId, reason } : { entryId, path, reason };
		return this.request("POST", sessionPath(sid, "/redact"), { body });
	}

	/** The session's redactions, oldest first. */
	async redactions(sid: string): Promise<Redaction[]> {
		const answer = await this.request<{ redactions: Redaction[] }>("GET", sessionPath(sid, "/redactions"));
		return answer.redactions;
	}

	/**
	 * The session's history in order (`grove replay`): a `start` event (the session before
	 * `fromOp`), then every operation and its records, each record with the change it made to
	 * the context. With `follow`, new operations as they are committed, until `untilOp`, the
	 * loop is left, or the server stops; a client with `timeoutMs` ends an idle follow with an
	 * error after that long.
	 */
	replay(
		sid: string,
		options: { fromOp?: number; untilOp?: number; follow?: boolean } = {},
	): AsyncGenerator<ReplayEvent, void, undefined> {
		return this.stream("GET", sessionPath(sid, "/replay"), {
			fromOp: options.fromOp,
			untilOp: options.untilOp,
			follow: options.follow ? true : undefined,
		});
	}

	/** The session's seal: a digest of its history so far. */
	seal(sid: string): Promise<Seal> {
		return this.request("GET", sessionPath(sid, "/seal"));
	}

	/** Whether the session's history still extends the seal `digest` (only appended to since). */
	checkSeal(sid: string, digest: string): Promise<SealCheck> {
		return this.request("POST", sessionPath(sid, "/seal/check"), { body: { digest } });
	}
}
