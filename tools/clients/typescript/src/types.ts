/**
 * The JSON values of the wire (docs/api.md). Entries are pi's objects, kept loose here: the
 * client carries them as the server stores them; `src/pi.ts` gives them pi's types.
 */

/** A stored entry or leaf record: pi's JSON object, `{type, id, parentId, timestamp, ...}`. */
export interface WireEntry {
	type: string;
	id: string;
	parentId: string | null;
	timestamp: string;
	[field: string]: unknown;
}

/**
 * A new entry: an entry object with a `type` (parentId and timestamp set by grove; its `id`, when
 * given, is the entry's id, else grove makes one) or a message with a `role` (its id is
 * `AppendOptions.id`). An append that names an id is retry-safe: sent again after a lost answer,
 * it is answered as the first time when the id already holds the same entry, and nothing is
 * written; another entry under the id is `invalid_argument`.
 */
export type NewEntry = { type: string; [field: string]: unknown } | { role: string; [field: string]: unknown };

/**
 * What `POST /v1/gc` did: the payloads no session references, removed with their blake3 and size;
 * redactions finished; the search index compacted.
 */
export interface GcReport {
	payloads: number;
	payloadBytes: number;
	referenced: number;
	removed: { hash: string; bytes: number }[];
	removedBytes: number;
	/** Redactions a crash left recorded but unwritten, applied now. */
	redactionsApplied: number;
	/**
	 * A redaction was made since the store's files were last rewritten: the backend's free space
	 * may still hold its bytes until `grove gc` runs with the server stopped.
	 */
	rewriteDue: boolean;
	/** Whether the search index was rewritten without deleted documents. */
	searchCompacted: boolean;
	/** Catalogue index rows of sessions no longer listed, removed. */
	catalogueRowsRemoved: number;
	/** The backend rewrote its storage in place for a redaction (PostgreSQL: `VACUUM FULL`). */
	backendCompacted: boolean;
	/** What `gc({ rewrite: true })` rewrote of the store's files; null when nothing. */
	rewritten: { keys: number; bytesBefore: number; bytesAfter: number } | null;
}

export interface Health {
	/** False once a failed write made the store refuse writes. */
	ok: boolean;
	backend: string;
	durability: string;
	version: string;
	/** Why the store refuses writes, or null. */
	poisoned: string | null;
	/** Statements this node sent to its database server (null: an embedded store). */
	roundTrips: number | null;
}

export interface VerifyReport {
	sessions: number;
	records: number;
	/** Records whose lines a recorded redaction explains (not problems). */
	redacted: number;
	problems: string[];
	ok: boolean;
}

export interface SessionSummary {
	id: string;
	created: string;
	cwd: string;
	entries: number;
	parentSessionId: string | null;
	parentSession: string | null;
}

export interface SessionDetails extends SessionSummary {
	metadata: Record<string, unknown> | null;
	leaf: string | null;
	name: string | null;
}

export interface SessionPage {
	sessions: SessionSummary[];
	next: string | null;
}

/**
 * `listSessions`'s page and filters (`GET /v1/sessions`). Every filter given must hold; a time
 * is a time (`2026-12-01`, `2026-12-01T10:00:00Z`) or how long ago (`90s`, `30m`, `12h`, `7d`,
 * `2w`), and one that does not read is `invalid_argument` naming it.
 */
export interface ListSessionsOptions {
	/** The cursor: the page starts after this id (before it with `order: "desc"`); a page's `next`. */
	after?: string;
	/** At most this many sessions (default 1000). */
	limit?: number;
	/** Id order (the default, `asc`), or from the last (`desc`: newest first for grove's UUIDv7 ids). */
	order?: "asc" | "desc";
	/** The working directory, exactly. */
	cwd?: string;
	/** Text the session's name contains, case-insensitive. */
	name?: string;
	/** An entry of the session carries exactly this label. */
	label?: string;
	/** Created at or after this time. */
	createdAfter?: string;
	/** Created before this time. */
	createdBefore?: string;
	/** Last active (its last record's timestamp, else its creation) at or after this time. */
	updatedAfter?: string;
	/** Last active before this time. */
	updatedBefore?: string;
}

export interface CreateSessionOptions {
	id?: string;
	cwd?: string;
	metadata?: Record<string, unknown>;
	parentSession?: string;
}

export interface ImportResult {
	/** The session id (the header's). */
	session: string;
	entries: number;
	leafRecords: number;
	leaf: string | null;
	duplicateIds: string[];
	warnings: unknown[];
}

export type ExportFlavor = "harness" | "cli" | "claude-code" | "codex" | "pi-lanes" | "pi-commits";

export type ForkMode = "path" | "rechained" | "copy";

export interface ForkOptions {
	entryId?: string;
	position?: "before" | "at";
	mode?: ForkMode;
	id?: string;
	cwd?: string;
	metadata?: Record<string, unknown>;
}

export interface AppendOptions {
	id?: string;
	timestamp?: string;
}

/** An entry with the digests that prove it (`GET .../entries/{eid}/proof`), hex. */
export interface EntryProof {
	entry: WireEntry;
	seq: number;
	depth: number;
	/** blake3 of the entry's stored line. */
	digest: string;
	/** The chain digest: authenticates every line on the entry's path to the root. */
	pathDigest: string;
	/** The parent's chain digest (64 zeros for a root). */
	parentPathDigest: string;
}

/** One item of `GroveClient.appendBatch`: an append to `session` (`POST /v1/appends`). */
export interface BatchAppend extends AppendOptions {
	session: string;
	entry: NewEntry;
}

/** The result of one item of `appendBatch`: the new entry's id, or why it was not appended. */
export type BatchResult = { id: string } | { code: string; message: string; status: number };

export type AppendIfResult = { appended: true; id: string } | { appended: false; leaf: string | null };

export interface Cursor {
	/** Skip this many (0-based index of the first one returned). */
	after?: number;
	/** Return at most this many. */
	limit?: number;
}

export interface LogCursor extends Cursor {
	/** Only entries (or leaf records) of this type. */
	type?: string;
}

export type ContextPreset = "grove" | "harness" | "cli";

/**
 * A point in time of a session: as it stood after operation `op`, or at `time` (RFC 3339: after
 * the last operation committed at or before it). Sent as `atOp` / `atTime`.
 */
export type PointInTime = { op: number } | { time: string };

export interface ContextOptions {
	preset?: ContextPreset;
	/** Build the context as if this entry were the leaf. */
	leaf?: string;
	/** The context as the session stood then (at the leaf it had then); not with `leaf`. */
	at?: PointInTime;
}

/** Options of `branch` and `path`. */
export interface PathOptions {
	/** Start at this entry instead of the leaf. */
	from?: string;
	/** As the session stood then (from the leaf it had then); not with `from`. */
	at?: PointInTime;
}

export interface Context {
	messages: unknown[];
	model: { provider: string; modelId: string } | null;
	thinkingLevel: string;
	activeToolNames: string[] | null;
}

export interface TreeNode {
	id: string;
	parentId: string | null;
	type: string;
	onActivePath: boolean;
	children: number[];
	label: string | null;
}

export interface Tree {
	nodes: TreeNode[];
	roots: number[];
}

export interface Stats {
	messageCount: number;
	cachedTokens: number;
	uncachedTokens: number;
	totalTokens: number;
	costTotal: number;
}

export interface LeafMove {
	leaf: string | null;
}

export interface LeafHistoryItem {
	id: string;
	target: string | null;
}

/** What an operation was; a newer server may name kinds not listed here. */
export type OperationKind =
	| "legacy"
	| "append"
	| "append_many"
	| "move"
	| "navigate"
	| "summary"
	| "label"
	| "name"
	| "import"
	| "fork"
	| "undo"
	| "redact"
	| (string & {});

/** One change of a session (`GET .../operations`, `POST .../undo`), as `grove log --json` writes it. */
export interface Operation {
	/** Its number: 0 for the session's first operation, counting up. */
	op: number;
	kind: OperationKind;
	/** When it was committed (`toISOString` form); null for a `legacy` operation without a time. */
	time: string | null;
	/** The same time in ms since the Unix epoch. */
	timeMs: number | null;
	/** Who made it (the `Grove-Client` of the request, `server` without one); null for `legacy`. */
	actor: string | null;
	/** The leaf before it (null: the root position). */
	leafBefore: string | null;
	/** The leaf after it. */
	leafAfter: string | null;
	/** How many log records it wrote. */
	records: number;
	/** The sequence number of its first record. */
	firstSeq: number;
	firstId: string;
	lastId: string;
}

/** What `GET .../replay` (`grove replay`) yields: first a start, then each operation and its records. */
export type ReplayEvent = ReplayStart | ReplayOperation | ReplayRecord;

/** The session before the first replayed operation. */
export interface ReplayStart {
	type: "start";
	/** The first replayed operation. */
	op: number;
	/** Its first record's sequence number. */
	seq: number;
	/** The leaf then (null: the root position). */
	leaf: string | null;
	/** The context then. */
	context: Context;
}

/** An operation begins; its records follow. */
export interface ReplayOperation {
	type: "operation";
	op: number;
	kind: OperationKind;
	time: string | null;
	timeMs: number | null;
	actor: string | null;
	firstSeq: number;
	leafBefore: string | null;
}

/** One record, with the change it made to the context (what the model sees). */
export interface ReplayRecord {
	type: "record";
	/** The operation that wrote it. */
	op: number;
	seq: number;
	id: string;
	/** The leaf after it. */
	leaf: string | null;
	/** The record as stored (an entry, or a `leaf` record). */
	entry: WireEntry;
	context: ContextChange;
}

/**
 * The change one record makes to the context: keep the first `keep` messages, then append
 * `append`; a setting is present only when it changed. `applyContextChange` applies it.
 */
export interface ContextChange {
	keep: number;
	append: unknown[];
	/** The number of messages after the change. */
	messages: number;
	model?: { provider: string; modelId: string } | null;
	thinkingLevel?: string;
	activeToolNames?: string[] | null;
}

/** A session's seal: a digest of its header, records and operation stamps (`GET .../seal`). */
export interface Seal {
	/** 64 hex digits. */
	digest: string;
	/** Records covered. */
	records: number;
	/** Operations covered. */
	operations: number;
}

/**
 * Whether a session still extends a seal: its history up to some operation is exactly what was
 * sealed (`operations` and `records` are what the seal covers), or no prefix of it is.
 */
export type SealCheck = { extends: true; operations: number; records: number } | { extends: false };

/** What `redact` takes besides the entry: where, and why. */
export interface RedactOptions {
	/**
	 * A JSON pointer to the value redacted (`/message/content/0/text`); without it, the entry's
	 * whole content. Never what the tree reads (`/id`, `/type`, `/parentId`, `/timestamp`, a
	 * message's `/message/role`, …).
	 */
	path?: string;
	/** Why (not empty), kept with the redaction. */
	reason: string;
}

/**
 * A redaction (`POST .../redact`, `GET .../redactions`), as `grove redact --json` writes it: the
 * values at `paths` of entry `entryId` read as `"[redacted]"` from then on, their bytes gone
 * from the log.
 */
export interface Redaction {
	/** The redacted entry. */
	entryId: string;
	/** The JSON pointers redacted (the entry's whole content: its content's pointer). */
	paths: string[];
	reason: string;
	/** blake3 (hex) of the removed values. */
	removed: string;
	/** blake3 (hex) of the entry's line before this redaction. */
	before: string;
	/** blake3 (hex) of its line after. */
	after: string;
	/** The id of the leaf record that records it (a leaf record that leaves the leaf where it is). */
	recordId: string;
	/** Who made it (the operation's actor). */
	actor: string | null;
	/** When, in ms since the Unix epoch. */
	timeMs: number | null;
}

/**
 * One rule of a `RetentionPolicy`: it selects the sessions whose id starts with `prefix` (every
 * session without one) for which every condition it gives holds. At least one of `olderThan`,
 * `largerThan` and `keepNewest` is needed (`invalid_argument` otherwise).
 */
export interface RetentionRule {
	/** Only sessions whose id starts with this. */
	prefix?: string;
	/**
	 * Last activity (the timestamp of the session's last record, else its creation) older than
	 * an age (`30d`, `12h`, `90m`) or before a time (`2026-01-01`, RFC 3339).
	 */
	olderThan?: string;
	/** The session's pi JSONL export larger than this: bytes, or `"10KB"`, `"5MB"`, `"1GB"` (powers of 1024). */
	largerThan?: number | string;
	/** Beyond the newest N of the rule's sessions, by last activity. */
	keepNewest?: number;
	/** Spare the sessions that have a label (default true). */
	spareLabelled?: boolean;
}

/**
 * A retention policy (`POST /v1/retain`): a session any rule selects goes, unless it is pinned
 * (`setPinned`) or has a label (for rules that spare labelled sessions, the default). A policy
 * sent to the server archives nothing (an `archive` member is `invalid_argument`): archiving is
 * the server's own policy (`grove serve --retain FILE`) or `grove retain --apply --archive DIR`.
 */
export interface RetentionPolicy {
	rules: RetentionRule[];
}

/** One session a retention plan names. */
export interface RetentionItem {
	session: string;
	/** Its pi JSONL export's bytes. */
	bytes: number;
	entries: number;
	/** Its last activity (RFC 3339), or null when unknown. */
	lastActivity: string | null;
	/** Why it was selected: per rule that selected it, `rule N: ` and the conditions it met. */
	reasons: string[];
	/** Why it stays although selected: `pinned` or `labelled`; null when it goes. */
	spared: "pinned" | "labelled" | null;
}

/** What a retention policy removes now (`retentionPlan`); nothing is changed. */
export interface RetentionPlan {
	/** The sessions that go. */
	remove: RetentionItem[];
	/** The sessions selected but spared (pinned or labelled). */
	spared: RetentionItem[];
	/** Bytes of the sessions that go (their exports). */
	bytes: number;
}

/** What an applied retention run did (`retain`): its plan, and what became of each session. */
export interface RetentionRun extends RetentionPlan {
	/** Its number in the store's operation log (`retentionLog`). */
	op: number;
	/** Each session removed, with the archive written for it (null: none). */
	removed: { session: string; archive: string | null }[];
	/** Each session that could not be removed (it stays), and why. */
	failed: { session: string; error: string }[];
}

/**
 * One operation of the store's operation log (`GET /v1/retain/log`): a retention run, recorded
 * `started` (with its plan) before anything is deleted and `done` once it finished.
 */
export interface StoreOperation {
	/** Its number, from 0. */
	op: number;
	kind: "retain" | (string & {});
	/** When it began (RFC 3339). */
	time: string;
	/** Who made it: the client's name (`server` without one), or `retention` for the server's schedule. */
	actor: string;
	/** `started` (still running, or interrupted by a crash) or `done`. */
	status: "started" | "done" | (string & {});
	/**
	 * What it did: `plan` (`remove`, `spared`, `bytes`, `nowMs`; each item with
	 * `lastActivityMs`), `archive` (`{dir, format}` or null) and, once done, `removed` and `failed`.
	 */
	detail: StoreOperationDetail;
}

/** The `detail` of a retention run in the store's operation log. */
export interface StoreOperationDetail {
	plan?: {
		remove: StoreOperationItem[];
		spared: StoreOperationItem[];
		bytes: number;
		/** The time the plan was made for, in ms since the Unix epoch. */
		nowMs: number;
	};
	archive?: { dir: string; format: string } | null;
	removed?: { session: string; archive: string | null }[];
	failed?: { session: string; error: string }[];
	[field: string]: unknown;
}

/** A `RetentionItem` as the operation log keeps it: the last activity in ms since the Unix epoch. */
export interface StoreOperationItem extends Omit<RetentionItem, "lastActivity"> {
	lastActivityMs: number | null;
}

/** Whether a session is pinned (`PUT .../pin`): retention spares a pinned session. */
export interface PinState {
	session: string;
	pinned: boolean;
}

/** What `search` looks for besides the text (`GET /v1/search`). */
export interface SearchOptions {
	/** Only this session's entries (`not_found` when there is no such session). */
	session?: string;
	/** Only entries of these types (`message`, `compaction`, `custom`, …) or message roles (`user`, `assistant`, `toolResult`, …). */
	types?: readonly string[];
	/** Only entries whose `timestamp` is at or after a time (`2026-12-01`, RFC 3339) or a duration before now (`90s`, `30m`, `12h`, `7d`, `2w`). */
	since?: string;
	/** At most this many hits, 1 to 1000 (default 20). */
	limit?: number;
	/**
	 * Aborting rejects the search with the signal's `reason`. Over HTTP the request is cut off;
	 * in this process a search already running runs to its end, its answer dropped.
	 */
	signal?: AbortSignal;
}

/** One entry whose text matched, as `grove search --json` prints it. */
export interface SearchHit {
	session: string;
	/** The entry's id. */
	entry: string;
	/** Its place in the session's log (0 for the first record). */
	seq: number;
	/** The entry's `type`. */
	type: string;
	/** A message's role, else null. */
	role: string | null;
	/** The entry's `timestamp`, or null when it has none. */
	timestamp: string | null;
	/** BM25: higher is better. */
	score: number;
	/** Whether the entry is on its session's active path. */
	active: boolean;
	/** Up to 160 characters of the entry's text around the best match. */
	snippet: string;
	/** `snippet` as HTML: `<mark>` around each match, the rest escaped. */
	marked: string;
	/** The matches' `[start, end)` byte offsets in `snippet`'s UTF-8. */
	highlights: [number, number][];
}

/** What `search` found, best first. */
export interface SearchResults {
	hits: SearchHit[];
	/** Every match (the hits are the first `limit` of them). */
	total: number;
	/** Entries the index took in before this search. */
	indexed: number;
}
