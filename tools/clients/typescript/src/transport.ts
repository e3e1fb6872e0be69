/**
 * HTTP/1.1 over a unix socket or TCP with `node:http`: one request function and a JSON-lines
 * reader. Every connection comes from one keep-alive agent per transport.
 */
import * as http from "node:http";
import { Readable } from "node:stream";
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
}

export interface TransportOptions {
	endpoint: Endpoint;
	/** The bearer token, sent with every request when set. */
	token?: string;
	/** Socket idle timeout in milliseconds; 0 for none (the default). */
	timeoutMs?: number;
	/** The agent to use instead of a new keep-alive agent. */
	agent?: http.Agent;
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

/** One request and its response, whose body is read by the caller. */
export class Transport {
	readonly endpoint: Endpoint;
	private readonly token: string | undefined;
	private readonly timeoutMs: number;
	private readonly agent: http.Agent;
	private readonly ownsAgent: boolean;

	constructor(options: TransportOptions) {
		this.endpoint = options.endpoint;
		this.token = options.token;
		this.timeoutMs = options.timeoutMs ?? 0;
		this.ownsAgent = options.agent === undefined;
		this.agent = options.agent ?? new http.Agent({ keepAlive: true });
	}

	/** Closes the idle connections of the client's own agent. */
	close(): void {
		if (this.ownsAgent) this.agent.destroy();
	}

	/**
	 * Sends a request and resolves with the response once its head arrived. A status of 400
	 * and above is read in full and thrown as a `GroveError`.
	 */
	async send(method: string, path: string, options: RequestOptions = {}): Promise<http.IncomingMessage> {
		let payload: string | Uint8Array | Readable | undefined;
		let contentType: string | undefined;
		if (options.raw) {
			payload = options.raw.data;
			contentType = options.raw.contentType;
		} else if (options.body !== undefined) {
			payload = JSON.stringify(options.body);
			contentType = "application/json";
		}
		const headers: http.OutgoingHttpHeaders = { accept: "application/json, application/x-ndjson" };
		if (payload !== undefined) {
			headers["content-type"] = contentType;
			if (typeof payload === "string") headers["content-length"] = Buffer.byteLength(payload);
			else if (payload instanceof Uint8Array) headers["content-length"] = payload.byteLength;
		}
		if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
		const target = buildPath(path, options.query);
		const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
			const request = http.request(
				{ ...this.endpoint, method, path: target, headers, agent: this.agent, timeout: this.timeoutMs || undefined },
				resolve,
			);
			request.on("error", (error) =>
				reject(new GroveError("transport", 0, `${method} ${target}: ${error.message}`, { cause: error })),
			);
			request.on("timeout", () => request.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
			if (payload instanceof Readable) {
				payload.on("error", (error) => request.destroy(error));
				payload.pipe(request);
			} else {
				request.end(payload);
			}
		});
		if ((response.statusCode ?? 0) >= 400) throw await errorFrom(method, target, response);
		return response;
	}
}

/** Reads a whole response body as text. */
export async function readText(method: string, target: string, response: http.IncomingMessage): Promise<string> {
	response.setEncoding("utf8");
	let text = "";
	try {
		for await (const chunk of response) text += chunk as string;
	} catch (error) {
		throw brokenStream(method, target, error);
	}
	return text;
}

/** Reads a whole response body as JSON; an empty body is `undefined`. */
export async function readJson(method: string, target: string, response: http.IncomingMessage): Promise<unknown> {
	const text = await readText(method, target, response);
	if (text === "") return undefined;
	try {
		return JSON.parse(text);
	} catch (error) {
		throw new GroveError(
			"invalid_response",
			response.statusCode ?? 0,
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
	response: http.IncomingMessage,
): AsyncGenerator<unknown, void, undefined> {
	response.setEncoding("utf8");
	let pending = "";
	let completed = false;
	try {
		for await (const chunk of response) {
			pending += chunk as string;
			let newline = pending.indexOf("\n");
			while (newline >= 0) {
				const line = pending.slice(0, newline);
				pending = pending.slice(newline + 1);
				if (line.trim() !== "") yield parseLine(method, target, line);
				newline = pending.indexOf("\n");
			}
		}
		if (!response.complete) throw new Error("the connection closed before the answer was complete");
		completed = true;
	} catch (error) {
		if (error instanceof GroveError) throw error;
		throw brokenStream(method, target, error);
	} finally {
		if (!completed) response.destroy();
	}
	if (pending.trim() !== "") yield parseLine(method, target, pending);
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

async function errorFrom(method: string, target: string, response: http.IncomingMessage): Promise<GroveError> {
	const status = response.statusCode ?? 0;
	const text = await readText(method, target, response);
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
