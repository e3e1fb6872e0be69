/**
 * A drop-in for pi v0.83.0's `InMemorySessionStorage` (packages/agent/src/harness/session/
 * memory-storage.ts) backed by the grove server that `GROVE_URL` names: the same constructor,
 * behaviour and error texts, each object a grove session of its own (a fresh grove id, whatever
 * pi's metadata id is; pi's metadata kept in the header).
 *
 * The constructor is synchronous, as pi's: it checks the entries as pi does and copies them;
 * the grove session is created (the entries imported) on the first call that needs it.
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
	}

	/** A storage object on an existing grove session (the repo's forks). */
	static attach<TMetadata extends SessionMetadata>(
		grove: GroveSessionStorage<TMetadata>,
		metadata: TMetadata,
	): InMemorySessionStorage<TMetadata> {
		const storage = new InMemorySessionStorage<TMetadata>({ metadata });
		storage.backing = Promise.resolve(grove);
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
		return (await this.groveStorage()).getLeafId();
	}

	async setLeafId(leafId: string | null): Promise<void> {
		return (await this.groveStorage()).setLeafId(leafId);
	}

	async createEntryId(): Promise<string> {
		return (await this.groveStorage()).createEntryId();
	}

	async appendEntry(entry: SessionTreeEntry): Promise<void> {
		return (await this.groveStorage()).appendEntry(entry);
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
