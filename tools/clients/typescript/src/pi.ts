/**
 * The pi adapter: `GroveSessionStorage` is pi v0.83.0's harness `SessionStorage` on one grove
 * session, `GroveSessionRepo` its `SessionRepo`. pi's `Session` and `AgentHarness` run on them
 * unchanged. `GroveSessionSearch` is pi 0.84's `SessionSearch` over these sessions, by grove's
 * index (`GET /v1/search`).
 *
 * What callers may rely on:
 * - Every read and write is one request to the server (createEntryId: one per candidate id),
 *   so several processes may share a session; nothing is cached but the metadata.
 * - Failures are pi's `SessionError` with pi's codes (`not_found`, `invalid_session`,
 *   `invalid_entry`, `invalid_fork_target`, `storage`) and, where pi's own storages have a fixed
 *   text (`Entry ID not found`, `Session not found: ID`), that text. A grove error without a pi
 *   code becomes the code pi's caller would see for that operation; a broken connection or a
 *   server failure is `storage`. The grove error is the `cause`.
 * - pi's `SessionMetadata` is kept in the grove session's header `metadata`, as given.
 */
import {
	Session,
	SessionError,
	type SessionEntryCursorOptions,
	type SessionErrorCode,
	type SessionForkOptions,
	type SessionMetadata,
	type SessionRepo,
	type SessionStats,
	type SessionStorage,
	type SessionTreeEntry,
} from "@earendil-works/pi-agent-core";
import type { GroveClient } from "./client.js";
import { GroveError } from "./errors.js";
import { shortEntryId, uuidv7 } from "./ids.js";
import { type GroveSearchHit, type PiSearchOptions, SEARCH_MAX_HITS, searchesNothing, throwIfAborted } from "./pi-search.js";
export { type GroveSearchHit, type PiSearchOptions, SEARCH_MAX_HITS } from "./pi-search.js";
import type { SearchResults, SessionDetails, WireEntry } from "./types.js";

const PI_CODES: ReadonlySet<string> = new Set(["not_found", "invalid_session", "invalid_entry", "invalid_fork_target", "storage"]);

/**
 * A pi `SessionError` for a failed request: pi's codes pass through, a transport or server
 * failure is `storage`, any other code becomes `fallback`.
 */
export function toSessionError(error: unknown, fallback: SessionErrorCode, message?: string): SessionError {
	if (error instanceof SessionError) return error;
	if (error instanceof GroveError) {
		let code: SessionErrorCode = fallback;
		if (PI_CODES.has(error.code)) code = error.code as SessionErrorCode;
		else if (error.status === 0 || error.status >= 500) code = "storage";
		return new SessionError(code, message ?? error.message, error);
	}
	const cause = error instanceof Error ? error : new Error(String(error));
	return new SessionError("unknown", message ?? cause.message, cause);
}

function isNotFound(error: unknown): boolean {
	return error instanceof GroveError && error.code === "not_found";
}

function isPiMetadata(value: unknown): value is SessionMetadata {
	if (typeof value !== "object" || value === null) return false;
	const candidate = value as { id?: unknown; createdAt?: unknown };
	return typeof candidate.id === "string" && typeof candidate.createdAt === "string";
}

/** pi's metadata of a grove session: its header metadata when that is pi's, else built from the summary. */
export function metadataOf<TMetadata extends SessionMetadata = SessionMetadata>(details: SessionDetails): TMetadata {
	if (isPiMetadata(details.metadata)) return details.metadata as unknown as TMetadata;
	return { id: details.id, createdAt: details.created } as TMetadata;
}

export interface GroveStorageCreateOptions<TMetadata extends SessionMetadata> {
	/** pi's metadata, stored in the header; default `{id: UUID v7, createdAt: now}`. */
	metadata?: TMetadata;
	/** The grove session id; default `metadata.id`. */
	id?: string;
	/** The session's working directory. */
	cwd?: string;
	/** Entries to start with (imported with the session, pi's order kept). */
	entries?: readonly SessionTreeEntry[];
	/** This object is the session's only writer (see `GroveSessionStorage`). */
	exclusive?: boolean;
}

/** Fresh ids fetched at once by an exclusive storage. */
const ID_BATCH = 64;

/** pi's harness `SessionStorage` on one grove session. */
export class GroveSessionStorage<TMetadata extends SessionMetadata = SessionMetadata>
	implements SessionStorage<TMetadata>
{
	readonly client: GroveClient;
	/** The grove session id (pi's `metadata.id` when the session was made through the repo). */
	readonly sessionId: string;
	private readonly metadata: TMetadata;
	/**
	 * With `exclusive`, what the only writer knows without asking: the leaf (undefined until
	 * first read) and fresh ids fetched in bulk.
	 */
	private readonly own:
		| {
				leaf: string | null | undefined;
				ids: string[];
				/** pi's branch (`getPathToRootOrCompaction`) at `leaf`, grown by this object's appends. */
				branch: { leaf: string; entries: SessionTreeEntry[] } | undefined;
		  }
		| undefined;

	/**
	 * Wraps an existing grove session; use `create` or `open` to make or read one. With
	 * `exclusive`, this object is the session's only writer, as a process is with pi's own
	 * storages: it keeps the leaf it set and takes entry ids from batches the server found
	 * unused, so an append costs one request and reading the leaf none. Without it (the
	 * default), several processes may share the session and every call asks the server.
	 */
	constructor(client: GroveClient, sessionId: string, metadata: TMetadata, options: { exclusive?: boolean } = {}) {
		this.client = client;
		this.sessionId = sessionId;
		this.metadata = metadata;
		this.own = options.exclusive ? { leaf: undefined, ids: [], branch: undefined } : undefined;
	}

	/** Creates a grove session holding pi's metadata (and `entries`, if any). */
	static async create<TMetadata extends SessionMetadata = SessionMetadata>(
		client: GroveClient,
		options: GroveStorageCreateOptions<TMetadata> = {},
	): Promise<GroveSessionStorage<TMetadata>> {
		const metadata = options.metadata ?? ({ id: uuidv7(), createdAt: new Date().toISOString() } as TMetadata);
		const id = options.id ?? metadata.id;
		const header = metadata as unknown as Record<string, unknown>;
		try {
			if (options.entries && options.entries.length > 0) {
				const lines = [
					JSON.stringify({
						type: "session",
						version: 3,
						id,
						timestamp: metadata.createdAt,
						cwd: options.cwd ?? process.cwd(),
						metadata: header,
					}),
					...options.entries.map((entry) => JSON.stringify(entry)),
				];
				await client.importSession(`${lines.join("\n")}\n`);
			} else {
				await client.createSession({ id, cwd: options.cwd, metadata: header });
			}
		} catch (error) {
			throw toSessionError(error, "storage");
		}
		return new GroveSessionStorage(client, id, metadata, { exclusive: options.exclusive });
	}

	/** Opens an existing grove session; its metadata is read from the header. */
	static async open<TMetadata extends SessionMetadata = SessionMetadata>(
		client: GroveClient,
		sessionId: string,
		options: { exclusive?: boolean } = {},
	): Promise<GroveSessionStorage<TMetadata>> {
		let details: SessionDetails;
		try {
			details = await client.getSession(sessionId);
		} catch (error) {
			throw toSessionError(error, "storage", isNotFound(error) ? `Session not found: ${sessionId}` : undefined);
		}
		return new GroveSessionStorage(client, sessionId, metadataOf<TMetadata>(details), options);
	}

	async getMetadata(): Promise<TMetadata> {
		return this.metadata;
	}

	async getLeafId(): Promise<string | null> {
		if (this.own?.leaf !== undefined) return this.own.leaf;
		try {
			const leaf = await this.client.leaf(this.sessionId);
			if (this.own) this.own.leaf = leaf;
			return leaf;
		} catch (error) {
			throw toSessionError(error, "storage");
		}
	}

	async setLeafId(leafId: string | null): Promise<void> {
		try {
			await this.client.setLeaf(this.sessionId, leafId);
			if (this.own) this.own.leaf = leafId;
		} catch (error) {
			// `busy` (another client holds the session's turn) has no pi code: `unknown`, grove's text.
			throw toSessionError(error, "unknown", isNotFound(error) ? `Entry ${leafId} not found` : undefined);
		}
	}

	/** 8 hex digits not in use in the session (leaf records included), as pi's storages make. */
	async createEntryId(): Promise<string> {
		if (this.own) {
			if (this.own.ids.length === 0) {
				try {
					this.own.ids = await this.client.freshIds(this.sessionId, ID_BATCH);
				} catch (error) {
					throw toSessionError(error, "storage");
				}
			}
			const id = this.own.ids.pop();
			if (id !== undefined) return id;
		}
		for (let attempt = 0; attempt < 100; attempt++) {
			const id = shortEntryId();
			if ((await this.getEntry(id)) === undefined) return id;
		}
		return uuidv7();
	}

	async appendEntry(entry: SessionTreeEntry): Promise<void> {
		try {
			const answer = await this.client.appendExact(this.sessionId, entry as unknown as WireEntry);
			if (this.own) {
				const branch = this.own.branch;
				// The branch of an entry on the cached leaf is that branch and the entry, except
				// where pi's walk treats the entry specially (a compaction starts a new one; a
				// leaf line is no tree entry).
				this.own.branch =
					branch !== undefined &&
					entry.type !== "compaction" &&
					entry.type !== "leaf" &&
					entry.parentId === branch.leaf
						? { leaf: entry.id, entries: [...branch.entries, entry] }
						: undefined;
				this.own.leaf = answer.leaf;
			}
		} catch (error) {
			throw toSessionError(error, "invalid_entry");
		}
	}

	async getEntry(id: string): Promise<SessionTreeEntry | undefined> {
		try {
			return (await this.client.getEntry(this.sessionId, id, { log: true })) as unknown as SessionTreeEntry;
		} catch (error) {
			if (isNotFound(error)) return undefined;
			throw toSessionError(error, "storage");
		}
	}

	async findEntries<TType extends SessionTreeEntry["type"]>(
		type: TType,
	): Promise<Array<Extract<SessionTreeEntry, { type: TType }>>> {
		try {
			return (await this.client.log(this.sessionId, { type })) as unknown as Array<
				Extract<SessionTreeEntry, { type: TType }>
			>;
		} catch (error) {
			throw toSessionError(error, "storage");
		}
	}

	async getLabel(id: string): Promise<string | undefined> {
		try {
			return (await this.client.label(this.sessionId, id)) ?? undefined;
		} catch (error) {
			throw toSessionError(error, "storage");
		}
	}

	async getSessionName(): Promise<string | undefined> {
		try {
			return (await this.client.name(this.sessionId)) ?? undefined;
		} catch (error) {
			throw toSessionError(error, "storage");
		}
	}

	async getSessionStats(): Promise<SessionStats> {
		try {
			return await this.client.stats(this.sessionId);
		} catch (error) {
			throw toSessionError(error, "storage");
		}
	}

	async getPathToRootOrCompaction(leafId: string | null): Promise<SessionTreeEntry[]> {
		if (leafId === null) return [];
		if (this.own?.branch?.leaf === leafId) return [...this.own.branch.entries];
		try {
			const entries = (await this.client.branch(this.sessionId, leafId)) as unknown as SessionTreeEntry[];
			if (this.own) this.own.branch = { leaf: leafId, entries: [...entries] };
			return entries;
		} catch (error) {
			throw toSessionError(error, "storage", isNotFound(error) ? `Entry ${leafId} not found` : undefined);
		}
	}

	async getEntries(options?: SessionEntryCursorOptions): Promise<SessionTreeEntry[]> {
		try {
			return (await this.client.log(this.sessionId, {
				after: options?.afterEntrySeq,
				limit: options?.limit,
			})) as unknown as SessionTreeEntry[];
		} catch (error) {
			throw toSessionError(error, "storage");
		}
	}
}

export interface GroveRepoOptions {
	/**
	 * The working directory of the sessions this repo creates; when set, `list` returns only
	 * the sessions of that directory (as pi's JSONL repo lists by cwd).
	 */
	cwd?: string;
	/** How many sessions `list` reads at once. Default 16. */
	listConcurrency?: number;
	/**
	 * This process is the only writer of the sessions it creates and opens, as with pi's own
	 * storages (see `GroveSessionStorage`): appends cost one request, reading the leaf none.
	 */
	exclusive?: boolean;
}

/** Limits a batch of async jobs to `width` at a time, keeping their order. */
async function mapLimited<T, R>(items: readonly T[], width: number, job: (item: T) => Promise<R>): Promise<R[]> {
	const out = new Array<R>(items.length);
	let next = 0;
	const worker = async (): Promise<void> => {
		while (next < items.length) {
			const index = next++;
			out[index] = await job(items[index]!);
		}
	};
	await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
	return out;
}

/**
 * pi's harness `SessionRepo` on a grove server: a pi session is the grove session of the same
 * id, its metadata in the header. `fork` is grove's `path` mode, which is pi's `repo.fork`.
 */
export class GroveSessionRepo implements SessionRepo<SessionMetadata, { id?: string }, void> {
	readonly client: GroveClient;
	private readonly cwd: string | undefined;
	private readonly listConcurrency: number;
	private readonly exclusive: boolean;

	constructor(client: GroveClient, options: GroveRepoOptions = {}) {
		this.client = client;
		this.cwd = options.cwd;
		this.listConcurrency = options.listConcurrency ?? 16;
		this.exclusive = options.exclusive ?? false;
	}

	async create(options: { id?: string } = {}): Promise<Session<SessionMetadata>> {
		const metadata: SessionMetadata = { id: options.id ?? uuidv7(), createdAt: new Date().toISOString() };
		return new Session(
			await GroveSessionStorage.create(this.client, { metadata, cwd: this.cwd, exclusive: this.exclusive }),
		);
	}

	async open(metadata: SessionMetadata): Promise<Session<SessionMetadata>> {
		return new Session(await GroveSessionStorage.open(this.client, metadata.id, { exclusive: this.exclusive }));
	}

	async list(): Promise<SessionMetadata[]> {
		try {
			const ids: string[] = [];
			for await (const summary of this.client.iterSessions()) {
				if (this.cwd === undefined || summary.cwd === this.cwd) ids.push(summary.id);
			}
			const found = await mapLimited(ids, this.listConcurrency, async (id) => {
				try {
					return metadataOf(await this.client.getSession(id));
				} catch (error) {
					if (isNotFound(error)) return undefined; // deleted meanwhile
					throw error;
				}
			});
			return found.filter((metadata): metadata is SessionMetadata => metadata !== undefined);
		} catch (error) {
			throw toSessionError(error, "storage");
		}
	}

	async delete(metadata: SessionMetadata): Promise<void> {
		try {
			await this.client.deleteSession(metadata.id);
		} catch (error) {
			if (isNotFound(error)) return;
			throw toSessionError(error, "storage");
		}
	}

	async fork(
		source: SessionMetadata,
		options: SessionForkOptions & { id?: string },
	): Promise<Session<SessionMetadata>> {
		const metadata: SessionMetadata = { id: options.id ?? uuidv7(), createdAt: new Date().toISOString() };
		await forkSession(this.client, source.id, metadata.id, metadata, options, this.cwd);
		return new Session(new GroveSessionStorage(this.client, metadata.id, metadata, { exclusive: this.exclusive }));
	}
}

/**
 * Forks grove session `sourceId` into `targetId` with grove's `path` mode (pi's `repo.fork`),
 * throwing pi's errors with pi's texts.
 */
export async function forkSession(
	client: GroveClient,
	sourceId: string,
	targetId: string,
	metadata: SessionMetadata,
	options: SessionForkOptions,
	cwd?: string,
	sourceName: string = sourceId,
): Promise<void> {
	const entryId = options.entryId || undefined;
	const position = entryId === undefined ? undefined : (options.position ?? "before");
	try {
		await client.forkSession(sourceId, {
			entryId,
			position,
			mode: "path",
			id: targetId,
			cwd,
			metadata: metadata as unknown as Record<string, unknown>,
		});
	} catch (error) {
		if (isNotFound(error)) throw toSessionError(error, "storage", `Session not found: ${sourceName}`);
		if (error instanceof GroveError && error.code === "invalid_fork_target" && entryId !== undefined) {
			const target = await new GroveSessionStorage(client, sourceId, metadata).getEntry(entryId);
			const text = target === undefined ? `Entry ${entryId} not found` : `Entry ${entryId} is not a user message`;
			throw toSessionError(error, "invalid_fork_target", text);
		}
		throw toSessionError(error, "storage");
	}
}

/**
 * The answer of `client.search`, pi's abort when `signal` was aborted meanwhile, else a pi
 * `SessionError` (`storage`) for a failed request.
 */
async function searchFor(
	client: GroveClient,
	text: string,
	options: { types?: readonly string[]; limit: number; signal?: AbortSignal; session?: string },
): Promise<SearchResults> {
	try {
		return await client.search(text, options);
	} catch (error) {
		throwIfAborted(options.signal);
		throw toSessionError(error, "storage");
	}
}

/**
 * pi 0.84's `SessionSearch` over the grove sessions `GroveSessionStorage` keeps: a hit's
 * `sessionId` is the grove session id, its `entryId` the entry's id (pi's entries are grove's
 * one for one). One request to grove's index per search, best match first; `entryTypes` is
 * the route's `type` filter. Unlike pi's scanning search (a case-insensitive substring of the
 * entry's JSON), grove matches words of the entry's text (docs/pi.md, "Search"); at most
 * `SEARCH_MAX_HITS` hits a search.
 */
export class GroveSessionSearch {
	readonly client: GroveClient;
	private readonly session: string | undefined;

	/** Searches every session of the store, or only `options.session`. */
	constructor(client: GroveClient, options: { session?: string } = {}) {
		this.client = client;
		this.session = options.session;
	}

	async *search(text: string, options: PiSearchOptions = {}): AsyncGenerator<GroveSearchHit, void, undefined> {
		if (searchesNothing(text, options)) return;
		const { signal } = options;
		throwIfAborted(signal);
		const results = await searchFor(this.client, text.trim(), {
			types: options.entryTypes,
			limit: Math.min(options.limit ?? SEARCH_MAX_HITS, SEARCH_MAX_HITS),
			signal,
			session: this.session,
		});
		for (const hit of results.hits) {
			throwIfAborted(signal);
			yield { sessionId: hit.session, entryId: hit.entry, snippet: hit.snippet, score: hit.score };
		}
	}
}
