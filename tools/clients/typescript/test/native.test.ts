/**
 * The in-process transport (`openStore`, the native addon) itself: a store opened in this
 * process answers as the server does, keeps what it acknowledged across a close, streams, and
 * refuses a second opener with `locked`.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { GroveClient, GroveError, openStore, type WireEntry } from "../src/index.js";
import { answersMadeByTheAddon, answersTakenInChunks } from "../src/native.js";
import { Rand } from "./random.js";
import { startServer } from "./server.js";

const dirs: string[] = [];
function tempStore(): string {
	const dir = mkdtempSync(join(tmpdir(), "grove-native-"));
	dirs.push(dir);
	return join(dir, "store");
}
afterEach(() => {
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("openStore", () => {
	it("answers every route as the server does and keeps what it acknowledged", async () => {
		const dir = tempStore();
		const client = openStore(dir);
		expect(client.where).toBe(`in-process:${dir}`);
		const { id: sid } = await client.createSession();
		const first = await client.append(sid, { role: "user", content: "hello" });
		await client.append(sid, { role: "assistant", content: [{ type: "text", text: "hi" }] });
		expect((await client.context(sid)).messages).toHaveLength(2);
		expect((await client.entries(sid)).map((e) => e.parentId)).toEqual([null, first]);
		const missing = await client.getEntry(sid, "nope").catch((e: unknown) => e);
		expect(missing).toBeInstanceOf(GroveError);
		expect((missing as GroveError).code).toBe("not_found");
		expect((missing as GroveError).status).toBe(404);
		client.close();
		const closed = await client.leaf(sid).catch((e: unknown) => e);
		expect((closed as GroveError).code).toBe("closed");
		const again = openStore(dir);
		expect((await again.context(sid)).messages.map((m) => (m as { role: string }).role)).toEqual(["user", "assistant"]);
		again.close();
	});

	it("refuses an option it cannot take, naming it, and opens nothing", () => {
		const dir = tempStore();
		for (const [options, named] of [
			[{ durability: "fsync" }, 'durability "fsync"'],
			[{ backend: "rocksdb" }, 'backend "rocksdb"'],
			[{ lockWaitSeconds: -1 }, 'lockWaitSeconds "-1"'],
		] as const) {
			const refused = (() => {
				try {
					openStore(dir, options as never);
				} catch (e) {
					return e;
				}
				return undefined;
			})();
			expect(refused).toBeInstanceOf(GroveError);
			expect((refused as GroveError).code).toBe("invalid_argument");
			expect((refused as GroveError).message).toContain(named);
		}
		const client = openStore(dir, { durability: "group" });
		client.close();
	});

	it("reads text past ASCII back as written, on node's thread and off it", async () => {
		// The addon hands whole answers over as ASCII (characters past it escaped) and JSON
		// lines as one array: what JS parses must be the very strings that were appended.
		const texts = ["café", "😀 astral", "line\u2028sep\u2029", "中文\n\t\"quoted\"", "\u0000\u001f", "é".repeat(5000)];
		for (const inlineReads of [true, false]) {
			const client = openStore(tempStore(), { durability: "none", inlineReads });
			const { id: sid } = await client.createSession();
			for (const text of texts) await client.append(sid, { role: "user", content: text });
			const contents = (entries: WireEntry[]) => entries.map((e) => (e["message"] as { content: string }).content);
			expect(contents(await client.branch(sid))).toEqual(texts);
			expect(contents(await client.path(sid))).toEqual(texts);
			expect(contents(await client.entries(sid))).toEqual(texts);
			expect(contents(await client.log(sid))).toEqual(texts);
			expect((await client.context(sid)).messages.map((m) => (m as { content: string }).content)).toEqual(texts);
			const leaf = await client.leaf(sid);
			expect(((await client.getEntry(sid, leaf!))["message"] as { content: string }).content).toBe(texts.at(-1));
			client.close();
		}
	});

	it("makes a large answer of long strings into the values JSON.parse makes of it", async () => {
		// Past a megabyte of long strings the addon makes the JS values itself (no JSON text
		// in JS): strings long and short, ASCII or not, escaped or not; numbers at the edges
		// of a double; nesting; and a key `__proto__`, which it leaves to JSON.parse.
		const long = (i: number) => `${i} ${"lorem ipsum dolor sit amet ".repeat(1000)}`;
		const messages = Array.from({ length: 400 }, (_, i) => ({
			role: i % 2 === 0 ? "user" : "assistant",
			content:
				i % 6 === 0
					? long(i)
					: [
							{ type: "text", text: `${long(i)}\n"quoted"\t\u0000 ${"é😀中".repeat(100)}` },
							{ type: "text", text: "short" },
						],
			meta: {
				ms: 1733500000000 + i,
				big: 2 ** 53 + 2,
				tiny: 5e-324,
				max: 1.7976931348623157e308,
				sum: 0.1 + 0.2,
				neg: -3.5e-7,
				flags: [true, false, null],
				empty: { list: [], object: {} },
				nested: [[[{ deep: `${"x".repeat(2000)}é` }]]],
				escaped: `line ${i}\n"two"\t\\`.repeat(300),
			},
		}));
		for (const inlineReads of [true, false]) {
			const client = openStore(tempStore(), { durability: "none", inlineReads });
			const { id: sid } = await client.createSession();
			await client.appendMany(sid, messages);
			const made = answersMadeByTheAddon();
			expect((await client.context(sid)).messages).toStrictEqual(messages);
			expect(answersMadeByTheAddon()).toEqual({ whole: made.whole, piecewise: made.piecewise + 1 });
			const of = (entries: WireEntry[]) => entries.map((e) => e["message"]);
			expect(of(await client.branch(sid))).toStrictEqual(messages);
			expect(of(await client.entries(sid))).toStrictEqual(messages);
			expect(answersMadeByTheAddon()).toEqual({ whole: made.whole + 2, piecewise: made.piecewise + 1 });

			// A key __proto__ anywhere: the answer goes to JSON.parse, which keeps it an own key.
			const proto = JSON.parse(`{"role":"user","content":${JSON.stringify(long(0))},"meta":{"__proto__":{"polluted":true}}}`) as (typeof messages)[number];
			const { id: other } = await client.createSession();
			await client.appendMany(other, [...messages.slice(0, 200), proto]);
			const read = (await client.context(other)).messages;
			expect(answersMadeByTheAddon()).toEqual({ whole: made.whole + 2, piecewise: made.piecewise + 1 });
			const meta = (read.at(-1) as { meta: object }).meta;
			expect(Object.hasOwn(meta, "__proto__")).toBe(true);
			expect(Object.getPrototypeOf(meta)).toBe(Object.prototype);
			expect(read).toStrictEqual([...messages.slice(0, 200), proto]);

			// A context comes in pieces (each long message apart, a marker in its place in the
			// rest): a message whose text is that marker is read back as written.
			const marked = [...messages.slice(0, 100), { role: "user", content: "\u0000grove-piece" }, ...messages.slice(100, 200)];
			const { id: third } = await client.createSession();
			await client.appendMany(third, marked);
			expect((await client.context(third)).messages).toStrictEqual(marked);
			// The marker is more often in the rest than there are pieces: parsed whole instead.
			expect(answersMadeByTheAddon()).toEqual({ whole: made.whole + 3, piecewise: made.piecewise + 1 });

			// Many small values (a long branch of short messages): left to JSON.parse too.
			const { id: small } = await client.createSession();
			const shorts = Array.from({ length: 20_000 }, (_, i) => ({ role: "user", content: `m${i}`, n: i }));
			await client.appendMany(small, shorts);
			expect((await client.context(small)).messages).toStrictEqual(shorts);
			expect(answersMadeByTheAddon()).toEqual({ whole: made.whole + 3, piecewise: made.piecewise + 1 });
			client.close();
		}
	});

	it("takes the branch and path of a session of many entries chunk by chunk, as the same values", async () => {
		// 512 entries or more: a walk is read on the store's threads while node parses the
		// chunks already read. Lines ASCII or not, short, long, and one of 3 MB of long
		// strings (its chunk, whatever else it holds, the addon makes values of itself: more
		// than a megabyte, more than 512 bytes a value); a branch point, so the branch of the
		// old leaf is not the session's log.
		const text = (i: number) => `${i} ${"x".repeat(i % 300)} ${i % 7 === 0 ? "é😀中\n\"q\"" : ""}`;
		const messages = Array.from({ length: 1600 }, (_, i) => ({
			role: i % 2 === 0 ? "user" : "assistant",
			content:
				i === 700
					? [{ type: "text", text: "lorem ipsum ".repeat(250_000) }, { type: "text", text: "é".repeat(3000) }]
					: [{ type: "text", text: text(i) }],
			n: i,
		}));
		const server = await startServer();
		try {
			const remote = new GroveClient({ url: server.urls[0] as string });
			for (const inlineReads of [true, false]) {
				const client = openStore(tempStore(), { durability: "none", inlineReads });
				const { id: sid } = await client.createSession();
				const ids = await client.appendMany(sid, messages);
				const { id: twin } = await remote.createSession();
				await remote.appendMany(twin, messages);
				const chunked = answersTakenInChunks();
				const made = answersMadeByTheAddon();
				const of = (entries: WireEntry[]) => entries.map((e) => e["message"]);
				expect(of(await client.branch(sid))).toStrictEqual(messages);
				expect(of(await client.path(sid))).toStrictEqual(messages);
				// Off node's thread (inlineReads false) a walk is gathered whole, as before.
				expect(answersTakenInChunks()).toBe(chunked + (inlineReads ? 2 : 0));
				// The chunk holding the long line was made values by the addon, in each walk;
				// a whole answer of so many small values is left to JSON.parse.
				expect(answersMadeByTheAddon()).toEqual({ whole: made.whole + (inlineReads ? 2 : 0), piecewise: made.piecewise });
				// A sibling of entry 999: the branch of the old leaf and of the new one.
				const branchPoint = ids[999] as string;
				await client.setLeaf(sid, branchPoint);
				const [sibling] = await client.appendMany(sid, [{ role: "user", content: "again" }]);
				expect(of(await client.branch(sid))).toStrictEqual([...messages.slice(0, 1000), { role: "user", content: "again" }]);
				expect(of(await client.branch(sid, ids.at(-1)))).toStrictEqual(messages);
				expect((await client.branch(sid, sibling)).at(-2)?.["id"]).toBe(branchPoint);
				// Entry for entry what the server answers of the same appends, ids aside.
				const strip = (entries: WireEntry[]) => entries.map(({ id: _i, parentId: _p, timestamp: _t, ...rest }) => rest);
				expect(strip(await client.branch(sid, ids.at(-1)))).toStrictEqual(strip(await remote.branch(twin)));
				client.close();
			}
		} finally {
			await server.stop();
		}
	});

	it("streams a large read and survives leaving it early", async () => {
		const client = openStore(tempStore(), { durability: "none" });
		const { id: sid } = await client.createSession();
		await client.appendMany(sid, Array.from({ length: 3000 }, (_, i) => ({ role: "user", content: `message ${i} ${"x".repeat(200)}` })));
		let seen = 0;
		for await (const _entry of client.iterEntries(sid)) {
			if (++seen === 10) break;
		}
		expect(seen).toBe(10);
		expect(await client.entries(sid)).toHaveLength(3000);
		client.close();
	});

	it("shares a store between the clients of this process, closed by the last", async () => {
		const dir = tempStore();
		const first = openStore(dir);
		const second = openStore(dir, { name: "second" });
		const { id: sid } = await first.createSession();
		await second.append(sid, { role: "user", content: "from the second" });
		first.close();
		expect((await second.operations(sid)).map((op) => op.actor)).toContain("second");
		second.close();
		const closed = await second.leaf(sid).catch((e: unknown) => e);
		expect((closed as GroveError).code).toBe("closed");
		const reopened = openStore(dir);
		expect(await reopened.entries(sid)).toHaveLength(1);
		reopened.close();
	});

	it("refuses a store another process holds with locked, naming it, and falls back to its server", async () => {
		const dir = tempStore();
		const seed = openStore(dir);
		const { id: sid } = await seed.createSession();
		seed.close();
		const child = spawn(process.execPath, [join(workers, "embedded.mjs"), dir, sid], { stdio: ["ignore", "pipe", "pipe"] });
		try {
			await firstLine(child);
			for (const fallback of ["error", "server"] as const) {
				// No server holds it: the fallback has nowhere to go.
				const refused = (() => {
					try {
						return openStore(dir, { fallback });
					} catch (error) {
						return error;
					}
				})();
				expect(refused).toBeInstanceOf(GroveError);
				expect((refused as GroveError).code).toBe("locked");
				expect((refused as GroveError).message).toContain(`process ${child.pid}`);
			}
		} finally {
			child.kill("SIGKILL");
			await new Promise((done) => child.once("close", done));
		}
		const server = await startServer();
		try {
			const refused = (() => {
				try {
					return openStore(server.store, { fallback: "error" });
				} catch (error) {
					return error;
				}
			})();
			expect((refused as GroveError).code).toBe("locked");
			const client = openStore(server.store);
			expect(client.where).toBe(server.urls[0]);
			const { id } = await client.createSession();
			expect(await client.append(id, { role: "user", content: "through the server" })).toBeTypeOf("string");
			client.close();
		} finally {
			await server.stop();
		}
	});

	it("keeps every append a SIGKILLed embedding process acknowledged, once (20 kills)", async () => {
		const dir = tempStore();
		const seed = openStore(dir);
		const { id: sid } = await seed.createSession();
		seed.close();
		const acked: string[] = [];
		const random = new Rand(30);
		for (let cycle = 0; cycle < 20; cycle++) {
			const child = spawn(process.execPath, [join(workers, "embedded.mjs"), dir, sid], { stdio: ["ignore", "pipe", "pipe"] });
			let out = "";
			child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
				out += chunk;
			});
			let err = "";
			child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
				err += chunk;
			});
			const closed = new Promise((done) => child.once("close", done));
			while (!out.includes("open\n")) {
				if (child.exitCode !== null) throw new Error(`the embedding process exited: ${err}`);
				await new Promise((done) => setTimeout(done, 5));
			}
			await new Promise((done) => setTimeout(done, 20 + random.int(200)));
			child.kill("SIGKILL");
			await closed;
			expect(err).toBe("");
			// A line cut off by the kill was not acknowledged.
			for (const line of out.split("\n").slice(1, -1)) acked.push((JSON.parse(line) as { id: string }).id);
		}
		const client = openStore(dir);
		const ids = (await client.entries(sid)).map((entry) => entry.id);
		expect(new Set(ids).size).toBe(ids.length);
		const stored = new Set(ids);
		for (const id of acked) expect(stored.has(id), `acknowledged ${id} is missing`).toBe(true);
		expect(acked.length).toBeGreaterThan(20);
		expect((await client.verify()).ok).toBe(true);
		client.close();
	});
});

const workers = fileURLToPath(new URL("./workers/", import.meta.url));

/** Resolves when the child printed its first line (`open`). */
function firstLine(child: ChildProcessWithoutNullStreams | ReturnType<typeof spawn>): Promise<void> {
	return new Promise((done, fail) => {
		let out = "";
		let err = "";
		child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
			err += chunk;
		});
		child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
			out += chunk;
			if (out.includes("\n")) done();
		});
		child.once("exit", (code) => fail(new Error(`exited with ${code}: ${err}`)));
	});
}
