/**
 * HTTP/1.1 over a unix socket or TCP with undici (the Node.js project's HTTP client, which
 * answers a small request in about two thirds of `node:http`'s time): one request function and
 * a JSON-lines reader. Every connection comes from one keep-alive pool per transport.
 */
import { Readable } from "node:stream";
import { type Dispatcher, Pool } from "undici";
import { GroveError } from "./errors.js";

/** Where the server listens: a unix socket path or a TCP host and port. */
export type Endpoint = { socketPath: string } | { host: string; port: number };

/** Parses `unix:/path/to/socket` or `http://host:port` (the forms of `GROVE_URL`). */
export function parseEndpoint(url: string): Endpoint {
	if (url.startsWith("unix:")) {
		const socketPath = url.slice("unix:".length).replace(/^\/\/(?=\/)/, "");
		if (!socketPath) throw new TypeError(`grove url ${JSON.stringify(url)} names no socket`);
		return { socketPath };
	}
	let parsed: URL;
	try {
		parsed = new URL(url);
	} catch {
		throw new TypeError(`grove url ${JSON.stringify(url)} is neither unix:PATH nor http://HOST:PORT`);
	}
	if (parsed.protocol !== "http:") {
		throw new TypeError(`grove url ${JSON.stringify(url)}: only unix: and http: are served`);
	}
	const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
	return { host, port: parsed.port ? Number(parsed.port) : 80 };
}

/** A query string's values; `undefined` and `null` leave the parameter out. */
export type Query = Record<string, string | number | boolean | null | undefined>;

export interface RequestOptions {
	query?: Query;
	/** A JSON value (serialized here) or a raw body. */
	body?: unknown;
	/**
	 * A raw body sent as is, with this content type, instead of `body`. A stream is sent as it
	 * is read (chunked), never held whole.
	 */
	raw?: { data: string | Uint8Array | Readable; contentType: string };
	/** Aborting cuts the request off (HTTP); the request then rejects with the signal's `reason`. */
	signal?: AbortSignal;
}

export interface TransportOptions {
	endpoint: Endpoint;
	/** The bearer token, sent with every request when set. */
	token?: string;
	/** The client's name, sent as `Grove-Client` with every request when set. */
	name?: string;
	/**
	 * How long to wait for an answer's head, and then between two pieces of its body, in
	 * milliseconds; 0 for no limit (the default).
	 */
	timeoutMs?: number;
	/** The dispatcher (an undici `Pool` or `Agent`) to use instead of a pool of the transport's own. */
	dispatcher?: Dispatcher;
}

/** An answer whose head arrived; its body is read by the caller. */
export interface Answer {
	statusCode: number;
	body: Readable;
}

export function buildPath(path: string, query?: Query): string {
	if (!query) return path;
	const params = new URLSearchParams();
	for (const [key, value] of Object.entries(query)) {
		if (value !== undefined && value !== null) params.append(key, String(value));
	}
	const text = params.toString();
	return text ? `${path}?${text}` : path;
}

/**
 * What carries a `GroveClient`'s requests: HTTP to `grove serve` ([`Transport`]) or the store
 * opened in this process by the native addon (`InProcessTransport`, ./native.js). Both answer
 * every route of docs/api.md alike.
 */
export interface ClientTransport {
	/** Where requests go, as a transport error names it: `unix:PATH`, `http://HOST:PORT` or `in-process:DIR`. */
	readonly where: string;
	/**
	 * Sends a request and resolves with the response once its head arrived. A status of 400
	 * and above is read in full and thrown as a `GroveError`.
	 */
	send(method: string, path: string, options?: RequestOptions): Promise<Answer>;
	/** Lets go of what the transport holds (connections, or the store). */
	close(): void;
	/** The same transport for a client of another name (`Grove-Client`), sharing what it can. */
	named(name: string | undefined): ClientTransport;
	/**
	 * A request whose whole answer is one JSON value (`undefined` for an empty body), when the
	 * transport has a quicker way to it than `send` and a stream; errors as `send`'s.
	 */
	json?(method: string, path: string, options: RequestOptions): Promise<unknown>;
	/** A JSON-lines answer collected whole (every value), when the transport has a quicker way to it. */
	jsonLines?(method: string, path: string, options: RequestOptions): Promise<unknown[]>;
}

/** One request and its response, whose body is read by the caller. */
export class Transport implements ClientTransport {
	readonly endpoint: Endpoint;
	/** Where the server is looked for, as a transport error names it: `unix:PATH` or `http://HOST:PORT`. */
	readonly where: string;
	private readonly token: string | undefined;
	private readonly name: string | undefined;
	private readonly timeoutMs: number;
	private readonly origin: string;
	private readonly options: TransportOptions;
	private pool: Dispatcher | undefined;

	constructor(options: TransportOptions) {
		this.endpoint = options.endpoint;
		this.token = options.token;
		this.name = options.name;
		this.timeoutMs = options.timeoutMs ?? 0;
		this.options = options;
		// A unix socket's requests still name an origin; its host is only the Host header.
		this.origin =
			"socketPath" in options.endpoint
				? "http://localhost"
				: `http://${options.endpoint.host.includes(":") ? `[${options.endpoint.host}]` : options.endpoint.host}:${options.endpoint.port}`;
		this.where = "socketPath" in options.endpoint ? `unix:${options.endpoint.socketPath}` : this.origin;
	}

	private dispatcher(): Dispatcher {
		if (this.options.dispatcher) return this.options.dispatcher;
		if (!this.pool) {
			const endpoint = this.endpoint;
			this.pool = new Pool(this.origin, {
				socketPath: "socketPath" in endpoint ? endpoint.socketPath : undefined,
				headersTimeout: this.timeoutMs,
				bodyTimeout: this.timeoutMs,
			});
		}
		return this.pool;
	}

	named(name: string | undefined): Transport {
		return new Transport({ ...this.options, name });
	}

	/** Closes the connections of the transport's own pool; requests after this open new ones. */
	close(): void {
		const pool = this.pool;
		this.pool = undefined;
		// Requests still in flight on the old pool are cut off, as `http.Agent.destroy` did.
		if (pool) void pool.destroy().catch(() => undefined);
	}

	/**
	 * Sends a request and resolves with the response once its head arrived. A status of 400
	 * and above is read in full and thrown as a `GroveError`.
	 */
	async send(method: string, path: string, options: RequestOptions = {}): Promise<Answer> {
		let payload: string | Uint8Array | Readable | undefined;
		let contentType: string | undefined;
		if (options.raw) {
			payload = options.raw.data;
			contentType = options.raw.contentType;
		} else if (options.body !== undefined) {
			payload = JSON.stringify(options.body);
			contentType = "application/json";
		}
		const headers: Record<string, string> = { accept: "application/json, application/x-ndjson" };
		if (payload !== undefined && contentType !== undefined) headers["content-type"] = contentType;
		if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
		if (this.name !== undefined) headers["grove-client"] = this.name;
		const target = buildPath(path, options.query);
		let response: Dispatcher.ResponseData;
		try {
			response = await this.dispatcher().request({
				path: target,
				method: method as Dispatcher.HttpMethod,
				headers,
				body: payload,
				signal: options.signal,
			});
		} catch (error) {
			if (options.signal?.aborted) throw options.signal.reason;
			const message = error instanceof Error ? error.message : String(error);
			const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
			throw new GroveError("transport", 0, `${method} ${target} at ${this.where}: ${message}${cause}`, {
				cause: error,
			});
		}
		const answer: Answer = { statusCode: response.statusCode, body: response.body };
		if (answer.statusCode >= 400) throw await errorFrom(method, target, answer);
		return answer;
	}
}

/** Reads a whole response body as text. */
export async function readText(method: string, target: string, response: Answer): Promise<string> {
	response.body.setEncoding("utf8");
	let text = "";
	try {
		for await (const chunk of response.body) text += chunk as string;
	} catch (error) {
		throw brokenStream(method, target, error);
	}
	return text;
}

/** Reads a whole response body as JSON; an empty body is `undefined`. */
export async function readJson(method: string, target: string, response: Answer): Promise<unknown> {
	const text = await readText(method, target, response);
	if (text === "") return undefined;
	try {
		return JSON.parse(text);
	} catch (error) {
		throw new GroveError(
			"invalid_response",
			response.statusCode,
			`${method} ${target}: the answer is not JSON: ${text.slice(0, 200)}`,
			{ cause: error },
		);
	}
}

/**
 * Yields one JSON value per line of the body, as the lines arrive. Leaving the loop early
 * destroys the response (and its connection).
 */
export async function* readLines(
	method: string,
	target: string,
	response: Answer,
): AsyncGenerator<unknown, void, undefined> {
	response.body.setEncoding("utf8");
	let pending = "";
	let completed = false;
	try {
		// undici fails the body when the connection closes before the answer is complete.
		for await (const chunk of response.body) {
			pending += chunk as string;
			let start = 0;
			let newline = pending.indexOf("\n");
			while (newline >= 0) {
				const line = pending.slice(start, newline);
				start = newline + 1;
				if (line.trim() !== "") yield parseLine(method, target, line);
				newline = pending.indexOf("\n", start);
			}
			pending = pending.slice(start);
		}
		completed = true;
	} catch (error) {
		if (error instanceof GroveError) throw error;
		throw brokenStream(method, target, error);
	} finally {
		if (!completed) response.body.destroy();
	}
	if (pending.trim() !== "") yield parseLine(method, target, pending);
}

/**
 * All the JSON values of a JSON-lines body, parsed chunk by chunk as it arrives (no step per
 * value between them: what `readLines` costs a value, and a caller collecting them all does not
 * need).
 */
export async function readAllLines(method: string, target: string, response: Answer): Promise<unknown[]> {
	response.body.setEncoding("utf8");
	const values: unknown[] = [];
	let pending = "";
	try {
		for await (const chunk of response.body) {
			pending += chunk as string;
			let start = 0;
			let newline = pending.indexOf("\n");
			while (newline >= 0) {
				const line = pending.slice(start, newline);
				start = newline + 1;
				if (line.trim() !== "") values.push(parseLine(method, target, line));
				newline = pending.indexOf("\n", start);
			}
			pending = pending.slice(start);
		}
	} catch (error) {
		response.body.destroy();
		if (error instanceof GroveError) throw error;
		throw brokenStream(method, target, error);
	}
	if (pending.trim() !== "") values.push(parseLine(method, target, pending));
	return values;
}

function parseLine(method: string, target: string, line: string): unknown {
	try {
		return JSON.parse(line);
	} catch (error) {
		throw new GroveError("invalid_response", 200, `${method} ${target}: a line is not JSON: ${line.slice(0, 200)}`, {
			cause: error,
		});
	}
}

function brokenStream(method: string, target: string, error: unknown): GroveError {
	const message = error instanceof Error ? error.message : String(error);
	return new GroveError("transport", 0, `${method} ${target}: the answer broke off: ${message}`, { cause: error });
}

export async function errorFrom(method: string, target: string, response: Answer): Promise<GroveError> {
	return errorOf(method, target, response.statusCode, await readText(method, target, response));
}

/** The `GroveError` of an answer with status `status` and body `text`. */
export function errorOf(method: string, target: string, status: number, text: string): GroveError {
	try {
		const body = JSON.parse(text) as { code?: unknown; message?: unknown };
		if (typeof body.code === "string") {
			return new GroveError(body.code, status, typeof body.message === "string" ? body.message : body.code);
		}
	} catch {
		// Not the documented error body: reported below with its text.
	}
	return new GroveError("invalid_response", status, `${method} ${target}: HTTP ${status}: ${text.slice(0, 200)}`);
}
