/**
 * pi's commit-based storage (pi-agent-core 0.99.1, the newest on the npm registry that has one)
 * on grove (src/pi-storage.ts): pi's own conformance suites from the npm package,
 * `createStorageConformance` (every case) on `GroveStorage` and `createSessionRepoConformance`
 * plus `createSessionRepoStreamingForkConformance` on `GrovePiSessionRepo`; then what the mapping
 * promises on grove's side. On the run's server, or in this process (GROVE_TRANSPORT=in-process).
 */
import { randomUUID } from "node:crypto";
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
