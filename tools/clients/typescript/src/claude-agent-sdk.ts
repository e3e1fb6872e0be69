/**
 * The Claude Agent SDK's session storage on grove: `GroveSessionStore` implements the SDK's
 * `SessionStore` (`append`, `load`, `listSessions`, `delete`, `listSubkeys`, and
 * `listSessionSummaries` when given the SDK's `foldSessionSummary`) with one grove session per
 * transcript key. It is the TypeScript twin of the Python client's
 * `grove_client.claude_agent_sdk.GroveSessionStore` and stores transcripts the same way, so either
 * client reads what the other wrote (docs/claude-agent-sdk.md is the mapping).
 *
 * It may call only grove, through `GroveClient`; it imports nothing of the SDK (the interface is
 * structural: `query({ prompt, options: { sessionStore: new GroveSessionStore(client) } })`).
 *
 * - A key (`projectKey`, `sessionId`, optional `subpath`) is the grove session `PREFIX-P-S[-U]`,
 *   each part the hex of its UTF-8 bytes, or `h` and 40 hex digits of its SHA-256 when that hex
 *   would be over 120 characters; the key itself is in the header's metadata.
 * - An entry is a `custom` entry (`claude.entry`, the entry as `data`), its grove id the entry's
 *   `uuid` when it has one (a `uuid` appended again is ignored); one `append` is one atomic batch.
 * - With `foldSessionSummary`, a main transcript's append ends with a `claude.summary` entry
 *   holding the SDK's folded summary `data`; its grove timestamp is the summary's `mtime`.
 */
import { createHash } from "node:crypto";
import type { GroveClient } from "./client.js";
import { GroveError } from "./errors.js";
import type { NewEntry, WireEntry } from "./types.js";

/** The `customType` of an appended entry. */
export const ENTRY = "claude.entry";
/** The `customType` of a main transcript's summary. */
export const SUMMARY = "claude.summary";
/** The header metadata field naming the key. */
const FIELD = "claudeAgentSdk";
/** The longest hex part of a session id; a longer one is hashed. */
const LONGEST_PART = 120;

/** The SDK's `SessionKey`. */
export interface ClaudeSessionKey {
	projectKey: string;
	sessionId: string;
	subpath?: string;
}

/** The SDK's `SessionStoreEntry`: a transcript line, opaque but for `type` and `uuid`. */
export interface ClaudeSessionStoreEntry {
	type: string;
	uuid?: string;
	timestamp?: string;
	[field: string]: unknown;
}

/** The SDK's `SessionSummaryEntry`. */
export interface ClaudeSessionSummaryEntry {
	sessionId: string;
	mtime: number;
	data: Record<string, unknown>;
}

/** The SDK's `foldSessionSummary`. */
export type FoldSessionSummary = (
	prev: ClaudeSessionSummaryEntry | undefined,
	key: ClaudeSessionKey,
	entries: ClaudeSessionStoreEntry[],
	options?: { mtime?: number },
) => ClaudeSessionSummaryEntry;

export interface GroveSessionStoreOptions {
	/** Begins every grove session id of this store (letters and digits; default `cc`). */
	prefix?: string;
	/** The SDK's `foldSessionSummary`: with it, the store keeps summaries (`listSessionSummaries`). */
	foldSessionSummary?: FoldSessionSummary;
}

function part(text: string): string {
	const hex = Buffer.from(text, "utf8").toString("hex");
	if (hex.length <= LONGEST_PART) return hex;
	return `h${createHash("sha256").update(text, "utf8").digest("hex").slice(0, 40)}`;
}

/** The grove session of a transcript key. */
export function sessionOf(key: ClaudeSessionKey, prefix = "cc"): string {
	const main = `${prefix}-${part(key.projectKey)}-${part(key.sessionId)}`;
	return key.subpath === undefined ? main : `${main}-${part(key.subpath)}`;
}

function uuidOf(entry: unknown): string | undefined {
	const uuid = typeof entry === "object" && entry !== null ? (entry as { uuid?: unknown }).uuid : undefined;
	return typeof uuid === "string" && uuid !== "" ? uuid : undefined;
}

function isNotFound(error: unknown): boolean {
	return error instanceof GroveError && error.code === "not_found";
}

/** The Claude Agent SDK's `SessionStore` on grove. */
export class GroveSessionStore {
	readonly client: GroveClient;
	readonly prefix: string;
	/** Present when the store keeps summaries (the SDK looks for the method). */
	readonly listSessionSummaries?: (projectKey: string) => Promise<ClaudeSessionSummaryEntry[]>;
	private readonly fold: FoldSessionSummary | undefined;
	private readonly queues = new Map<string, Promise<unknown>>();

	constructor(client: GroveClient, options: GroveSessionStoreOptions = {}) {
		const prefix = options.prefix ?? "cc";
		if (!/^[A-Za-z0-9]+$/.test(prefix)) throw new Error(`prefix ${JSON.stringify(prefix)}: letters and digits only`);
		this.client = client;
		this.prefix = prefix;
		this.fold = options.foldSessionSummary;
		if (this.fold !== undefined) this.listSessionSummaries = (projectKey) => this.summaries(projectKey);
	}

	/** Appends `entries` after those appended before, as one atomic batch; a stored `uuid` is left out. */
	append(key: ClaudeSessionKey, entries: ClaudeSessionStoreEntry[]): Promise<void> {
		if (entries.length === 0) return Promise.resolve();
		const sid = sessionOf(key, this.prefix);
		const run = async () => {
			if (!(await this.client.sessionExists(sid))) await this.create(sid, key);
			let news = unique(entries);
			try {
				await this.client.appendMany(sid, await this.batch(sid, key, news));
			} catch (error) {
				if (!(error instanceof GroveError && error.code === "invalid_argument")) throw error;
				// Some uuid is stored already (a batch the SDK sent again): append the rest.
				const kept: ClaudeSessionStoreEntry[] = [];
				for (const entry of news) if (!(await this.stored(sid, uuidOf(entry)))) kept.push(entry);
				news = kept;
				if (news.length > 0) await this.client.appendMany(sid, await this.batch(sid, key, news));
			}
		};
		const next = (this.queues.get(sid) ?? Promise.resolve()).then(run, run);
		const tail = next.then(
			() => undefined,
			() => undefined,
		);
		this.queues.set(sid, tail);
		// The queue of a session goes once its last append is done: the map holds busy sessions only.
		void tail.then(() => {
			if (this.queues.get(sid) === tail) this.queues.delete(sid);
		});
		return next;
	}

	/** Every entry appended under `key`, in order; null for a key never appended to. */
	async load(key: ClaudeSessionKey): Promise<ClaudeSessionStoreEntry[] | null> {
		try {
			const entries = await this.client.entries(sessionOf(key, this.prefix));
			return entries.filter((e) => e.customType === ENTRY).map((e) => e.data as ClaudeSessionStoreEntry);
		} catch (error) {
			if (isNotFound(error)) return null;
			throw error;
		}
	}

	/** A project's main transcripts with their last append's time (epoch ms). */
	async listSessions(projectKey: string): Promise<{ sessionId: string; mtime: number }[]> {
		const listed: { sessionId: string; mtime: number }[] = [];
		for (const sid of await this.ids(`${this.prefix}-${part(projectKey)}-`)) {
			if (sid.split("-").length !== 3) continue;
			const found = await this.last(sid);
			if (found) listed.push({ sessionId: found.key.sessionId, mtime: Date.parse(found.entry.timestamp) });
		}
		return listed;
	}

	/** Deletes a transcript; a main transcript's key deletes its subagents' too. */
	async delete(key: ClaudeSessionKey): Promise<void> {
		const sid = sessionOf(key, this.prefix);
		const doomed = [sid, ...(key.subpath === undefined ? await this.ids(`${sid}-`) : [])];
		for (const one of doomed) {
			try {
				await this.client.deleteSession(one);
			} catch (error) {
				if (!isNotFound(error)) throw error;
			}
		}
	}

	/** The subpaths stored under a main transcript's key. */
	async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
		const subkeys: string[] = [];
		for (const sid of await this.ids(`${sessionOf(key, this.prefix)}-`)) {
			const stored = await this.keyOf(sid);
			if (stored?.subpath !== undefined) subkeys.push(stored.subpath);
		}
		return subkeys;
	}

	// Internals

	private async summaries(projectKey: string): Promise<ClaudeSessionSummaryEntry[]> {
		const found: ClaudeSessionSummaryEntry[] = [];
		for (const sid of await this.ids(`${this.prefix}-${part(projectKey)}-`)) {
			if (sid.split("-").length !== 3) continue;
			const last = await this.last(sid);
			if (last && last.entry.customType === SUMMARY) found.push(this.summaryOf(last.key, last.entry));
		}
		return found;
	}

	private summaryOf(key: ClaudeSessionKey, entry: WireEntry): ClaudeSessionSummaryEntry {
		const data = (entry.data as { data?: Record<string, unknown> } | undefined)?.data ?? {};
		return { sessionId: key.sessionId, mtime: Date.parse(entry.timestamp), data };
	}

	/** The grove entries of an append: the entries, then (for a main transcript, with a fold) the summary. */
	private async batch(sid: string, key: ClaudeSessionKey, entries: ClaudeSessionStoreEntry[]): Promise<NewEntry[]> {
		const batch: NewEntry[] = entries.map((entry) => {
			const uuid = uuidOf(entry);
			return { type: "custom", customType: ENTRY, data: entry, ...(uuid === undefined ? {} : { id: uuid }) };
		});
		if (key.subpath === undefined && this.fold !== undefined) {
			const last = await this.last(sid);
			const prev = last && last.entry.customType === SUMMARY ? this.summaryOf(key, last.entry) : undefined;
			const folded = this.fold(prev, key, entries);
			batch.push({ type: "custom", customType: SUMMARY, data: { data: folded.data } });
		}
		return batch;
	}

	private async stored(sid: string, eid: string | undefined): Promise<boolean> {
		if (eid === undefined) return false;
		try {
			await this.client.getEntry(sid, eid);
			return true;
		} catch (error) {
			if (isNotFound(error)) return false;
			throw error;
		}
	}

	/** The session's key (its header's) and last entry; undefined when it is gone or empty. */
	private async last(sid: string): Promise<{ key: ClaudeSessionKey; entry: WireEntry } | undefined> {
		try {
			const details = await this.client.getSession(sid);
			const key = (details.metadata as Record<string, unknown> | null)?.[FIELD] as ClaudeSessionKey | undefined;
			if (details.leaf === null || details.leaf === undefined || key === undefined) return undefined;
			return { key, entry: await this.client.getEntry(sid, details.leaf) };
		} catch (error) {
			if (isNotFound(error)) return undefined;
			throw error;
		}
	}

	private async keyOf(sid: string): Promise<ClaudeSessionKey | undefined> {
		try {
			const details = await this.client.getSession(sid);
			return (details.metadata as Record<string, unknown> | null)?.[FIELD] as ClaudeSessionKey | undefined;
		} catch (error) {
			if (isNotFound(error)) return undefined;
			throw error;
		}
	}

	/** The ids of the sessions whose id begins with `prefix`, in order. */
	private async ids(prefix: string): Promise<string[]> {
		const found: string[] = [];
		let after: string | null = prefix;
		while (after !== null) {
			const page = await this.client.listSessions({ after, limit: 1000 });
			for (const summary of page.sessions) {
				if (!summary.id.startsWith(prefix)) return found;
				found.push(summary.id);
			}
			after = page.next;
		}
		return found;
	}

	private async create(sid: string, key: ClaudeSessionKey): Promise<void> {
		const stored: Record<string, string> = { projectKey: key.projectKey, sessionId: key.sessionId };
		if (key.subpath !== undefined) stored.subpath = key.subpath;
		try {
			await this.client.createSession({ id: sid, metadata: { [FIELD]: stored } });
		} catch (error) {
			// Made meanwhile by another writer: fine.
			if (!(error instanceof GroveError && error.code === "invalid_argument" && (await this.client.sessionExists(sid)))) throw error;
		}
	}
}

/** `entries` without those whose `uuid` came earlier among them. */
function unique(entries: ClaudeSessionStoreEntry[]): ClaudeSessionStoreEntry[] {
	const seen = new Set<string>();
	return entries.filter((entry) => {
		const uuid = uuidOf(entry);
		if (uuid === undefined) return true;
		if (seen.has(uuid)) return false;
		seen.add(uuid);
		return true;
	});
}
