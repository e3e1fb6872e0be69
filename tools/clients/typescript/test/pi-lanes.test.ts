/**
 * pi 0.84's lane-based storage on grove (src/pi-lanes.ts): pi's own backend conformance suite from
 * the npm package (pi-agent-core 0.84.4, `createSessionBackendConformance`, every case) on
 * `GrovePiLaneRepo`; then what the mapping promises on grove's side (one entry per line, pi's file
 * back from `grove export --format pi-lanes`, a second writer refused). On the run's server, or in
 * this process (GROVE_TRANSPORT=in-process).
 */
import { randomUUID } from "node:crypto";
import * as pi from "pi-agent-core-084";
import type { JsonlSessionMetadata, Session, SessionRepo } from "pi-agent-core-084";
import { createSessionBackendConformance } from "pi-agent-core-084/session/testing";
import { afterAll, describe, expect, it } from "vitest";
import { GrovePiLaneRepo, LANE_LINE } from "../src/pi-lanes.js";
import { testClient } from "./clients.js";

const client = testClient("pi-lanes-test");
afterAll(() => client.close());

/** A repo of its own: a prefix no other repo of the run uses. */
function freshRepo(): GrovePiLaneRepo<Session<JsonlSessionMetadata>, JsonlSessionMetadata> {
	return new GrovePiLaneRepo(client, pi, { prefix: `pl${randomUUID().replaceAll("-", "").slice(0, 12)}`, cwd: "/work/demo" });
}

// The adapter has pi's type (checked by tsc).
const asRepo = (repo: GrovePiLaneRepo<Session<JsonlSessionMetadata>, JsonlSessionMetadata>): SessionRepo => repo;

const cases = createSessionBackendConformance(async () => ({
	repository: asRepo(freshRepo()),
	async [Symbol.asyncDispose]() {},
}));

describe("pi 0.84.4's backend conformance on GrovePiLaneRepo", () => {
	it("has pi's 30 cases", () => expect(cases).toHaveLength(30));
	for (const c of cases) it(`${c.group} > ${c.name}`, () => c.run());
});

describe("on grove's side", () => {
	it("keeps each line as one entry, exports pi's file and refuses a second writer", async () => {
		const repo = freshRepo();
		const session = await repo.create({ id: "kept" });
		const first = await session.appendMessage({ role: "user", content: [{ type: "text", text: "Grüße 😀" }], timestamp: 1 });
		await session.createLane("retry", first);
		await session.view("retry").appendMessage({ role: "user", content: "again", timestamp: 2 });
		await session.setName("named");
		await session.setLabel(first, "first");
		const metadata = await session.getMetadata();
		const sid = repo.fs.sessionOf(metadata.path);

		const entries = await client.entries(sid);
		expect(entries.map((e) => e.customType)).toEqual(["header", "entry", "lane", "entry", "fact", "fact"].map((k) => LANE_LINE + k));
		expect(entries.map((e) => e.parentId)).toEqual([null, ...entries.slice(0, -1).map((e) => e.id)]);
		expect((await client.getSession(sid)).metadata).toMatchObject({ foreign: { format: "pi-lanes", file: metadata.path } });
		// The lines are pi's: its own repository reads them back, and grove exports them as pi's file.
		const file = await client.exportSession(sid, { flavor: "pi-lanes" });
		const lines = file.trimEnd().split("\n");
		expect(JSON.parse(lines[0] ?? "")).toMatchObject({ kind: "header", version: 4, id: "kept", cwd: "/work/demo" });
		expect(lines).toHaveLength(6);
		const again = await repo.open(metadata);
		expect(await again.getName()).toBe("named");
		expect(await again.getLanes()).toEqual(await session.getLanes());
		expect(await again.getLog()).toEqual(await session.getLog());

		// Two writers of one session: the one that appends second is refused, nothing interleaved.
		const other = await freshRepoOn(repo).open(metadata);
		await again.appendMessage({ role: "user", content: "from one", timestamp: 3 });
		await expect(other.appendMessage({ role: "user", content: "from another", timestamp: 4 })).rejects.toMatchObject({ code: "storage" });
		expect(await client.entries(sid)).toHaveLength(7);
		const reread = await repo.open(metadata);
		expect((await reread.findEntries()).map((e) => e.type)).toEqual(["message", "message", "message"]);
	});
});

describe("the context", () => {
	it("is pi's own buildSessionContext of the main lane's branch, after every write", async () => {
		const repo = freshRepo();
		const session = await repo.create({ id: "context" });
		const sid = repo.fs.sessionOf((await session.getMetadata()).path);
		const compare = async (step: string) => {
			const path = await session.findEntriesOnBranch({ order: "oldestFirst" });
			expect(await client.context(sid), step).toEqual(JSON.parse(JSON.stringify(pi.buildSessionContext(path))));
		};
		const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
		const answer = (text: string, stopReason = "stop") => ({ role: "assistant" as const, content: [{ type: "text" as const, text }], api: "anthropic-messages", provider: "anthropic", model: "claude-x", usage, stopReason, timestamp: 2 });
		await compare("empty");
		await session.appendEntry({ type: "thinking_level_change", id: "t1", thinkingLevel: "high" } as never, "main");
		await compare("thinking");
		const question = await session.appendMessage({ role: "user", content: "Wie viele Zeilen?", timestamp: 1 });
		await session.appendMessage(answer("Drei.") as never);
		await compare("a turn");
		await session.appendEntry({ type: "model_change", id: "m1", provider: "openai", modelId: "gpt-x" } as never, "main");
		await session.appendEntry({ type: "active_tools_change", id: "tools1", activeToolNames: ["read", "bash"] } as never, "main");
		await session.appendMessage(answer("…", "deferred") as never);
		await session.appendCustomEntry("note", { n: 1 });
		await compare("settings, a deferred answer, a custom entry");
		await session.appendRecord({ type: "usage", id: "u1", lane: "main", cause: "adjustment", usage } as never);
		await compare("a record");
		await session.createLane("side", question);
		await session.view("side").appendMessage({ role: "user", content: "Nebenbei", timestamp: 3 });
		await compare("a write on another lane");
		await session.appendEntry({ type: "compaction", id: "c1", summary: "Drei Zeilen.", tokensBefore: 42, retainedTail: [{ role: "user", content: "Wie viele Zeilen?", timestamp: 1 }] } as never, "main");
		await session.appendMessage({ role: "user", content: "Danke", timestamp: 4 });
		await compare("a compaction with its retained tail");
		await session.appendEntry({ type: "branch_summary", id: "b1", fromId: question, summary: "Nebenbei gefragt." } as never, "main");
		await session.setName("named");
		await compare("a branch summary and a fact");
		await session.moveLane("main", question);
		await compare("the main lane moved back");
		expect(((await client.context(sid)) as { messages: unknown[] }).messages).toHaveLength(1);
	});
});

describe("long paths", () => {
	it("names a session file over 120 characters by its hash and still lists, opens and forks it", async () => {
		const repo = freshRepo();
		const cwd = `/work/${"tief/".repeat(30)}projekt`;
		const session = await repo.create({ id: "deep", cwd });
		await session.appendMessage({ role: "user", content: "tief", timestamp: 1 });
		const metadata = await session.getMetadata();
		expect(repo.fs.sessionOf(metadata.path)).toMatch(new RegExp(`^${repo.fs.prefix}\\.[0-9a-f]{64}$`));
		expect((await repo.list()).map((m) => m.id)).toEqual(["deep"]);
		expect((await repo.list({ cwd })).map((m) => m.id)).toEqual(["deep"]);
		expect((await (await repo.open(metadata)).findEntries()).map((e) => e.type)).toEqual(["message"]);
		const fork = await repo.fork(metadata, { id: "deeper" });
		expect((await fork.findEntries()).map((e) => e.type)).toEqual(["message"]);
		expect((await repo.list()).map((m) => m.id).sort()).toEqual(["deep", "deeper"]);
	});
});

/** A second repository on the same sessions (another process's, say). */
function freshRepoOn(repo: GrovePiLaneRepo<Session<JsonlSessionMetadata>, JsonlSessionMetadata>) {
	return new GrovePiLaneRepo<Session<JsonlSessionMetadata>, JsonlSessionMetadata>(client, pi, { prefix: repo.fs.prefix, cwd: "/work/demo" });
}
