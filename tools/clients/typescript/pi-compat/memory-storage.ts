/**
 * A drop-in for pi v0.83.0's `InMemorySessionStorage` (packages/agent/src/harness/session/
 * memory-storage.ts) backed by the grove server that `GROVE_URL` names: the same constructor,
 * behaviour and error texts, each object a grove session of its own (a fresh grove id, whatever
 * pi's metadata id is; pi's metadata kept in the header).
 *
 * The constructor is synchronous, as pi's: it checks the entries as pi does, copies them, and
 * starts creating the grove session (importing the entries), which every call awaits.
 *
 * An object made by the constructor is the only writer of its grove session, so it keeps the
 * two facts a writer knows without asking: the leaf (set by its own appends and moves) and the
 * ids in use (for `createEntryId`). Every other read, and every write, is a request to the
 * server. (pi's harness expects its storage to answer those two without a round trip: a test
 * wants the model called within two timer ticks of `prompt()`.) An object attached to an
 * existing session (the repo's forks) asks the server for everything.
 */
import {
	SessionError,
	type SessionEntryCursorOptions,
	type SessionMetadata,
	type SessionStats,
	type SessionStorage,
	type SessionTreeEntry,
} from "@earendil-works/pi-agent-core";
import { uuidv7 } from "../src/ids.js";
import { GroveSessionStorage } from "../src/pi.js";
import { groveClient } from "./client.js";

export class InMemorySessionStorage<TMetadata extends SessionMetadata = SessionMetadata>
	implements SessionStorage<TMetadata>
{
	private readonly metadata: TMetadata;
	private initialEntries: SessionTreeEntry[];
	private backing: Promise<GroveSessionStorage<TMetadata>> | undefined;
	/** What the sole writer knows: the leaf and the ids in use; undefined when attached. */
	private own: { leaf: string | null; ids: Set<string> } | undefined;

	constructor(options?: { entries?: SessionTreeEntry[]; metadata?: TMetadata }) {
		const entries = options?.entries ? structuredClone(options.entries) : [];
		const ids = new Set(entries.map((entry) => entry.id));
		let leafId: string | null = null;
		for (const entry of entries) leafId = entry.type === "leaf" ? entry.targetId : entry.id;
		if (leafId !== null && !ids.has(leafId)) {
			throw new SessionError("invalid_session", `Entry ${leafId} not found`);
		}
		this.initialEntries = entries;
		this.metadata = options?.metadata ?? ({ id: uuidv7(), createdAt: new Date().toISOString() } as TMetadata);
		this.own = { leaf: leafId, ids };
		// Created now, awaited by every call (a failure surfaces there, not as an unhandled rejection).
		this.groveStorage().catch(() => undefined);
	}

	/** A storage object on an existing grove session (the repo's forks). */
	static attach<TMetadata extends SessionMetadata>(
		grove: GroveSessionStorage<TMetadata>,
		metadata: TMetadata,
	): InMemorySessionStorage<TMetadata> {
		const storage = new InMemorySessionStorage<TMetadata>({ metadata });
		storage.backing = Promise.resolve(grove);
		storage.own = undefined;
		return storage;
	}

	/** The grove session behind this object, created on first use. */
	groveStorage(): Promise<GroveSessionStorage<TMetadata>> {
		if (this.backing === undefined) {
			const entries = this.initialEntries;
			this.initialEntries = [];
			this.backing = GroveSessionStorage.create(groveClient(), { metadata: this.metadata, id: uuidv7(), entries });
		}
		return this.backing;
	}

	async getMetadata(): Promise<TMetadata> {
		return this.metadata;
	}

	async getLeafId(): Promise<string | null> {
		if (this.own) return this.own.leaf;
		return (await this.groveStorage()).getLeafId();
	}

	async setLeafId(leafId: string | null): Promise<void> {
		await (await this.groveStorage()).setLeafId(leafId);
		if (this.own) this.own.leaf = leafId;
	}

	async createEntryId(): Promise<string> {
		if (!this.own) return (await this.groveStorage()).createEntryId();
		for (let attempt = 0; attempt < 100; attempt++) {
			// The random tail of a UUIDv7, as pi's storages take it.
			const id = uuidv7().slice(-8);
			if (!this.own.ids.has(id)) return id;
		}
		return uuidv7();
	}

	async appendEntry(entry: SessionTreeEntry): Promise<void> {
		await (await this.groveStorage()).appendEntry(entry);
		if (this.own) {
			this.own.ids.add(entry.id);
			this.own.leaf = entry.type === "leaf" ? entry.targetId : entry.id;
		}
	}

	async getEntry(id: string): Promise<SessionTreeEntry | undefined> {
		return (await this.groveStorage()).getEntry(id);
	}

	async findEntries<TType extends SessionTreeEntry["type"]>(
		type: TType,
	): Promise<Array<Extract<SessionTreeEntry, { type: TType }>>> {
		return (await this.groveStorage()).findEntries(type);
	}

	async getLabel(id: string): Promise<string | undefined> {
		return (await this.groveStorage()).getLabel(id);
	}

	async getSessionName(): Promise<string | undefined> {
		return (await this.groveStorage()).getSessionName();
	}

	async getSessionStats(): Promise<SessionStats> {
		return (await this.groveStorage()).getSessionStats();
	}

	async getPathToRootOrCompaction(leafId: string | null): Promise<SessionTreeEntry[]> {
		return (await this.groveStorage()).getPathToRootOrCompaction(leafId);
	}

	async getEntries(options?: SessionEntryCursorOptions): Promise<SessionTreeEntry[]> {
		return (await this.groveStorage()).getEntries(options);
	}
}
