/**
 * The example harness's load (`harness.ts`), the TypeScript twin of
 * tools/clients/python/examples/harness.py: many generated agent runs written concurrently
 * through one `GroveClient`, then a sample of them read back and compared with what was written.
 *
 * A session is created, then written as an agent writes it: per turn a user message, an
 * assistant message calling a tool, the tool's result and the assistant's final answer (pi's
 * message shapes, with usage), each appended when it is "produced", one awaited after the other.
 * The runs come from the seed by mulberry32 with the same rules as the Python harness, so both
 * write the same messages. `direct` sends each append as its own request; `batch` hands them to
 * an `AppendBatcher`, which sends the appends pending at the same time as one `POST /v1/appends`.
 */
import { Pool } from "undici";
import { AppendBatcher } from "../src/batcher.js";
import { GroveClient } from "../src/client.js";
import { openStore } from "../src/native.js";
import { parseEndpoint } from "../src/transport.js";
import { Rand } from "../test/random.js";
import { quantile } from "./util.js";

/** A pi message as the harness writes it. */
export type Message = { role: string; [field: string]: unknown };
type Part = Record<string, unknown>;

const WORDS = (
	"the file function test error value return build module session entry branch agent tool " +
	"result check config path line change fix read write append server client store flush " +
	"index token context message model cache batch commit update import export parse type"
).split(" ");

const TOOLS = ["read", "bash", "edit", "grep"] as const;

/** Messages per turn: user, assistant with a tool call, tool result, final assistant. */
export const MESSAGES_PER_TURN = 4;

/** 2026-01-01T00:00:00Z in milliseconds: the generated runs' first timestamp. */
const EPOCH_MS = 1_767_225_600_000;

/** A length in [low, high], small ones more often (r²). */
function size(r: Rand, low: number, high: number): number {
	const x = r.next();
	return low + Math.floor(x * x * (high - low));
}

/** The seed of session `index` of a run seeded `seed`. */
export function sessionSeed(seed: number, index: number): number {
	return (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
}

/** `size` characters of words, the same for every run (the texts are cut from it). */
function corpus(size: number): string {
	const r = new Rand(0x5eed);
	const out: string[] = [];
	let total = 0;
	while (total < size) {
		const word = WORDS[r.int(WORDS.length)]!;
		out.push(word);
		total += word.length + 1;
	}
	return out.join(" ").slice(0, size);
}

const CORPUS = corpus(1 << 16);

/** `length` characters of the corpus from a random place: one draw, however long. */
function text(r: Rand, length: number): string {
	const start = r.int(CORPUS.length - length);
	return CORPUS.slice(start, start + length);
}

function usage(r: Rand): Part {
	const input = 1000 + r.int(20000);
	const output = 50 + r.int(2000);
	const cacheRead = r.int(50000);
	const cost = { input: (input * 3) / 1e6, output: (output * 15) / 1e6, cacheRead: (cacheRead * 0.3) / 1e6, cacheWrite: 0, total: 0 };
	cost.total = cost.input + cost.output + cost.cacheRead;
	return { input, output, cacheRead, cacheWrite: 0, totalTokens: input + output + cacheRead, cost };
}

function assistant(r: Rand, content: Part[], stopReason: string, timestamp: number): Message {
	return {
		role: "assistant",
		content,
		api: "anthropic-messages",
		provider: "anthropic",
		model: "claude-sonnet-4-5",
		usage: usage(r),
		stopReason,
		timestamp,
	};
}

/** The four messages of turn `turn` of session `index`, in the order they are produced. */
function agentTurn(r: Rand, index: number, turn: number): Message[] {
	const at = EPOCH_MS + index * 3_600_000 + turn * 60_000;
	const tool = TOOLS[r.int(TOOLS.length)]!;
	const callId = `toolu_${r.hex(16)}`;
	const user = { role: "user", content: [{ type: "text", text: text(r, size(r, 40, 600)) }], timestamp: at };
	const callText = text(r, size(r, 40, 400));
	const path = `src/${text(r, 12).replaceAll(" ", "_")}.rs`;
	const call = assistant(
		r,
		[
			{ type: "text", text: callText },
			{ type: "toolCall", id: callId, name: tool, arguments: { path } },
		],
		"toolUse",
		at + 5_000,
	);
	const resultText = text(r, size(r, 200, 4000));
	const result = {
		role: "toolResult",
		toolCallId: callId,
		toolName: tool,
		content: [{ type: "text", text: resultText }],
		isError: r.int(20) === 0,
		timestamp: at + 6_000,
	};
	const final = assistant(r, [{ type: "text", text: text(r, size(r, 100, 2000)) }], "stop", at + 15_000);
	return [user, call, result, final];
}

/** Every message of session `index`, in order. */
export function agentRun(seed: number, index: number, turns: number): Message[] {
	const r = new Rand(sessionSeed(seed, index));
	const out: Message[] = [];
	for (let turn = 0; turn < turns; turn++) out.push(...agentTurn(r, index, turn));
	return out;
}

export function sessionId(prefix: string, index: number): string {
	return `${prefix}${String(index).padStart(6, "0")}`;
}

/** `count` session indexes spread evenly over the run, the first and last among them. */
export function sample(sessions: number, count: number): number[] {
	if (count <= 0 || sessions === 0) return [];
	if (count >= sessions) return Array.from({ length: sessions }, (_, i) => i);
	if (count === 1) return [0];
	const picked = new Set<number>();
	for (let k = 0; k < count; k++) picked.add(Math.round((k * (sessions - 1)) / (count - 1)));
	return [...picked].sort((a, b) => a - b);
}

/** JSON equality of two parsed values (key order ignored). */
function same(a: unknown, b: unknown): boolean {
	if (a === b) return true;
	if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
	if (Array.isArray(a) !== Array.isArray(b)) return false;
	const ka = Object.keys(a);
	const kb = Object.keys(b);
	if (ka.length !== kb.length) return false;
	return ka.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Reads back the sessions of `indexes`; one line per difference from what was written. */
export async function verify(client: GroveClient, prefix: string, seed: number, turns: number, indexes: readonly number[]): Promise<string[]> {
	const problems: string[] = [];
	for (const index of indexes) {
		const sid = sessionId(prefix, index);
		const written = agentRun(seed, index, turns);
		const summary = await client.getSession(sid);
		if (summary.entries !== written.length) problems.push(`${sid}: ${summary.entries} entries, ${written.length} written`);
		const messages = (await client.context(sid)).messages as unknown[];
		if (messages.length !== written.length) {
			problems.push(`${sid}: ${messages.length} context messages, ${written.length} written`);
			continue;
		}
		const k = messages.findIndex((read, i) => !same(read, written[i]));
		if (k >= 0) problems.push(`${sid}: context message ${k} (${String(written[k]!.role)}) differs from the one written`);
	}
	return problems;
}

const IN_PROCESS = "in-process:";

export interface HarnessOptions {
	/**
	 * The server, or several `grove serve` nodes over one database, comma-separated; or
	 * `in-process:DIR`, the store at DIR opened in this process.
	 */
	url: string;
	/**
	 * With several nodes: `session` sends every request of a session to one node (session i to
	 * node i mod n), `request` each request to the next node in turn, as a round-robin load
	 * balancer would. Default `session`.
	 */
	spread?: "session" | "request";
	/**
	 * Write nothing: read the context of the `verify` sample of an earlier run's sessions, each
	 * once, timing each read (a resume), and check it against what was written.
	 */
	resume?: boolean;
	token?: string;
	sessions: number;
	turns: number;
	seed: number;
	/** Sessions in flight at once. */
	concurrency: number;
	mode: "direct" | "batch";
	/** Session ids are the prefix and a 6-digit index. */
	prefix: string;
	/** Sessions read back and checked at the end. */
	verify: number;
	/**
	 * `direct` mode: requests in flight at once (queued here beyond that), as in the Python
	 * harness (whose client's pool, httpx's until 2026-12, cost CPU in proportion to the requests
	 * queued in it); also the
	 * connections of the client's pool.
	 */
	inFlight: number;
}

/** The harness's JSON report, as the Python harness prints it. */
export interface HarnessReport {
	client: "typescript";
	mode: string;
	durability: string;
	sessions: number;
	turns: number;
	entries: number;
	seconds: number;
	entriesPerSecond: number;
	sessionsPerSecond: number;
	appendP50Ms: number;
	appendP99Ms: number;
	inFlight: number;
	verified: number;
	/** Nodes written through, and how requests were spread over them. */
	nodes: number;
	spread: string;
	/** `resume`: the reads of the sample's contexts, each a session's first through its node. */
	resumeP50Ms?: number;
	resumeP99Ms?: number;
}

const round = (value: number, digits: number): number => Number(value.toFixed(digits));

/** At most `limit` calls of `run` at once; the others wait their turn in order. */
class Gate {
	private running = 0;
	private readonly waiting: Array<() => void> = [];

	constructor(private readonly limit: number) {}

	async run<T>(call: () => Promise<T>): Promise<T> {
		if (this.running >= this.limit) await new Promise<void>((go) => this.waiting.push(go));
		else this.running++;
		try {
			return await call();
		} finally {
			const next = this.waiting.shift();
			if (next) next();
			else this.running--;
		}
	}
}

/** Runs the load and the self-check: the report and the problems found (none: passed). */
export async function runHarness(options: HarnessOptions): Promise<{ report: HarnessReport; problems: string[] }> {
	const { sessions, turns, seed, prefix } = options;
	const urls = options.url.split(",").filter((u) => u !== "");
	if (urls.length === 0) throw new Error("no server url");
	const spread = options.spread ?? "session";
	// `in-process:DIR`: the store opened in this process (`openStore`), no server.
	const pools = urls.map((url) => {
		if (url.startsWith(IN_PROCESS)) return undefined;
		const endpoint = parseEndpoint(url);
		return "socketPath" in endpoint
			? new Pool("http://localhost", { socketPath: endpoint.socketPath, connections: options.inFlight })
			: new Pool(url, { connections: options.inFlight });
	});
	const clients = urls.map((url, i) =>
		url.startsWith(IN_PROCESS)
			? openStore(url.slice(IN_PROCESS.length), { name: "typescript-harness" })
			: new GroveClient({ url, token: options.token, name: "typescript-harness", dispatcher: pools[i]! }),
	);
	let turn = 0;
	/** The node of a session's next request. */
	const node = (index: number): GroveClient =>
		clients[spread === "request" ? turn++ % clients.length : index % clients.length]!;
	// Read back through another node than the one that wrote (the last), when there are several.
	const reader = clients[clients.length - 1]!;
	try {
		const durability = (await reader.health()).durability;
		const indexes = sample(sessions, options.verify);
		const base = {
			client: "typescript" as const,
			mode: options.mode,
			durability,
			sessions,
			turns,
			inFlight: options.mode === "direct" ? options.inFlight : 1,
			verified: indexes.length,
			nodes: clients.length,
			spread,
		};
		if (options.resume) {
			const reads: number[] = [];
			const start = performance.now();
			for (const index of indexes) {
				const at = performance.now();
				await node(index).context(sessionId(prefix, index));
				reads.push(performance.now() - at);
			}
			const seconds = (performance.now() - start) / 1000;
			const problems = await verify(reader, prefix, seed, turns, indexes);
			const report: HarnessReport = {
				...base,
				entries: 0,
				seconds: round(seconds, 3),
				entriesPerSecond: 0,
				sessionsPerSecond: round(indexes.length / seconds, 2),
				appendP50Ms: 0,
				appendP99Ms: 0,
				resumeP50Ms: round(quantile(reads, 0.5), 3),
				resumeP99Ms: round(quantile(reads, 0.99), 3),
			};
			return { report, problems };
		}
		const runs = Array.from({ length: sessions }, (_, i) => agentRun(seed, i, turns));
		const batchers = options.mode === "batch" ? clients.map((c) => new AppendBatcher(c)) : undefined;
		const gate = new Gate(options.inFlight);
		const latencies: number[] = [];
		const writeSession = async (index: number): Promise<void> => {
			const sid = sessionId(prefix, index);
			await gate.run(() => node(index).createSession({ id: sid, cwd: `/work/${sid}` }));
			for (const message of runs[index]!) {
				const start = performance.now();
				const batcher = batchers?.[index % batchers.length];
				await (batcher ? batcher.append(sid, message) : gate.run(() => node(index).append(sid, message)));
				latencies.push(performance.now() - start);
			}
		};
		let next = 0;
		const worker = async (): Promise<void> => {
			while (next < sessions) await writeSession(next++);
		};
		const start = performance.now();
		await Promise.all(Array.from({ length: Math.min(options.concurrency, sessions) }, worker));
		const seconds = (performance.now() - start) / 1000;
		const problems = await verify(reader, prefix, seed, turns, indexes);
		const entries = runs.reduce((n, run) => n + run.length, 0);
		const report: HarnessReport = {
			...base,
			entries,
			seconds: round(seconds, 3),
			entriesPerSecond: round(entries / seconds, 1),
			sessionsPerSecond: round(sessions / seconds, 2),
			appendP50Ms: round(quantile(latencies, 0.5), 3),
			appendP99Ms: round(quantile(latencies, 0.99), 3),
		};
		return { report, problems };
	} finally {
		for (const client of clients) client.close();
		await Promise.all(pools.map((pool) => pool?.close()));
	}
}
