/**
 * Many client processes on one server: node children (test/workers/*.mjs, plain node:http)
 * write at once, then every acknowledged append is checked through the API.
 *
 * - 8 processes over 1,000 sessions (group durability): each acknowledged append is stored
 *   exactly once, in the session it was sent to, and nothing else is.
 * - 4 processes on one session with compare-and-swap (`entries/if`, sync durability): the
 *   session is one chain holding every acknowledged append once, each worker's in its order.
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroveClient } from "../src/client.js";
import type { WireEntry } from "../src/types.js";
import { type RunningServer, startServer } from "./server.js";

const workers = join(dirname(fileURLToPath(import.meta.url)), "workers");

interface Worker {
	code: number | null;
	lines: Record<string, unknown>[];
	stderr: string;
}

/** Runs `node workers/SCRIPT ARGS...` to its end; its stdout lines parsed as JSON. */
function runWorker(script: string, args: string[]): Promise<Worker> {
	const child = spawn(process.execPath, [join(workers, script), ...args], { stdio: ["ignore", "pipe", "pipe"] });
	let stdout = "";
	let stderr = "";
	child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
		stdout += chunk;
	});
	child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
		stderr += chunk;
	});
	return new Promise((done, fail) => {
		child.on("error", fail);
		child.on("close", (code) => {
			const lines = stdout
				.split("\n")
				.filter((line) => line.trim() !== "")
				.map((line) => JSON.parse(line) as Record<string, unknown>);
			done({ code, lines, stderr });
		});
	});
}

/** The text of a user message entry written by a worker (its tag). */
function tagOf(entry: WireEntry): string | undefined {
	const message = entry.message as { content?: { text?: string }[] } | undefined;
	return message?.content?.[0]?.text;
}

/** Runs `work` over `items`, `lanes` at a time. */
async function eachLimited<T>(items: T[], lanes: number, work: (item: T) => Promise<void>): Promise<void> {
	let next = 0;
	await Promise.all(
		Array.from({ length: lanes }, async () => {
			while (next < items.length) await work(items[next++]!);
		}),
	);
}

describe("8 processes over 1,000 sessions", () => {
	const PROCESSES = 8;
	const SESSIONS = 1000;
	const APPENDS = 500; // per process: 4,000 appends, 4 per session
	let server: RunningServer;
	let client: GroveClient;

	beforeAll(async () => {
		server = await startServer({ args: (store) => ["--socket", join(store, "grove.sock"), "--durability", "group"] });
		client = new GroveClient({ url: server.urls[0]! });
	});
	afterAll(async () => {
		client?.close();
		expect(await server?.stop()).toBe(0);
	});

	it("stores every acknowledged append exactly once", async () => {
		const sids = Array.from({ length: SESSIONS }, (_, i) => `procs-${String(i).padStart(4, "0")}`);
		await eachLimited(sids, 8, async (id) => {
			await client.createSession({ id, cwd: "/procs" });
		});
		// Worker w starts at session 125·w and walks all of them, so every session gets appends
		// from two processes, often at the same moment.
		const runs = await Promise.all(
			Array.from({ length: PROCESSES }, (_, w) => {
				const mine = [...sids.slice(w * 125), ...sids.slice(0, w * 125)];
				return runWorker("appender.mjs", [server.urls[0]!, String(w), String(APPENDS), "4", ...mine]);
			}),
		);
		for (const run of runs) expect(run.stderr).toBe("");
		for (const run of runs) expect(run.code).toBe(0);

		const acked = new Map<string, { sid: string; tag: string }>();
		for (const run of runs) {
			for (const line of run.lines) {
				const id = line.id as string;
				expect(acked.has(id), `id ${id} acknowledged twice`).toBe(false);
				acked.set(id, { sid: line.sid as string, tag: line.tag as string });
			}
		}
		expect(acked.size).toBe(PROCESSES * APPENDS);

		const seen = new Set<string>();
		await eachLimited(sids, 8, async (sid) => {
			const entries = await client.entries(sid);
			for (const entry of entries) {
				const ack = acked.get(entry.id);
				expect(ack, `entry ${entry.id} of ${sid} was never acknowledged`).toBeDefined();
				expect(ack!.sid).toBe(sid);
				expect(tagOf(entry)).toBe(ack!.tag);
				expect(seen.has(entry.id), `entry ${entry.id} stored twice`).toBe(false);
				seen.add(entry.id);
			}
			// Plain appends go to the leaf: the session is one chain of all its entries.
			const path = await client.path(sid);
			expect(path.map((e) => e.id).sort()).toEqual(entries.map((e) => e.id).sort());
			expect((await client.getSession(sid)).entries).toBe(entries.length);
		});
		expect(seen.size).toBe(acked.size);
		expect((await client.verify()).ok).toBe(true);
	});
});

describe("4 processes on one session with compare-and-swap", () => {
	const PROCESSES = 4;
	const APPENDS = 100; // per process
	let server: RunningServer;
	let client: GroveClient;

	beforeAll(async () => {
		server = await startServer({ args: (store) => ["--socket", join(store, "grove.sock"), "--durability", "sync"] });
		client = new GroveClient({ url: server.urls[0]! });
	});
	afterAll(async () => {
		client?.close();
		expect(await server?.stop()).toBe(0);
	});

	it("keeps one chain holding every acknowledged append once", async () => {
		const sid = "cas-one";
		await client.createSession({ id: sid, cwd: "/cas" });
		const runs = await Promise.all(
			Array.from({ length: PROCESSES }, (_, w) =>
				runWorker("cas.mjs", [server.urls[0]!, String(w), String(APPENDS), sid]),
			),
		);
		for (const run of runs) expect(run.stderr).toBe("");
		for (const run of runs) expect(run.code).toBe(0);

		const acked = new Map<string, string>();
		for (const run of runs) for (const line of run.lines) acked.set(line.id as string, line.tag as string);
		expect(acked.size).toBe(PROCESSES * APPENDS);

		const entries = await client.entries(sid);
		expect(entries.length).toBe(acked.size);
		const leaf = await client.leaf(sid);
		const path = await client.path(sid, leaf ?? undefined);
		expect(path.length).toBe(entries.length);
		let parent: string | null = null;
		const order = new Map<string, number>();
		for (const entry of path) {
			expect(entry.parentId).toBe(parent);
			expect(acked.get(entry.id), `entry ${entry.id} was never acknowledged`).toBe(tagOf(entry));
			// Each worker appends after its previous append was acknowledged: its entries lie on
			// the chain in its own order.
			const [worker, index] = tagOf(entry)!.slice(1).split("-").map(Number) as [number, number];
			expect(index).toBe((order.get(String(worker)) ?? -1) + 1);
			order.set(String(worker), index);
			parent = entry.id;
		}
		expect(new Set(path.map((e) => e.id)).size).toBe(acked.size);
		expect((await client.verify()).ok).toBe(true);
	});
});
