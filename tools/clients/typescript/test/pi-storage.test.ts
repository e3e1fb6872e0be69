/**
 * pi's commit-based storage (pi-agent-core 0.99.1, the newest on the npm registry that has one)
 * on grove (src/pi-storage.ts): pi's own conformance suites from the npm package,
 * `createStorageConformance` (every case) on `GroveStorage` and `createSessionRepoConformance`
 * plus `createSessionRepoStreamingForkConformance` on `GrovePiSessionRepo`; then what the mapping
 * promises on grove's side. On the run's server, or in this process (GROVE_TRANSPORT=in-process).
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as pi from "pi-agent-core-099";
import type { SessionRepo, Storage } from "pi-agent-core-099";
import {
	createSessionRepoConformance,
	createSessionRepoStreamingForkConformance,
	createStorageConformance,
} from "pi-agent-core-099/harness/session/testing";
import { afterAll, describe, expect, it } from "vitest";
import { COMMIT, GrovePiSessionRepo, GroveStorage } from "../src/pi-storage.js";
import { testClient } from "./clients.js";
import { groveBin } from "./server.js";

const client = testClient("pi-storage-test");
afterAll(() => client.close());

/** A repo of its own: a prefix no other repo of the run uses. */
function freshRepo(): GrovePiSessionRepo<pi.Session> {
	return new GrovePiSessionRepo(client, pi, { prefix: `pi${randomUUID().replaceAll("-", "").slice(0, 12)}` });
}

// The adapter's classes have pi's types (checked by tsc).
const asStorage = (storage: GroveStorage<pi.Entry>): Storage => storage;
const asRepo = (repo: GrovePiSessionRepo<pi.Session>): SessionRepo => repo;

const storageCases = createStorageConformance(async () => {
	const sid = `pistorage-${randomUUID()}`;
	await client.createSession({ id: sid });
	const storage = asStorage(await GroveStorage.open<pi.Entry>(client, sid, pi));
	return {
		storage,
		async [Symbol.asyncDispose]() {
			await storage.close(pi.BACKGROUND_CONTEXT);
		},
	};
});

const repoCases = createSessionRepoConformance(async () => asRepo(freshRepo()));
const forkCases = createSessionRepoStreamingForkConformance(async () => asRepo(freshRepo()));

describe("pi 0.99.1's Storage conformance on GroveStorage", () => {
	it("has pi's 21 cases", () => expect(storageCases).toHaveLength(21));
	for (const c of storageCases) it(`${c.group} > ${c.name}`, () => c.run());
});

describe("pi 0.99.1's SessionRepo conformance on GrovePiSessionRepo", () => {
	it("has pi's 17 cases and 15 streaming fork cases", () => {
		expect(repoCases).toHaveLength(17);
		expect(forkCases).toHaveLength(15);
	});
	for (const c of [...repoCases, ...forkCases]) it(`${c.group} > ${c.name}`, () => c.run());
});

describe("on grove's side", () => {
	it("keeps each commit as one entry, a chain, and reopens to the same state", async () => {
		const repo = freshRepo();
		const session = await repo.create({ id: "kept" }, pi.BACKGROUND_CONTEXT);
		const main = await session.createBranch("main", null, pi.BACKGROUND_CONTEXT);
		const first = await main.appendMessage({ role: "user", content: [{ type: "text", text: "Grüße 😀" }], timestamp: 1 }, pi.BACKGROUND_CONTEXT);
		await main.appendCustomEntry("note", { n: 1 }, pi.BACKGROUND_CONTEXT);
		await session.setName("named", pi.BACKGROUND_CONTEXT);
		await session.setLabel(first, "first", pi.BACKGROUND_CONTEXT);
		const before = await session.findEntries({ order: "asc" }, pi.BACKGROUND_CONTEXT);
		await session.close(pi.BACKGROUND_CONTEXT);

		const sid = repo.sessionIdOf("kept");
		const entries = await client.entries(sid);
		expect(entries.map((e) => e.customType)).toEqual(Array(5).fill(COMMIT));
		expect(entries.map((e) => e.parentId)).toEqual([null, ...entries.slice(0, -1).map((e) => e.id)]);
		expect((await client.getSession(sid)).metadata).toMatchObject({ piSession: { id: "kept", storageVersion: 1 } });

		const again = await repo.open(session.metadata, pi.BACKGROUND_CONTEXT);
		expect(await again.findEntries({ order: "asc" }, pi.BACKGROUND_CONTEXT)).toEqual(before);
		expect(await again.getName(pi.BACKGROUND_CONTEXT)).toBe("named");
		expect(await again.getLabel(first, pi.BACKGROUND_CONTEXT)).toBe("first");
		await again.close(pi.BACKGROUND_CONTEXT);
		expect((await client.verify()).ok).toBe(true);
	});

	it("refuses a commit when another writer committed meanwhile", async () => {
		const sid = `pistorage-${randomUUID()}`;
		await client.createSession({ id: sid });
		const one = await GroveStorage.open(client, sid, pi);
		const two = await GroveStorage.open(client, sid, pi);
		await one.commit([pi.setValue(pi.sessionName, "one")], pi.BACKGROUND_CONTEXT);
		await expect(two.commit([pi.setValue(pi.sessionName, "two")], pi.BACKGROUND_CONTEXT)).rejects.toThrow(/another writer/);
		const reopened = await GroveStorage.open(client, sid, pi);
		expect((await reopened.getValue(pi.sessionName, pi.BACKGROUND_CONTEXT))?.value).toBe("one");
	});

	it("names sessions whose ids grove does not take as they are", async () => {
		const repo = freshRepo();
		const session = await repo.create({ id: "a b/ü" }, pi.BACKGROUND_CONTEXT);
		expect(repo.sessionIdOf("a b/ü")).toBe(`${repo.prefix}.${Buffer.from("a b/ü").toString("hex")}`);
		await session.close(pi.BACKGROUND_CONTEXT);
		expect((await repo.list(undefined, pi.BACKGROUND_CONTEXT)).map((m) => m.id)).toEqual(["a b/ü"]);
	});
});

describe("the context of an imported commit log", () => {
	it("is pi 0.99.1's own buildSessionContext of the branch, at every entry and at the leaf", async () => {
		// pi's function is not among the package's exports: it is imported from its file.
		const contextJs = resolve(dirname(fileURLToPath(import.meta.url)), "../node_modules/pi-agent-core-099/dist/harness/session/context.js");
		const { buildSessionContext } = (await import(pathToFileURL(contextJs).href)) as { buildSessionContext(path: unknown[]): Promise<unknown[]> };
		const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
		const answer = (text: string, stopReason: string) => ({ role: "assistant", content: [{ type: "text", text }], api: "anthropic-messages", provider: "anthropic", model: "claude-x", usage, stopReason, timestamp: 2 });
		// A commit log as pi's JSONL storage writes one: each line a write or a commit's writes.
		let seq = 0;
		const entry = (id: string, parentId: string | null, fields: object) => ({ kind: "entry", id, parentId, ...fields, seq: ++seq, timestamp: 1796610524000 + seq });
		const tip = (value: string | null) => ({ kind: "value", op: "set", seq: ++seq, namespace: "pi.branch.tip", key: "main", value });
		const lines: unknown[] = [{ v: 4, kind: "header", id: "ctx-log", storageVersion: 1, createdAt: 1796610524000, cwd: "/work/demo" }, tip(null)];
		const commit = (...writes: object[]) => lines.push(writes.length === 1 ? writes[0] : writes);
		commit(entry("q", null, { type: "message", message: { role: "user", content: "Wie viele Zeilen?", timestamp: 1 } }), tip("q"));
		commit(entry("e", "q", { type: "message", message: answer("…", "error") }), tip("e"));
		commit(entry("a", "e", { type: "message", message: answer("Drei.", "stop") }), tip("a"));
		commit(entry("n", "a", { type: "custom", customType: "note", data: { n: 1 } }), tip("n"));
		commit(entry("c", "n", { type: "compaction", summary: "Drei Zeilen.", tokensBefore: 42, retainedTail: [{ role: "user", content: "Wie viele Zeilen?", timestamp: 1 }, answer("x", "aborted")] }), tip("c"));
		commit(entry("s", "q", { type: "message", message: answer("Nebenbei.", "stop") }));
		commit(entry("b", "c", { type: "branch_summary", summary: "Nebenbei gefragt.", fromId: "s" }), tip("b"));
		commit(entry("d", "b", { type: "message", message: { role: "user", content: "Danke", timestamp: 4 } }), tip("d"));
		commit({ kind: "value", op: "set", seq: ++seq, namespace: "pi.session.name", key: "", value: "Zeilen" });

		const dir = mkdtempSync(join(tmpdir(), "grove-commits-"));
		try {
			const file = join(dir, "log.jsonl");
			writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
			const grove = (args: string[]): string => {
				const r = spawnSync(groveBin(), ["--store", join(dir, "store"), "--durability", "none", ...args], { encoding: "utf8" });
				if (r.status !== 0) throw new Error(`grove ${args.join(" ")}: ${r.stderr}`);
				return r.stdout;
			};
			grove(["import", "--format", "pi-commits", file]);
			const entries = new Map<string, { parentId: string | null }>();
			for (const l of lines) for (const w of Array.isArray(l) ? l : [l]) if (w.kind === "entry") entries.set(w.id, w);
			const branch = (from: string | null) => {
				const path: unknown[] = [];
				for (let id = from; id !== null; id = entries.get(id)?.parentId ?? null) path.unshift(entries.get(id));
				return path;
			};
			for (const id of entries.keys()) {
				const got = JSON.parse(grove(["context", "ctx-log", "--from", id, "--json"]));
				expect(got, `context at ${id}`).toEqual({ messages: await buildSessionContext(branch(id)), model: null, thinkingLevel: "off", activeToolNames: null });
			}
			const atLeaf = JSON.parse(grove(["context", "ctx-log", "--json"]));
			expect(atLeaf.messages).toEqual(await buildSessionContext(branch("d")));
			expect(atLeaf.messages).toHaveLength(4);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
