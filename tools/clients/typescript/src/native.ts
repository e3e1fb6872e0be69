/**
 * grove in this process: `openStore(dir)` opens the store with the native addon (napi-rs,
 * `native/`, built by `npm run build:native`) and returns a `GroveClient` over it, with the
 * same methods, types and errors as a client of `grove serve`: the addon answers every route of
 * docs/api.md by the server's own route table, without a socket or HTTP.
 *
 * A store belongs to one process; within it, clients opened on the same directory share it.
 * When another process holds it, `openStore` fails with a `locked` `GroveError` naming the
 * holder, unless that holder is a running `grove serve` (its `serve.json` in the store
 * directory names its socket) and `fallback` is `"server"` (the default): then the client
 * returned talks to that server, so the same code runs in one process and in many.
 * `client.where` says which it is (`in-process:DIR` or `unix:PATH`).
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { checkName, GroveClient } from "./client.js";
import { GroveError } from "./errors.js";
import {
	type Answer,
	buildPath,
	type ClientTransport,
	errorFrom,
	errorOf,
	readJson,
	type RequestOptions,
} from "./transport.js";

/** How `openStore` opens a store. */
export interface OpenStoreOptions {
	/** `"sync"` (the default: each write is on disk when acknowledged), `"group"` (as sync, one flush shared by concurrent writers) or `"none"`. */
	durability?: "sync" | "group" | "none";
	/** `"sled"` (the default) or `"redb"`; a store keeps the backend it was made with. */
	backend?: "sled" | "redb";
	/** The backend's page cache, in bytes. */
	cacheBytes?: number;
	/** Values of at least this many bytes are stored once as payloads; 0 stores lines whole. */
	payloadThreshold?: number;
	/** How long to wait for another process holding the store, in seconds (default 0). */
	lockWaitSeconds?: number;
	/** Open to read only. */
	readOnly?: boolean;
	/** Who this client is, stamped on its operations (as `GroveClientOptions.name`); `embedded` without one. */
	name?: string;
	/**
	 * When a `grove serve` holds the store: `"server"` (the default) connects to it, `"error"`
	 * fails with `locked`.
	 */
	fallback?: "server" | "error";
	/**
	 * Whether a read whose answer is one JSON value (`leaf`, `getEntry`, `context`, `tree`, …)
	 * runs on node's thread (the default: a small read takes microseconds, less than going to
	 * another thread and back), or, `false`, off it like every other call. Writes, streamed
	 * reads and searches (which first index what was written since the last one, seconds for
	 * a large import) never run on node's thread.
	 */
	inlineReads?: boolean;
}

interface NativeReply {
	readonly status: number;
	readonly contentType: string | null;
	takeFirst(): Buffer | null;
	read(): Promise<Buffer | null>;
	cancel(): void;
}

interface NativeUpload {
	write(piece: Buffer): Promise<boolean>;
	fail(why: string): Promise<void>;
	finish(): Promise<NativeReply>;
}

/**
 * A large JSON-lines answer of `requestSync`, read on the store's threads while this one takes
 * it: `next` is the next chunk's lines as one JSON array, in text (as `requestSync`'s) or made
 * by the addon (a chunk of long strings), `null` at the end; it throws where the reading
 * failed or broke off.
 */
interface NativeChunks {
	next(): string | unknown[] | null;
}

interface NativeStore {
	/**
	 * The whole body (JSON; with `lines`, a JSON-lines body made one array) as text of ASCII
	 * only (characters past it escaped); an error status throws `answer STATUS: BODY` (see
	 * `answerError`). A large answer made mostly of long strings comes as its value (an array
	 * or an object), made by the addon, instead of text. With `lines`, an answer the route
	 * knows to be large (a branch or path of 512 entries or more) comes as its chunks.
	 */
	requestSync(method: string, target: string, headers: string[], body?: string | null, lines?: boolean): string | object | NativeChunks;
	/** `requestSync` run on a thread of node's pool. */
	requestWhole(method: string, target: string, headers: string[], body?: string | null, lines?: boolean): Promise<string | object>;
	request(method: string, target: string, headers: string[], body?: Buffer | null): Promise<NativeReply>;
	upload(method: string, target: string, headers: string[]): NativeUpload;
	close(): void;
}

interface NativeModule {
	NativeStore: { open(path: string, options?: Omit<OpenStoreOptions, "name" | "fallback" | "inlineReads">): NativeStore };
	NativeChunks: abstract new () => NativeChunks;
	answersMadeHere(): [number, number];
	answersTakenInChunks(): number;
}

let loaded: NativeModule | undefined;

/** The addon, from `native/` of this package (built by `npm run build:native`). */
function addon(): NativeModule {
	if (loaded) return loaded;
	const require = createRequire(import.meta.url);
	// From src/ (run by a TypeScript loader) and from dist/src/ (the built package).
	const candidates = ["../native/index.cjs", "../../native/index.cjs"].map((p) =>
		fileURLToPath(new URL(p, import.meta.url)),
	);
	const found = candidates.find((p) => existsSync(p));
	if (!found) {
		throw new GroveError(
			"unavailable",
			0,
			`grove's native addon is not built (looked for ${candidates.join(" and ")}): run \`npm run build:native\` in the package, or install the package from its packed tarball`,
		);
	}
	loaded = require(found) as NativeModule;
	return loaded;
}

/**
 * How many answers this process got as values the addon made (a large answer of long strings)
 * rather than as text for `JSON.parse`, parsed whole and in pieces (a context whose long
 * messages came apart): a diagnostic, for the tests.
 */
export function answersMadeByTheAddon(): { whole: number; piecewise: number } {
	const [whole, piecewise] = addon().answersMadeHere();
	return { whole, piecewise };
}

/**
 * How many JSON-lines answers this process took chunk by chunk (walks of 512 entries or more,
 * parsed while the addon read on): a diagnostic, for the tests.
 */
export function answersTakenInChunks(): number {
	return addon().answersTakenInChunks();
}

/** A `GroveError` from the addon's `code: message` errors. */
function nativeError(error: unknown, where: string): GroveError {
	const message = error instanceof Error ? error.message : String(error);
	const match = /^([a-z_]+): ([\s\S]*)$/.exec(message);
	if (!match) return new GroveError("transport", 0, `${where}: ${message}`, { cause: error });
	return new GroveError(match[1] as string, 0, match[2] as string, { cause: error });
}

/**
 * A whole answer (a status below 400): its text, or its value already made by the addon,
 * and the request it answers (`METHOD target at where`).
 */
interface Whole {
	text: string | object | NativeChunks;
	what: string;
}

/** Whether `path` is the search route's, which may index before it answers (never inline). */
function isSearch(path: string): boolean {
	return path === "/v1/search" || path.startsWith("/v1/search?");
}

/** What a whole-answer request sends. */
interface Prepared {
	store: NativeStore;
	target: string;
	what: string;
	headers: string[];
	body: string | null;
}

/**
 * What a whole request's failure is: the `GroveError` of its answer, when the addon threw one
 * (`answer STATUS: BODY`, an error status: the body says which), else the addon's own error.
 */
function answerError(error: unknown, method: string, target: string, what: string): GroveError {
	const message = error instanceof Error ? error.message : "";
	const answer = /^answer (\d{3}): ([\s\S]*)$/.exec(message);
	if (answer) return errorOf(method, target, Number(answer[1]), answer[2] as string);
	return nativeError(error, what);
}

/**
 * The values of a large JSON-lines answer taken chunk by chunk: each chunk is parsed here
 * while the addon reads the next one on another thread, so the answer costs about its parsing
 * rather than its reading and then its parsing.
 */
function parseChunks(chunks: NativeChunks, what: string): unknown[] {
	const values: unknown[] = [];
	for (;;) {
		let text: string | unknown[] | null;
		try {
			text = chunks.next();
		} catch (error) {
			throw nativeError(error, what);
		}
		if (text === null) return values;
		let part: unknown = text;
		try {
			if (typeof text === "string") part = JSON.parse(text);
		} catch (error) {
			throw new GroveError("invalid_response", 200, `${what}: the answer is not JSON lines: ${String(text).slice(0, 200)}`, {
				cause: error,
			});
		}
		if (!Array.isArray(part)) throw new GroveError("invalid_response", 200, `${what}: the answer is not JSON lines`);
		for (const value of part) values.push(value);
	}
}

/** The JSON value of a whole answer (`undefined` for an empty body). */
function parseWhole({ text, what }: Whole): unknown {
	if (text instanceof addon().NativeChunks) return parseChunks(text, what);
	if (typeof text !== "string") return text;
	if (text === "") return undefined;
	try {
		return JSON.parse(text);
	} catch (error) {
		throw new GroveError("invalid_response", 200, `${what}: the answer is not JSON: ${text.slice(0, 200)}`, {
			cause: error,
		});
	}
}

function bytes(data: string | Uint8Array): Buffer {
	if (typeof data === "string") return Buffer.from(data, "utf8");
	return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Sends `stream` as the body of `upload` as it is read (never held whole) and resolves with
 * the answer; a stream that fails is a `transport` error, the request's body ending broken.
 */
async function sendStream(upload: NativeUpload, stream: Readable, what: string): Promise<NativeReply> {
	try {
		for await (const chunk of stream) {
			if (!(await upload.write(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer)))) break;
		}
	} catch (error) {
		const message = error instanceof Error ? error.message : String(error);
		await upload.fail(message);
		stream.destroy();
		await upload.finish().catch(() => undefined);
		throw new GroveError("transport", 0, `${what}: reading the body failed: ${message}`, { cause: error });
	}
	stream.destroy();
	return upload.finish();
}

/** The body of a native answer as a stream: its first piece, then each `read`; leaving it early cancels the rest. */
async function* bodyPieces(reply: NativeReply): AsyncGenerator<Buffer, void, undefined> {
	let done = false;
	try {
		const first = reply.takeFirst();
		if (first === null) {
			done = true;
			return;
		}
		yield first;
		for (;;) {
			const next = await reply.read();
			if (next === null) {
				done = true;
				return;
			}
			yield next;
		}
	} finally {
		if (!done) reply.cancel();
	}
}

/** Requests to a store open in this process. */
export class InProcessTransport implements ClientTransport {
	readonly where: string;
	private store: NativeStore | undefined;
	private readonly name: string | undefined;
	private readonly dir: string;
	/** Whether closing this transport closes the store (the one `openStore` made), or only lets go of it. */
	private readonly owner: boolean;
	private readonly inlineReads: boolean;

	constructor(store: NativeStore, dir: string, name?: string, owner = true, inlineReads = true) {
		this.store = store;
		this.dir = dir;
		this.where = `in-process:${dir}`;
		this.name = name;
		this.owner = owner;
		this.inlineReads = inlineReads;
	}

	/** A transport to the same store for a client of another name; closing it leaves the store open. */
	named(name: string | undefined): InProcessTransport {
		if (!this.store) throw new GroveError("closed", 0, `${this.where}: the store was closed`);
		return new InProcessTransport(this.store, this.dir, name, false, this.inlineReads);
	}

	/**
	 * A request whose answer is one JSON value: a read on node's thread (`inlineReads`), else on
	 * a thread of node's pool, run there to its end (no stream, no further hand-over).
	 */
	json(method: string, path: string, options: RequestOptions): Promise<unknown> {
		if (options.raw) return this.send(method, path, options).then((answer) => readJson(method, path, answer));
		if (method === "GET" && this.inlineReads && !isSearch(path)) {
			// Answered before this returns: one settled promise, no trip through the event loop.
			try {
				return Promise.resolve(parseWhole(this.inline(method, path, options)));
			} catch (error) {
				return Promise.reject(error);
			}
		}
		return this.pooled(method, path, options).then(parseWhole);
	}

	/**
	 * A JSON-lines answer collected whole, as `json` runs a call: the addon makes the lines one
	 * JSON array, parsed at once.
	 */
	async jsonLines(method: string, path: string, options: RequestOptions): Promise<unknown[]> {
		const whole =
			method === "GET" && this.inlineReads
				? this.inline(method, path, options, true)
				: await this.pooled(method, path, options, true);
		const values = parseWhole(whole);
		if (!Array.isArray(values)) {
			throw new GroveError("invalid_response", 200, `${whole.what}: the answer is not JSON lines`);
		}
		return values;
	}

	/** What a whole-answer request sends: the store, the target, the headers, the body (JSON). */
	private prepare(method: string, path: string, options: RequestOptions): Prepared {
		const store = this.store;
		const target = buildPath(path, options.query);
		const what = `${method} ${target} at ${this.where}`;
		if (!store) throw new GroveError("closed", 0, `${what}: the store was closed`);
		const headers: string[] = this.name === undefined ? [] : ["grove-client", this.name];
		let body: string | null = null;
		if (options.body !== undefined) {
			body = JSON.stringify(options.body);
			headers.push("content-type", "application/json");
		}
		return { store, target, what, headers, body };
	}

	/** A request's whole answer, run on this thread; an error status is thrown as its `GroveError`. */
	private inline(method: string, path: string, options: RequestOptions, lines = false): Whole {
		const { store, target, what, headers, body } = this.prepare(method, path, options);
		try {
			return { text: store.requestSync(method, target, headers, body, lines), what };
		} catch (error) {
			throw answerError(error, method, target, what);
		}
	}

	/** A request's whole answer, run on a thread of node's pool; errors as `inline`'s. */
	private async pooled(method: string, path: string, options: RequestOptions, lines = false): Promise<Whole> {
		const { store, target, what, headers, body } = this.prepare(method, path, options);
		try {
			return { text: await store.requestWhole(method, target, headers, body, lines), what };
		} catch (error) {
			throw answerError(error, method, target, what);
		}
	}

	async send(method: string, path: string, options: RequestOptions = {}): Promise<Answer> {
		const store = this.store;
		const target = buildPath(path, options.query);
		if (!store) throw new GroveError("closed", 0, `${method} ${target} at ${this.where}: the store was closed`);
		const headers: string[] = [];
		let body: Buffer | null = null;
		let stream: Readable | undefined;
		if (options.raw) {
			if (options.raw.data instanceof Readable) stream = options.raw.data;
			else body = bytes(options.raw.data);
			headers.push("content-type", options.raw.contentType);
		} else if (options.body !== undefined) {
			body = Buffer.from(JSON.stringify(options.body), "utf8");
			headers.push("content-type", "application/json");
		}
		if (this.name !== undefined) headers.push("grove-client", this.name);
		const what = `${method} ${target} at ${this.where}`;
		let reply: NativeReply;
		try {
			reply = stream
				? await sendStream(store.upload(method, target, headers), stream, what)
				: await store.request(method, target, headers, body);
		} catch (error) {
			if (error instanceof GroveError) throw error;
			throw nativeError(error, what);
		}
		const answer: Answer = { statusCode: reply.status, body: Readable.from(bodyPieces(reply), { objectMode: false }) };
		if (answer.statusCode >= 400) throw await errorFrom(method, target, answer);
		return answer;
	}

	close(): void {
		const store = this.store;
		this.store = undefined;
		if (this.owner) store?.close();
	}
}

/** What a running `grove serve` writes in its store directory: where it listens. */
interface Serving {
	pid: number;
	socket: string;
}

/** The server holding the store at `dir`, when one says so (`serve.json`) and its process is alive. */
function serving(dir: string): Serving | undefined {
	let value: Partial<Serving>;
	try {
		value = JSON.parse(readFileSync(join(dir, "serve.json"), "utf8")) as Partial<Serving>;
	} catch {
		return undefined;
	}
	if (typeof value.socket !== "string" || typeof value.pid !== "number") return undefined;
	try {
		process.kill(value.pid, 0);
	} catch (error) {
		// EPERM: alive, another user's.
		if ((error as NodeJS.ErrnoException).code !== "EPERM") return undefined;
	}
	return value as Serving;
}

/** The stores `openStore` has open in this process, by directory, with how many clients use each. */
const opened = new Map<string, { store: NativeStore; users: number }>();

/**
 * Opens the store at `dir` in this process (made when missing) and returns a client of it.
 * Opened again in this process, the store is shared (the options of the first open hold);
 * the last client's `close()` flushes and closes it. See the module's doc for a store
 * another process holds.
 */
export function openStore(dir: string, options: OpenStoreOptions = {}): GroveClient {
	const { name, fallback = "server", inlineReads = true, ...native } = options;
	const path = resolve(dir);
	if (name !== undefined) checkName(name);
	const open = opened.get(path);
	if (open) {
		open.users += 1;
		return new GroveClient({ transport: new InProcessTransport(shared(path, open.store), path, name, true, inlineReads) });
	}
	let store: NativeStore;
	try {
		store = addon().NativeStore.open(path, native);
	} catch (error) {
		const failure = error instanceof GroveError ? error : nativeError(error, `opening ${path}`);
		const server = failure.code === "locked" && fallback === "server" ? serving(path) : undefined;
		if (!server) throw failure;
		return new GroveClient({ url: `unix:${server.socket}`, name });
	}
	opened.set(path, { store, users: 1 });
	return new GroveClient({ transport: new InProcessTransport(shared(path, store), path, name, true, inlineReads) });
}

/** `store` as one client of it sees it: its `close` closes the store when no other client uses it. */
function shared(path: string, store: NativeStore): NativeStore {
	let closed = false;
	return {
		requestSync: (method, target, headers, body, lines) => store.requestSync(method, target, headers, body, lines),
		requestWhole: (method, target, headers, body, lines) => store.requestWhole(method, target, headers, body, lines),
		request: (method, target, headers, body) => store.request(method, target, headers, body),
		upload: (method, target, headers) => store.upload(method, target, headers),
		close: () => {
			if (closed) return;
			closed = true;
			const open = opened.get(path);
			if (!open || open.store !== store) return;
			open.users -= 1;
			if (open.users === 0) {
				opened.delete(path);
				store.close();
			}
		},
	};
}
