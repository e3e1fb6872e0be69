/**
 * `GroveSaver`: LangGraph's checkpointer (`BaseCheckpointSaver` of `@langchain/langgraph-checkpoint`)
 * on grove sessions, by the mapping of docs/langgraph.md, which is normative: a thread written here
 * is a normal grove session that `grove tree`, `grove verify` and the Python saver read.
 *
 * What it owns: the sessions `lg-` + hex(thread_id) + `-n` + hex(checkpoint_ns) (and, when it
 * deletes a thread, any `….rewrite` session of it); in them, `custom` entries of `customType`
 * `langgraph.checkpoint` (one per checkpoint, its id the checkpoint's, its parent the parent
 * checkpoint) and `langgraph.writes` (pending writes, children of their checkpoint, ids
 * `CHECKPOINT~w` + 12 hex digits). The server knows nothing of LangGraph.
 *
 * What it calls: only `GroveClient` routes: sessions (get, create, delete, list), entries by id,
 * children, the whole entries of a session, `appendExact` and `setLeaf`.
 *
 * What callers may rely on:
 * - `getTuple` reads the leaf (without a checkpoint id), the checkpoint entry, its children (its
 *   writes) and the few entries its `channels` index names, whatever the thread's length; only
 *   when the index misses does it read the whole session. `list` reads each session once.
 * - `put` is one read of the session, one of the parent entry (none when the parent's index is in
 *   this saver's memory, e.g. because it wrote or read it) and one append; a checkpoint id already
 *   stored is kept as it is. `putWrites` is one read and one append; writes written twice are
 *   deduplicated when read (`(task_id, idx)`: the first wins for `idx >= 0`, the last for the
 *   special channels), and come back in `writesSortKey` order.
 * - One saver writes a session in the order of its calls, awaited or not, and writes that come
 *   before their checkpoint's `put` wait for it (langgraph-order.ts); reads wait for the writes
 *   called before them.
 * - The session's leaf is its latest checkpoint (the greatest id) or a writes entry under it:
 *   appending an older checkpoint, or writes under one, moves the leaf back.
 * - Nothing is retried; a failed request is the `GroveError` of the client.
 */
import { randomBytes } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
	BaseCheckpointSaver,
	type ChannelVersions,
	type Checkpoint,
	type CheckpointListOptions,
	type CheckpointMetadata,
	type CheckpointPendingWrite,
	type CheckpointTuple,
	compareWritesSortKeys,
	getCheckpointId,
	maxChannelVersion,
	type PendingWrite,
	type SerializerProtocol,
	TASKS,
	WRITES_IDX_MAP,
	type WritesSortKey,
	writesSortKey,
} from "@langchain/langgraph-checkpoint";
import { GroveClient } from "./client.js";
import { isGroveError } from "./errors.js";
import { WriteOrder } from "./langgraph-order.js";
import type { WireEntry } from "./types.js";

/** The `customType` of a checkpoint entry. */
export const CHECKPOINT_TYPE = "langgraph.checkpoint";
/** The `customType` of a pending-writes entry. */
export const WRITES_TYPE = "langgraph.writes";

/** One channel value a checkpoint stored: serde's type tag (or `empty`) and its bytes in base64. */
interface Blob {
	version: string;
	type: string;
	data: string;
}

/** Per channel of `channel_versions`: its version and the entry whose `blobs` hold it. */
type ChannelIndex = Record<string, [string, string]>;

interface CheckpointData {
	type: string;
	checkpoint: string;
	metadata_type: string;
	metadata: string;
	parent: string | null;
	blobs: Record<string, Blob>;
	channels: ChannelIndex;
}

interface WriteItem {
	idx: number;
	channel: string;
	type: string;
	data: string;
}

interface WritesData {
	checkpoint_id: string;
	task_id: string;
	task_path: string;
	writes: WriteItem[];
}

type CheckpointEntry = WireEntry & { customType: typeof CHECKPOINT_TYPE; data: CheckpointData };
type WritesEntry = WireEntry & { customType: typeof WRITES_TYPE; data: WritesData };

/** A session's entries by id, in the order they were read (log order for a whole session). */
type Known = Map<string, WireEntry>;

function isCheckpointEntry(entry: WireEntry | undefined): entry is CheckpointEntry {
	return entry?.type === "custom" && entry.customType === CHECKPOINT_TYPE && typeof entry.data === "object";
}

function isWritesEntry(entry: WireEntry | undefined): entry is WritesEntry {
	return entry?.type === "custom" && entry.customType === WRITES_TYPE && typeof entry.data === "object";
}

function hex(text: string): string {
	return Buffer.from(text, "utf8").toString("hex");
}

function unhex(digits: string): string | undefined {
	const text = Buffer.from(digits, "hex").toString("utf8");
	return hex(text) === digits ? text : undefined;
}

/** The session of a thread's namespace: `lg-` + hex(thread_id) + `-n` + hex(checkpoint_ns). */
export function sessionIdOf(threadId: string, checkpointNs: string): string {
	return `${threadPrefix(threadId)}${hex(checkpointNs)}`;
}

/** What every session of the thread's id starts with. */
function threadPrefix(threadId: string): string {
	return `lg-${hex(threadId)}-n`;
}

/** The thread and namespace of a saver's session id, or undefined for any other session. */
export function threadOfSessionId(sid: string): { threadId: string; checkpointNs: string } | undefined {
	const match = /^lg-((?:[0-9a-f]{2})*)-n((?:[0-9a-f]{2})*)$/.exec(sid);
	if (!match) return undefined;
	const threadId = unhex(match[1]!);
	const checkpointNs = unhex(match[2]!);
	return threadId === undefined || checkpointNs === undefined ? undefined : { threadId, checkpointNs };
}

/** The checkpoint a leaf names: itself, or the checkpoint of a writes entry `CP~w<12 hex>`. */
function checkpointOfLeaf(leaf: string): string {
	return /^(.*)~w[0-9a-f]{12}$/.exec(leaf)?.[1] ?? leaf;
}

function b64(bytes: Uint8Array): string {
	return Buffer.from(bytes).toString("base64");
}

function unb64(text: string): Uint8Array {
	return Buffer.from(text, "base64");
}

function now(): string {
	return new Date().toISOString();
}

/** A thread's coordinates from a config; the `thread_id` as given is what configs echo back. */
interface Thread {
	threadId: string;
	checkpointNs: string;
	sid: string;
	/** `configurable.thread_id` as the caller gave it (a string once read back from a session id). */
	given: unknown;
}

function threadOf(given: unknown, checkpointNs: unknown): Thread {
	const threadId = String(given);
	const ns = checkpointNs === undefined || checkpointNs === null ? "" : String(checkpointNs);
	return { threadId, checkpointNs: ns, sid: sessionIdOf(threadId, ns), given };
}

/** The thread a write is for; a write without `configurable.thread_id` is refused. */
function requireThread(config: RunnableConfig, what: string): Thread {
	const configurable = config.configurable;
	if (configurable === undefined) throw new TypeError(`${what}: the config has no "configurable"`);
	const given: unknown = configurable.thread_id;
	if (given === undefined || given === null || given === "") {
		throw new TypeError(`${what}: the config has no "configurable.thread_id"`);
	}
	return threadOf(given, configurable.checkpoint_ns);
}

function configOf(thread: Thread, checkpointId: string): RunnableConfig {
	return { configurable: { thread_id: thread.given, checkpoint_ns: thread.checkpointNs, checkpoint_id: checkpointId } };
}

/** A written entry's view of the session before it: whether it had to be created, and its leaf. */
interface SessionState {
	created: boolean;
	leaf: string | null;
}

export interface GroveSaverOptions {
	/** A client to use (and not close); otherwise one is made from `url` and `token`. */
	client?: GroveClient;
	/** `unix:/path/to/socket` or `http://host:port`; by default `GROVE_URL` (and `GROVE_TOKEN`). */
	url?: string;
	/** The bearer token (over TCP). */
	token?: string;
	/** The `Grove-Client` name the saver's operations are stamped with; `langgraph` by default. */
	name?: string;
	/** LangGraph's serializer; its default (`JsonPlusSerializer`) otherwise. */
	serde?: SerializerProtocol;
	/** How many checkpoints' channel indexes to keep in memory (default 10,000). */
	cacheSize?: number;
}

/** LangGraph's checkpointer on a `grove serve`: each thread's namespace is a grove session. */
export class GroveSaver extends BaseCheckpointSaver<number> {
	readonly client: GroveClient;
	private readonly ownsClient: boolean;
	private readonly cacheSize: number;
	/** Each session's writes in call order, and writes waiting for their checkpoint. */
	private readonly order = new WriteOrder();
	/** `SID\nCHECKPOINT_ID` → the checkpoint's channel index, for the checkpoints known to be in SID. */
	private readonly indexes = new Map<string, ChannelIndex>();

	constructor(options: GroveSaverOptions = {}) {
		super(options.serde);
		this.cacheSize = options.cacheSize ?? 10_000;
		if (options.client !== undefined) {
			this.client = options.client;
			this.ownsClient = false;
			return;
		}
		const url = options.url ?? process.env.GROVE_URL;
		if (!url) throw new TypeError("GroveSaver: no url and GROVE_URL is not set (unix:/path/to/socket or http://host:port)");
		const token = options.url === undefined ? options.token ?? (process.env.GROVE_TOKEN || undefined) : options.token;
		this.client = new GroveClient({ url, token, name: options.name ?? "langgraph" });
		this.ownsClient = true;
	}

	/** Closes the client's idle connections when the saver made the client. */
	close(): void {
		if (this.ownsClient) this.client.close();
	}

	// Reading

	override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
		const given: unknown = config.configurable?.thread_id;
		if (given === undefined || given === null || given === "") return undefined;
		const thread = threadOf(given, config.configurable?.checkpoint_ns);
		await this.order.settled(thread.sid);
		const wanted = getCheckpointId(config);
		if (wanted) {
			const entry = await this.entry(thread.sid, wanted);
			return isCheckpointEntry(entry) ? this.readTuple(thread, entry) : undefined;
		}
		let leaf: string | null;
		try {
			leaf = await this.client.leaf(thread.sid);
		} catch (error) {
			if (isGroveError(error, "not_found")) return undefined;
			throw error;
		}
		if (leaf === null) return undefined;
		const entry = await this.entry(thread.sid, checkpointOfLeaf(leaf));
		if (isCheckpointEntry(entry)) return this.readTuple(thread, entry);
		// The leaf names no checkpoint (another client moved it): the newest of the session.
		const known = await this.sessionEntries(thread.sid);
		const newest = checkpointsNewestFirst(known)[0];
		return newest === undefined ? undefined : this.tupleOf(thread, newest, known, true);
	}

	override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
		const { before, filter } = options;
		let left = options.limit;
		if (left !== undefined && left <= 0) return;
		const configurable = config.configurable ?? {};
		const given: unknown = configurable.thread_id;
		const threadId = given === undefined || given === null || given === "" ? undefined : String(given);
		const ns = configurable.checkpoint_ns === undefined ? undefined : String(configurable.checkpoint_ns);
		const wanted: string | undefined = configurable.checkpoint_id || undefined;
		const beforeId: string | undefined = before?.configurable?.checkpoint_id || undefined;
		for await (const thread of this.threads(threadId, ns)) {
			await this.order.settled(thread.sid);
			const known = await this.sessionEntries(thread.sid);
			for (const entry of checkpointsNewestFirst(known)) {
				if (wanted !== undefined && entry.id !== wanted) continue;
				if (beforeId !== undefined && entry.id >= beforeId) continue;
				const metadata = await this.load<CheckpointMetadata>(entry.data.metadata_type, entry.data.metadata);
				const fields = metadata as Record<string, unknown>;
				if (filter && !Object.entries(filter).every(([key, value]) => isDeepStrictEqual(fields[key], value))) continue;
				yield await this.tupleOf(thread, entry, known, true, { metadata });
				if (left !== undefined && --left <= 0) return;
			}
		}
	}

	/**
	 * The tuple of a checkpoint entry read by id: its children and the entries its index names are
	 * fetched; the whole session only when the index misses.
	 */
	private async readTuple(thread: Thread, entry: CheckpointEntry): Promise<CheckpointTuple> {
		const { sid } = thread;
		this.remember(sid, entry.id, entry.data.channels ?? {});
		const named = new Set(Object.values(entry.data.channels ?? {}).map(([, id]) => id));
		named.delete(entry.id);
		const checkpoint = await this.load<Checkpoint>(entry.data.type, entry.data.checkpoint);
		const parent = entry.data.parent;
		const [children, parentChildren, indexed] = await Promise.all([
			this.children(sid, entry.id),
			checkpoint.v < 4 && parent ? this.children(sid, parent) : Promise.resolve([]),
			Promise.all([...named].map((id) => this.entry(sid, id))),
		]);
		const known: Known = new Map([[entry.id, entry]]);
		for (const item of [...children, ...parentChildren, ...indexed]) if (item !== undefined) known.set(item.id, item);
		if (blobsOf(checkpoint, entry, known, false) !== undefined) return this.tupleOf(thread, entry, known, false, { checkpoint });
		return this.tupleOf(thread, entry, await this.sessionEntries(sid), true, { checkpoint });
	}

	/**
	 * Builds a checkpoint's tuple from the entries in `known`: its writes are its children there,
	 * its values found by its index (and, with `whole`, by a search of `known`, the whole session).
	 */
	private async tupleOf(
		thread: Thread,
		entry: CheckpointEntry,
		known: Known,
		whole: boolean,
		loaded: { checkpoint?: Checkpoint; metadata?: CheckpointMetadata } = {},
	): Promise<CheckpointTuple> {
		const data = entry.data;
		const stored = loaded.checkpoint ?? (await this.load<Checkpoint>(data.type, data.checkpoint));
		const blobs = blobsOf(stored, entry, known, whole) ?? new Map<string, Blob>();
		const values: Record<string, unknown> = {};
		for (const [channel, blob] of blobs) {
			if (blob.type !== "empty") values[channel] = await this.load(blob.type, blob.data);
		}
		const checkpoint: Checkpoint = { ...stored, channel_values: values };
		if (checkpoint.v < 4 && data.parent) {
			// Checkpoints before format 4 kept the sends in their parent's writes (LangGraph's migration).
			const sends = orderedWrites(data.parent, known).filter((write) => write.item.channel === TASKS);
			values[TASKS] = await Promise.all(sends.map((write) => this.load(write.item.type, write.item.data)));
			const versions = Object.values(checkpoint.channel_versions);
			checkpoint.channel_versions = {
				...checkpoint.channel_versions,
				[TASKS]: versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined),
			};
		}
		const pendingWrites: CheckpointPendingWrite[] = await Promise.all(
			orderedWrites(entry.id, known).map(
				async (write): Promise<CheckpointPendingWrite> => [write.taskId, write.item.channel, await this.load(write.item.type, write.item.data)],
			),
		);
		const tuple: CheckpointTuple = {
			config: configOf(thread, entry.id),
			checkpoint,
			metadata: loaded.metadata ?? (await this.load<CheckpointMetadata>(data.metadata_type, data.metadata)),
			pendingWrites,
		};
		if (data.parent) tuple.parentConfig = configOf(thread, data.parent);
		return tuple;
	}

	// Writing

	override async put(
		config: RunnableConfig,
		checkpoint: Checkpoint,
		metadata: CheckpointMetadata,
		newVersions: ChannelVersions,
	): Promise<RunnableConfig> {
		const thread = requireThread(config, "put");
		const { sid } = thread;
		const parent: string | undefined = config.configurable?.checkpoint_id || undefined;
		const { channel_values: values, ...rest } = checkpoint;
		// Serialized now, as the caller gave them; written in call order.
		const serialized = Promise.all([this.serde.dumpsTyped(rest), this.serde.dumpsTyped(metadata), this.blobs(values, newVersions)]);
		serialized.catch(() => undefined);
		await this.order.run(sid, async () => {
			const [session, [[type, bytes], [metadataType, metadataBytes], blobs]] = await Promise.all([this.session(thread), serialized]);
			const parentIndex = parent === undefined || session.created ? undefined : await this.indexOf(sid, parent);
			const channels: ChannelIndex = {};
			for (const [channel, version] of Object.entries(checkpoint.channel_versions)) {
				const v = String(version);
				const inherited = parentIndex?.[channel];
				if (blobs[channel]?.version === v) channels[channel] = [v, checkpoint.id];
				else if (inherited?.[0] === v) channels[channel] = inherited;
			}
			const data: CheckpointData = {
				type,
				checkpoint: b64(bytes),
				metadata_type: metadataType,
				metadata: b64(metadataBytes),
				parent: parent ?? null,
				blobs,
				channels,
			};
			const entry = {
				type: "custom",
				customType: CHECKPOINT_TYPE,
				id: checkpoint.id,
				parentId: parentIndex === undefined ? null : (parent ?? null),
				timestamp: now(),
				data,
			};
			if (await this.appendOnce(sid, entry)) {
				this.remember(sid, checkpoint.id, channels);
				await this.keepLatest(sid, session.leaf, checkpoint.id);
			}
			await this.order.release(sid, checkpoint.id);
		});
		return configOf(thread, checkpoint.id);
	}

	override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
		const thread = requireThread(config, "putWrites");
		const checkpointId: unknown = config.configurable?.checkpoint_id;
		if (typeof checkpointId !== "string" || checkpointId === "") {
			throw new TypeError('putWrites: the config has no "configurable.checkpoint_id"');
		}
		if (writes.length === 0) return;
		const { sid } = thread;
		const serialized = Promise.all(
			writes.map(async ([channel, value], idx): Promise<WriteItem> => {
				const [type, bytes] = await this.serde.dumpsTyped(value);
				const special = Object.hasOwn(WRITES_IDX_MAP, channel) ? WRITES_IDX_MAP[channel] : undefined;
				return { idx: special ?? idx, channel, type, data: b64(bytes) };
			}),
		);
		serialized.catch(() => undefined);
		/**
		 * Appends the writes under their checkpoint, or without a parent. Beside the conversation:
		 * the leaf stays on the latest checkpoint, even one another process put meanwhile.
		 */
		const append = async (underCheckpoint: boolean): Promise<void> => {
			const data: WritesData = { checkpoint_id: checkpointId, task_id: taskId, task_path: taskPath, writes: await serialized };
			const entry: WireEntry = {
				type: "custom",
				customType: WRITES_TYPE,
				id: `${checkpointId}~w${randomBytes(6).toString("hex")}`,
				parentId: underCheckpoint ? checkpointId : null,
				timestamp: now(),
				data,
			};
			await this.client.appendExact(sid, entry, { keepLeaf: true });
		};
		const waiting = await this.order.run(sid, async () => {
			const session = await this.session(thread);
			if (!session.created && (await this.indexOf(sid, checkpointId)) !== undefined) {
				await append(true);
				return undefined;
			}
			// The checkpoint's put has not been stored yet (LangGraph runs them side by side).
			return { appended: this.order.park(sid, checkpointId, (under) => append(under)) };
		});
		await waiting?.appended;
	}

	override async deleteThread(threadId: string): Promise<void> {
		const doomed: string[] = [];
		for await (const sid of this.sessionIds(threadPrefix(String(threadId)))) doomed.push(sid);
		for (const sid of doomed) {
			await this.order.run(sid, async () => {
				try {
					await this.client.deleteSession(sid);
				} catch (error) {
					if (!isGroveError(error, "not_found")) throw error;
				}
				this.forget(sid);
			});
		}
	}

	// Storage

	/** The values of the channels this checkpoint changed, serialized (`empty`: no value). */
	private async blobs(values: Record<string, unknown>, newVersions: ChannelVersions): Promise<Record<string, Blob>> {
		const blobs: Record<string, Blob> = {};
		await Promise.all(
			Object.entries(newVersions).map(async ([channel, version]) => {
				const value = Object.hasOwn(values, channel) ? values[channel] : undefined;
				if (value === undefined) {
					blobs[channel] = { version: String(version), type: "empty", data: "" };
					return;
				}
				const [type, bytes] = await this.serde.dumpsTyped(value);
				blobs[channel] = { version: String(version), type, data: b64(bytes) };
			}),
		);
		return blobs;
	}

	/** The session's leaf, creating the session (with its LangGraph header metadata) when missing. */
	private async session(thread: Thread): Promise<SessionState> {
		const { sid } = thread;
		try {
			return { created: false, leaf: (await this.client.getSession(sid)).leaf };
		} catch (error) {
			if (!isGroveError(error, "not_found")) throw error;
		}
		this.forget(sid);
		const metadata = { langgraph: { thread_id: thread.threadId, checkpoint_ns: thread.checkpointNs } };
		try {
			await this.client.createSession({ id: sid, metadata });
			return { created: true, leaf: null };
		} catch (error) {
			// Another writer created it meanwhile (`invalid_argument`: the id is in use).
			if (!isGroveError(error, "invalid_argument")) throw error;
			return { created: false, leaf: (await this.client.getSession(sid)).leaf };
		}
	}

	/**
	 * Appends an exact entry; false when an entry of its id is already stored (a checkpoint put
	 * twice), which is kept as it is.
	 */
	private async appendOnce(sid: string, entry: WireEntry): Promise<boolean> {
		try {
			await this.client.appendExact(sid, entry);
			return true;
		} catch (error) {
			if (isGroveError(error, "invalid_argument") && (await this.entry(sid, entry.id)) !== undefined) return false;
			throw error;
		}
	}

	/** After appending under `checkpointId`: the leaf goes back if it named a newer checkpoint. */
	private async keepLatest(sid: string, leafBefore: string | null, checkpointId: string): Promise<void> {
		if (leafBefore !== null && checkpointId < checkpointOfLeaf(leafBefore)) await this.client.setLeaf(sid, leafBefore);
	}

	/** The channel index of a checkpoint of the session, or undefined when it is not there. */
	private async indexOf(sid: string, checkpointId: string): Promise<ChannelIndex | undefined> {
		const key = `${sid}\n${checkpointId}`;
		const cached = this.indexes.get(key);
		if (cached !== undefined) {
			this.indexes.delete(key);
			this.indexes.set(key, cached);
			return cached;
		}
		const entry = await this.entry(sid, checkpointId);
		return isCheckpointEntry(entry) ? this.remember(sid, checkpointId, entry.data.channels ?? {}) : undefined;
	}

	private remember(sid: string, checkpointId: string, index: ChannelIndex): ChannelIndex {
		const key = `${sid}\n${checkpointId}`;
		this.indexes.delete(key);
		this.indexes.set(key, index);
		if (this.indexes.size > this.cacheSize) {
			const oldest = this.indexes.keys().next();
			if (!oldest.done) this.indexes.delete(oldest.value);
		}
		return index;
	}

	/** Drops what is remembered of a session (deleted, or found missing). */
	private forget(sid: string): void {
		const prefix = `${sid}\n`;
		for (const key of [...this.indexes.keys()]) if (key.startsWith(prefix)) this.indexes.delete(key);
	}

	/** An entry of the session, or undefined when there is no such entry or session. */
	private async entry(sid: string, id: string): Promise<WireEntry | undefined> {
		try {
			return await this.client.getEntry(sid, id);
		} catch (error) {
			if (isGroveError(error, "not_found")) return undefined;
			throw error;
		}
	}

	/** The children of an entry; none when the entry or the session is not there. */
	private async children(sid: string, id: string): Promise<WireEntry[]> {
		try {
			return await this.client.children(sid, id);
		} catch (error) {
			if (isGroveError(error, "not_found")) return [];
			throw error;
		}
	}

	/** The session's entries by id in log order; none when the session is not there. */
	private async sessionEntries(sid: string): Promise<Known> {
		const known: Known = new Map();
		try {
			for await (const entry of this.client.iterEntries(sid)) known.set(entry.id, entry);
		} catch (error) {
			if (!isGroveError(error, "not_found")) throw error;
		}
		return known;
	}

	/** The ids of the sessions starting with `prefix`, in id order, page by page. */
	private async *sessionIds(prefix: string): AsyncGenerator<string> {
		// `after` is exclusive, and the root namespace's session id is the thread prefix itself.
		let after: string | null = prefix.slice(0, -1);
		while (after !== null) {
			const page = await this.client.listSessions({ after, limit: 1000 });
			for (const { id } of page.sessions) {
				if (id.startsWith(prefix)) yield id;
				else if (id > prefix) return;
			}
			after = page.next;
		}
	}

	/** The threads `list` reads: one session when thread and namespace are given, else a scan. */
	private async *threads(threadId: string | undefined, ns: string | undefined): AsyncGenerator<Thread> {
		if (threadId !== undefined && ns !== undefined) {
			yield threadOf(threadId, ns);
			return;
		}
		for await (const sid of this.sessionIds(threadId === undefined ? "lg-" : threadPrefix(threadId))) {
			const parsed = threadOfSessionId(sid);
			if (parsed === undefined || (ns !== undefined && parsed.checkpointNs !== ns)) continue;
			yield threadOf(parsed.threadId, parsed.checkpointNs);
		}
	}

	private load<T>(type: string, data: string): Promise<T> {
		return this.serde.loadsTyped(type, unb64(data)) as Promise<T>;
	}
}

/** The checkpoint entries of a session, the greatest id first (LangGraph's newest first). */
function checkpointsNewestFirst(known: Known): CheckpointEntry[] {
	const found = [...known.values()].filter(isCheckpointEntry);
	return found.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/**
 * The blob of every channel of the checkpoint's `channel_versions`, found in `known` through
 * the checkpoint's index; with `whole` (`known` is the whole session), a channel the index misses
 * is searched on the checkpoint's ancestors, then anywhere, and one found nowhere has no value.
 * Undefined when the index misses and `known` is not the whole session.
 */
function blobsOf(checkpoint: Checkpoint, entry: CheckpointEntry, known: Known, whole: boolean): Map<string, Blob> | undefined {
	const found = new Map<string, Blob>();
	for (const [channel, version] of Object.entries(checkpoint.channel_versions)) {
		const v = String(version);
		const blob = indexedBlob(entry, channel, v, known) ?? (whole ? searchedBlob(entry, channel, v, known) : undefined);
		if (blob !== undefined) found.set(channel, blob);
		else if (!whole) return undefined;
	}
	return found;
}

function heldBlob(entry: WireEntry | undefined, channel: string, version: string): Blob | undefined {
	if (!isCheckpointEntry(entry) || !Object.hasOwn(entry.data.blobs, channel)) return undefined;
	const blob = entry.data.blobs[channel];
	return blob?.version === version ? blob : undefined;
}

function indexedBlob(entry: CheckpointEntry, channel: string, version: string, known: Known): Blob | undefined {
	const channels = entry.data.channels ?? {};
	const located = Object.hasOwn(channels, channel) ? channels[channel] : undefined;
	if (located === undefined || located[0] !== version) return undefined;
	return heldBlob(known.get(located[1]), channel, version);
}

function searchedBlob(entry: CheckpointEntry, channel: string, version: string, known: Known): Blob | undefined {
	const seen = new Set<string>();
	for (let at: WireEntry | undefined = entry; at !== undefined && !seen.has(at.id); at = at.parentId === null ? undefined : known.get(at.parentId)) {
		seen.add(at.id);
		const blob = heldBlob(at, channel, version);
		if (blob !== undefined) return blob;
	}
	for (const other of known.values()) {
		const blob = heldBlob(other, channel, version);
		if (blob !== undefined) return blob;
	}
	return undefined;
}

interface OrderedWrite {
	key: WritesSortKey;
	taskId: string;
	item: WriteItem;
}

/**
 * The writes of a checkpoint (its writes children in `known`), deduplicated by `(task_id, idx)`
 * (the first wins for `idx >= 0`, the last for the special channels), in `writesSortKey` order.
 */
function orderedWrites(checkpointId: string, known: Known): OrderedWrite[] {
	const kept = new Map<string, OrderedWrite>();
	for (const entry of known.values()) {
		if (!isWritesEntry(entry) || entry.parentId !== checkpointId || entry.data.checkpoint_id !== checkpointId) continue;
		const { task_id: taskId, task_path: taskPath } = entry.data;
		for (const item of entry.data.writes) {
			const key = JSON.stringify([taskId, item.idx]);
			if (item.idx >= 0 && kept.has(key)) continue;
			kept.set(key, { key: writesSortKey(taskPath ?? "", taskId, item.idx), taskId, item });
		}
	}
	return [...kept.values()].sort((a, b) => compareWritesSortKeys(a.key, b.key));
}
