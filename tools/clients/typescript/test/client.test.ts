/** GroveClient against the real server, route group by route group (docs/api.md). */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AppendBatcher } from "../src/batcher.js";
import { GroveClient } from "../src/client.js";
import { GroveError } from "../src/errors.js";
import { rejection } from "./rejection.js";
import { parseEndpoint } from "../src/transport.js";
import { startServer } from "./server.js";
import { inProcess, testClient } from "./clients.js";

const client = testClient();
afterAll(() => client.close());

let counter = 0;
function sid(): string {
	return `client-${process.pid}-${counter++}`;
}

async function collectAll<T>(items: AsyncIterable<T>): Promise<T[]> {
	const out: T[] = [];
	for await (const item of items) out.push(item);
	return out;
}

function user(text: string) {
	return { role: "user", content: text, timestamp: 1 };
}

describe("urls", () => {
	it("parses unix and http urls", () => {
		expect(parseEndpoint("unix:/tmp/g.sock")).toEqual({ socketPath: "/tmp/g.sock" });
		expect(parseEndpoint("http://127.0.0.1:7070")).toEqual({ host: "127.0.0.1", port: 7070 });
		expect(parseEndpoint("http://[::1]:7070")).toEqual({ host: "::1", port: 7070 });
		expect(() => parseEndpoint("https://example.com")).toThrow(TypeError);
		expect(() => parseEndpoint("unix:")).toThrow(TypeError);
	});

	it("reads GROVE_URL and GROVE_TOKEN", () => {
		expect(() => GroveClient.fromEnv({})).toThrow(/GROVE_URL/);
		const fromEnv = GroveClient.fromEnv({ GROVE_URL: "unix:/x.sock" });
		expect(fromEnv.endpoint).toEqual({ socketPath: "/x.sock" });
	});
});

describe("server", () => {
	it("answers health and verify", async () => {
		const health = await client.health();
		expect(health.ok).toBe(true);
		expect(typeof health.backend).toBe("string");
		expect(typeof health.version).toBe("string");
		const report = await client.verify();
		expect(report.ok).toBe(true);
		expect(report.problems).toEqual([]);
	});
});

describe("sessions", () => {
	it("creates, gets, lists by page and deletes", async () => {
		const prefix = sid();
		const ids = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
		for (const id of ids) {
			const summary = await client.createSession({ id, cwd: "/work/x", metadata: { profile: id } });
			expect(summary).toMatchObject({ id, cwd: "/work/x", entries: 0, parentSessionId: null });
		}
		const details = await client.getSession(ids[1]!);
		expect(details).toMatchObject({ id: ids[1], metadata: { profile: ids[1] }, leaf: null, name: null });
		expect(typeof details.created).toBe("string");

		const duplicate = await rejection(client.createSession({ id: ids[0] }));
		expect(duplicate).toMatchObject({ code: "invalid_argument", status: 400 });

		const pages: string[][] = [];
		let after: string | undefined = `${prefix}-`;
		for (;;) {
			const page = await client.listSessions({ after, limit: 2 });
			pages.push(page.sessions.map((s) => s.id));
			if (page.next === null || !page.sessions.some((s) => s.id.startsWith(prefix))) break;
			after = page.next;
		}
		const listed = pages.flat().filter((id) => id.startsWith(prefix));
		expect(listed).toEqual(ids);
		expect(pages[0]).toHaveLength(2);
		// From the last, before a cursor past this test's ids ("~" sorts after them).
		const newest = await client.listSessions({ after: `${prefix}~`, limit: ids.length, order: "desc" });
		expect(newest.sessions.map((s) => s.id)).toEqual([...ids].reverse());
		expect(await rejection(client.listSessions({ order: "newest" as "desc" }))).toMatchObject({
			code: "invalid_argument",
			status: 400,
		});
		expect((await client.allSessions(2)).map((s) => s.id)).toEqual(expect.arrayContaining(ids));

		await client.deleteSession(ids[0]!);
		expect(await rejection(client.getSession(ids[0]!))).toMatchObject({ code: "not_found", status: 404 });
		expect(await client.sessionExists(ids[0]!)).toBe(false);
		expect(await client.sessionExists(ids[1]!)).toBe(true);
	});

	it("imports and exports pi JSONL", async () => {
		const id = sid();
		const header = { type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/p" };
		const entries = [
			{ type: "message", id: "u1", parentId: null, timestamp: "2026-01-01T00:00:01.000Z", message: user("one") },
			{ type: "label", id: "l1", parentId: "u1", timestamp: "2026-01-01T00:00:02.000Z", targetId: "u1", label: "x" },
			{ type: "leaf", id: "r1", parentId: "l1", timestamp: "2026-01-01T00:00:03.000Z", targetId: "u1" },
		];
		const jsonl = `${[header, ...entries].map((line) => JSON.stringify(line)).join("\n")}\n`;
		const imported = await client.importSession(jsonl);
		expect(imported).toMatchObject({ session: id, leafRecords: 1, leaf: "u1", duplicateIds: [] });
		expect(imported.entries).toBeGreaterThanOrEqual(2);
		expect(await client.leaf(id)).toBe("u1");
		const exported = await client.exportSession(id, { flavor: "harness" });
		const lines = exported.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
		expect(lines[0]).toMatchObject({ type: "session", id });
		expect(lines.slice(1)).toEqual(entries);
		const streamed: unknown[] = [];
		for await (const line of client.iterExport(id)) streamed.push(line);
		expect(streamed).toEqual(lines);

		const refused = await rejection(client.importSession("not json\n"));
		expect(["invalid_session", "invalid_entry", "invalid_request"]).toContain(refused.code);
	});

	it("imports a file as a stream (chunked, never held whole) and exports it back byte for byte", async () => {
		const id = sid();
		const header = { type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/p" };
		const lines = [JSON.stringify(header)];
		let parent: string | null = null;
		for (let i = 0; i < 3000; i++) {
			const entryId = `e${i}`;
			const message = user("w".repeat(1500));
			lines.push(JSON.stringify({ type: "message", id: entryId, parentId: parent, timestamp: "2026-01-01T00:00:01.000Z", message }));
			parent = entryId;
		}
		const text = `${lines.join("\n")}\n`;
		const dir = mkdtempSync(join(tmpdir(), "grove-import-"));
		const file = join(dir, "session.jsonl");
		writeFileSync(file, text);
		try {
			const imported = await client.importFile(file);
			expect(imported).toMatchObject({ session: id, entries: 3000, leaf: "e2999" });
			expect(await client.exportSession(id, { flavor: "harness" })).toBe(text);
			const missing = await rejection(client.importFile(join(dir, "absent.jsonl")));
			expect(missing.code).toBe("transport");
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("forks in each mode", async () => {
		const id = sid();
		await client.createSession({ id });
		const [u1, a1, u2] = await client.appendMany(id, [
			user("one"),
			{ type: "custom", customType: "x" },
			user("two"),
		]);
		const path = await client.forkSession(id, { entryId: u2, position: "before", id: `${id}-path` });
		expect(path).toMatchObject({ id: `${id}-path`, parentSessionId: id });
		expect((await client.log(`${id}-path`)).map((e) => e.id)).toEqual([u1, a1]);
		const at = await client.forkSession(id, { entryId: a1, position: "at", mode: "path", id: `${id}-at` });
		expect(at.id).toBe(`${id}-at`);
		expect((await client.entries(`${id}-at`)).map((e) => e.id)).toEqual([u1, a1]);
		await client.forkSession(id, { mode: "copy", id: `${id}-copy`, metadata: { k: 1 } });
		expect((await client.getSession(`${id}-copy`)).metadata).toEqual({ k: 1 });
		await client.forkSession(id, { entryId: u2, mode: "rechained", id: `${id}-rechained` });
		expect(await client.sessionExists(`${id}-rechained`)).toBe(true);
		const bad = await rejection(client.forkSession(id, { entryId: a1, position: "before" }));
		expect(bad).toMatchObject({ code: "invalid_fork_target", status: 400 });
		expect(await rejection(client.forkSession(id, { entryId: "nope" }))).toMatchObject({ code: "invalid_fork_target" });
	});
});

describe("appending", () => {
	it("appends new, exact, conditional and many", async () => {
		const id = sid();
		await client.createSession({ id });
		const first = await client.append(id, user("hello"));
		expect(await client.leaf(id)).toBe(first);
		const custom = await client.append(id, { type: "custom", customType: "k", data: 1 }, { id: "chosen" });
		expect(custom).toBe("chosen");
		expect(await client.getEntry(id, "chosen")).toMatchObject({ type: "custom", parentId: first, data: 1 });

		const exact = {
			type: "message",
			id: "exact-1",
			parentId: first,
			timestamp: "2020-01-01T00:00:00.000Z",
			message: user("exact"),
		};
		expect(await client.appendExact(id, exact)).toEqual({ id: "exact-1", leaf: "exact-1" });
		expect(await client.getEntry(id, "exact-1")).toEqual(exact);
		// A retry of the same entry is answered as the first time; another entry under its id is refused.
		expect(await client.appendExact(id, exact)).toEqual({ id: "exact-1", leaf: "exact-1" });
		expect(await rejection(client.appendExact(id, { ...exact, message: user("other") }))).toMatchObject({
			code: "invalid_argument",
		});
		expect(await rejection(client.appendExact(id, { ...exact, id: "exact-2", parentId: "ghost" }))).toMatchObject({
			code: "invalid_entry",
		});

		const moved = await client.appendIf(id, "not-the-leaf", user("late"));
		expect(moved).toEqual({ appended: false, leaf: "exact-1" });
		const won = await client.appendIf(id, "exact-1", user("on time"));
		expect(won.appended).toBe(true);
		const ids = await client.appendMany(id, [user("a"), user("b"), user("c")]);
		expect(ids).toHaveLength(3);
		const path = await client.path(id);
		expect(path.slice(-3).map((e) => e.id)).toEqual(ids);
		expect(path[path.length - 3]!.parentId).toBe(won.appended ? won.id : null);
	});
});

describe("proofs", () => {
	it("proves an entry: its digest, path digest and its parent's, chained", async () => {
		const id = sid();
		await client.createSession({ id });
		const [a, b] = await client.appendMany(id, [user("one"), user("two")]);
		const root = await client.proof(id, a!);
		const proof = await client.proof(id, b!);
		expect(proof.entry.id).toBe(b);
		expect(proof.seq).toBe(1);
		expect(root.parentPathDigest).toBe("0".repeat(64));
		expect(proof.parentPathDigest).toBe(root.pathDigest);
		expect(proof.digest).toMatch(/^[0-9a-f]{64}$/);
		expect(proof.pathDigest).not.toBe(root.pathDigest);
		expect(await rejection(client.proof(id, "nope"))).toMatchObject({ code: "not_found", status: 404 });
	});
});

describe("appending to many sessions", () => {
	it("appendBatch: one result per item, in order, each session a chain in the order given", async () => {
		const [p, q] = [sid(), sid()];
		await client.createSession({ id: p });
		await client.createSession({ id: q });
		const results = await client.appendBatch([
			{ session: p, entry: user("p1"), id: "b0000001" },
			{ session: q, entry: user("q1") },
			{ session: `${p}-missing`, entry: user("lost") },
			{ session: p, entry: user("p2"), timestamp: "2026-01-01T00:00:00.000Z" },
			{ session: q, entry: user("dup"), id: "b0000001" },
			// A retry of the item before (answered as it was), and another entry under its id.
			{ session: q, entry: user("dup"), id: "b0000001" },
			{ session: q, entry: user("not a dup"), id: "b0000001" },
		]);
		expect(results).toHaveLength(7);
		expect(results[0]).toEqual({ id: "b0000001" });
		expect(results[2]).toMatchObject({ code: "not_found", status: 404 });
		expect(results[4]).toEqual({ id: "b0000001" });
		expect(results[5]).toEqual({ id: "b0000001" });
		expect(results[6]).toMatchObject({ code: "invalid_argument", status: 400 });
		const ids = (i: number) => (results[i] as { id: string }).id;
		expect((await client.path(p)).map((e) => e.id)).toEqual([ids(0), ids(3)]);
		expect((await client.path(p))[1]!.timestamp).toBe("2026-01-01T00:00:00.000Z");
		expect((await client.path(q)).map((e) => e.id)).toEqual([ids(1), ids(4)]);
	});

	it("AppendBatcher gathers concurrent appends into few requests, keeping each session's order", async () => {
		const sessions = [sid(), sid(), sid()];
		for (const id of sessions) await client.createSession({ id });
		let requests = 0;
		const counting = Object.create(client) as GroveClient;
		counting.appendBatch = (items) => {
			requests++;
			return client.appendBatch(items);
		};
		const batcher = new AppendBatcher(counting, { maxItems: 100 });
		// 300 appends made at once, round robin over the sessions, and one to no session.
		const calls = Array.from({ length: 300 }, (_, i) => batcher.append(sessions[i % 3]!, user(`m${i}`)));
		const missing = batcher.append(`${sessions[0]}-missing`, user("lost"));
		expect(batcher.pending).toBe(301);
		const ids = await Promise.all(calls);
		const error = await rejection(missing);
		expect(error).toMatchObject({ code: "not_found", status: 404 });
		await batcher.flush();
		expect(batcher.pending).toBe(0);
		expect(requests).toBe(4); // 100 + 100 + 100 + 1: one request in flight at a time
		for (const [k, id] of sessions.entries()) {
			const path = await client.path(id);
			expect(path.map((e) => e.id)).toEqual(ids.filter((_, i) => i % 3 === k));
			expect(path.map((e) => (e.message as { content: string }).content)).toEqual(
				ids.map((_, i) => `m${i}`).filter((_, i) => i % 3 === k),
			);
		}
	});

	it("AppendBatcher rejects every append of a request that fails as a whole", async () => {
		const dead = new GroveClient({ url: `unix:${join(tmpdir(), `grove-no-server-${process.pid}.sock`)}` });
		const batcher = new AppendBatcher(dead);
		const errors = await Promise.all([batcher.append("a", user("x")), batcher.append("b", user("y"))].map(rejection));
		expect(errors.map((e) => e.code)).toEqual(["transport", "transport"]);
		expect(() => new AppendBatcher(dead, { maxItems: 0 })).toThrow(RangeError);
		dead.close();
	});
});

describe("reading", () => {
	it("reads entries, log, children, branch, path, context, tree, labels, name and stats", async () => {
		const id = sid();
		await client.createSession({ id });
		const [u1, a1] = await client.appendMany(id, [
			user("one"),
			{
				role: "assistant",
				content: [{ type: "text", text: "two" }],
				api: "x",
				provider: "p",
				model: "m",
				usage: { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, totalTokens: 10, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.5 } },
				stopReason: "stop",
				timestamp: 2,
			},
		]);
		const move = await client.setLeaf(id, u1!);
		expect(move.leaf).toBe(u1);
		const u2 = await client.append(id, user("branch"));
		await client.setLabel(id, u1!, "  start  ");
		await client.setName(id, "my session");

		const entries = await client.entries(id);
		expect(entries.map((e) => e.type)).toEqual(["message", "message", "message", "label", "session_info"]);
		expect((await client.entries(id, { after: 1, limit: 2 })).map((e) => e.id)).toEqual([a1, u2]);
		const log = await client.log(id);
		expect(log.map((e) => e.type)).toEqual(["message", "message", "leaf", "message", "label", "session_info"]);
		const record = log[2]!.id;
		expect((await client.log(id, { type: "leaf" })).map((e) => e.id)).toEqual([record]);
		expect((await client.log(id, { after: 2, limit: 1 })).map((e) => e.id)).toEqual([record]);
		expect(await rejection(client.getEntry(id, record))).toMatchObject({ code: "not_found" });
		expect(await client.getEntry(id, record, { log: true })).toMatchObject({ type: "leaf", targetId: u1 });
		expect(await client.leafHistory(id)).toEqual([{ id: record, target: u1 }]);
		expect(await client.findEntry(id, "nope")).toBeUndefined();

		expect((await client.children(id)).map((e) => e.id)).toEqual([u1]);
		expect((await client.children(id, u1)).map((e) => e.id)).toEqual([a1, u2]);
		const leaf = await client.leaf(id);
		expect((await client.branch(id)).at(-1)!.id).toBe(leaf);
		expect((await client.branch(id, a1)).map((e) => e.id)).toEqual([u1, a1]);
		expect((await client.path(id, u2)).map((e) => e.id)).toEqual([u1, u2]);

		for (const preset of [undefined, "grove", "harness", "cli"] as const) {
			const context = await client.context(id, preset ? { preset } : {});
			expect(context.thinkingLevel).toBe("off");
			expect(context.messages.map((m) => (m as { role: string }).role)).toEqual(["user", "user"]);
		}
		const atA1 = await client.context(id, { leaf: a1 });
		expect(atA1.messages.map((m) => (m as { role: string }).role)).toEqual(["user", "assistant"]);
		expect(atA1.model).toEqual({ provider: "p", modelId: "m" });
		const tree = await client.tree(id);
		expect(tree.roots).toHaveLength(1);
		expect(tree.nodes[tree.roots[0]!]!.id).toBe(u1);
		expect(tree.nodes[tree.roots[0]!]!.label).toBe("start");
		expect(tree.nodes.filter((n) => n.onActivePath).map((n) => n.id)).toEqual(expect.arrayContaining([u1, u2]));

		expect(await client.labels(id)).toEqual({ [u1!]: "start" });
		expect(await client.label(id, u1!)).toBe("start");
		expect(await client.label(id, a1!)).toBeNull();
		expect(await client.name(id)).toBe("my session");
		expect(await client.stats(id)).toEqual({
			messageCount: 3,
			cachedTokens: 3,
			uncachedTokens: 5,
			totalTokens: 10,
			costTotal: 0.5,
		});
	});

	it("streams large results line by line and survives leaving a stream early", async () => {
		const id = sid();
		await client.createSession({ id });
		const batch = Array.from({ length: 500 }, (_, i) => user(`message ${i} ${"x".repeat(200)} ünïcødé`));
		for (let i = 0; i < 6; i++) await client.appendMany(id, batch);
		let seen = 0;
		for await (const entry of client.iterEntries(id)) {
			expect(entry.type).toBe("message");
			seen++;
		}
		expect(seen).toBe(3000);
		let early = 0;
		for await (const _ of client.iterPath(id)) {
			if (++early === 10) break;
		}
		expect(early).toBe(10);
		expect((await client.entries(id, { after: 2990 })).length).toBe(10);
	});
});

describe("the leaf", () => {
	it("moves the leaf, records each move, and refuses unknown targets", async () => {
		const id = sid();
		await client.createSession({ id });
		const [a, b] = await client.appendMany(id, [user("a"), user("b")]);
		expect(await client.setLeaf(id, a!)).toEqual({ leaf: a });
		expect(await client.setLeaf(id, null)).toEqual({ leaf: null });
		expect(await client.leaf(id)).toBeNull();
		const records = (await client.log(id, { type: "leaf" })).map((e) => e.id);
		expect(await client.leafHistory(id)).toEqual([
			{ id: records[0], target: a },
			{ id: records[1], target: null },
		]);
		expect(await rejection(client.setLeaf(id, "ghost"))).toMatchObject({ code: "not_found", status: 404 });
		expect(b).toBeDefined();
	});
});

describe("errors", () => {
	it("carries the server's code, status and message", async () => {
		const missing = await rejection(client.getSession("no-such-session"));
		expect(missing).toMatchObject({ code: "not_found", status: 404, name: "GroveError" });
		expect(missing.retryable).toBe(false);
		expect(missing.message).toContain("no-such-session");
		expect(await rejection(client.request("GET", "/v1/nope"))).toMatchObject({ code: "not_found", status: 404 });
		expect(await rejection(client.request("PATCH", "/v1/sessions"))).toMatchObject({
			code: "method_not_allowed",
			status: 405,
		});
		expect(await rejection(client.request("POST", "/v1/sessions", { body: [1, 2] }))).toMatchObject({
			code: "invalid_request",
			status: 400,
		});
		expect(await rejection(client.listSessions({ limit: -1 }))).toMatchObject({ status: 400 });
		expect((await client.health()).ok).toBe(true);
	});

	it("reports a streamed answer that breaks off or is not JSON lines, collected or iterated", async () => {
		// A stand-in server: a chunked answer cut after two lines, and one whose second line is
		// not JSON.
		const fakeDir = mkdtempSync(join(tmpdir(), "grove-fake-"));
		const socket = join(fakeDir, "fake.sock");
		const fake = http.createServer((req, res) => {
			res.writeHead(200, { "content-type": "application/x-ndjson" });
			res.write('{"id":"a"}\n{"id":"b"}\n{"id":');
			if (req.url?.includes("/branch")) setTimeout(() => res.socket?.destroy(), 20);
			else res.end('"c"}\nnot json\n');
		});
		await new Promise<void>((listening) => fake.listen(socket, listening));
		const faked = new GroveClient({ url: `unix:${socket}` });
		try {
			expect(await rejection(faked.branch("s"))).toMatchObject({ code: "transport", status: 0 });
			const seen: unknown[] = [];
			const iterated = await rejection(
				(async () => {
					for await (const entry of faked.iterBranch("s")) seen.push(entry);
				})(),
			);
			expect(iterated).toMatchObject({ code: "transport" });
			expect(seen).toEqual([{ id: "a" }, { id: "b" }]);
			expect(await rejection(faked.path("s"))).toMatchObject({ code: "invalid_response" });
			expect(await rejection(collectAll(faked.iterPath("s")))).toMatchObject({ code: "invalid_response" });
		} finally {
			faked.close();
			await new Promise<void>((closed) => fake.close(() => closed()));
			rmSync(fakeDir, { recursive: true, force: true });
		}
	});

	it("reports a server it cannot reach as transport", async () => {
		const nowhere = new GroveClient({ url: "unix:/nonexistent/grove.sock" });
		const unreachable = await rejection(nowhere.health());
		expect(unreachable).toMatchObject({ code: "transport", status: 0 });
		expect(unreachable.retryable).toBe(true);
		// The error names where the client looked: the socket path, or the URL.
		expect(unreachable.message).toContain("GET /v1/health at unix:/nonexistent/grove.sock: ");
		nowhere.close();
		const closedPort = new GroveClient({ url: "http://127.0.0.1:1" });
		const refused = await rejection(closedPort.health());
		expect(refused).toMatchObject({ code: "transport", status: 0 });
		expect(refused.message).toContain("GET /v1/health at http://127.0.0.1:1: ");
		closedPort.close();
	});
});

describe("tcp", () => {
	it("needs the bearer token", async () => {
		const token = "s3cret-token-of-some-length";
		const server = await startServer({
			args: (store) => {
				const tokenFile = `${store}.token`;
				writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
				return ["--socket", join(store, "grove.sock"), "--listen", "127.0.0.1:0", "--token-file", tokenFile];
			},
			expectedListeners: 2,
		});
		try {
			const url = server.urls.find((u) => u.startsWith("http://"))!;
			expect(url).toBeDefined();
			const anonymous = new GroveClient({ url });
			expect(await rejection(anonymous.health())).toMatchObject({ code: "unauthorized", status: 401 });
			const wrong = new GroveClient({ url, token: "nope" });
			expect(await rejection(wrong.health())).toMatchObject({ code: "unauthorized", status: 401 });
			const authorized = GroveClient.fromEnv({ GROVE_URL: url, GROVE_TOKEN: token });
			expect((await authorized.health()).ok).toBe(true);
			const created = await authorized.createSession({ id: "over-tcp" });
			expect(created.id).toBe("over-tcp");
			for (const c of [anonymous, wrong, authorized]) c.close();
		} finally {
			expect(await server.stop()).toBe(0);
		}
	});
});
