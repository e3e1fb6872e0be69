/**
 * The pi adapter and the drop-ins on the real server: pi's own expectations of its in-memory
 * storage and repo (their texts included), the repo's metadata, and pi's AgentHarness running a
 * turn on a grove session.
 */
import { AgentHarness, type MessageEntry, Session, SessionError, type SessionMetadata } from "@earendil-works/pi-agent-core";
import { createModels, fauxAssistantMessage, fauxProvider } from "@earendil-works/pi-ai";
import { afterAll, describe, expect, it } from "vitest";
import { InMemorySessionRepo } from "../pi-compat/memory-repo.js";
import { InMemorySessionStorage } from "../pi-compat/memory-storage.js";
import { GroveClient } from "../src/client.js";
import { GroveSessionRepo, GroveSessionStorage } from "../src/pi.js";
import { testClient, testUrl } from "./clients.js";
import type { Repo } from "./differential.js";

process.env.GROVE_URL = testUrl();
const client = testClient();
afterAll(() => client.close());

function userMessage(text: string) {
	return { role: "user" as const, content: [{ type: "text" as const, text }], timestamp: Date.now() };
}

function assistantMessage(text: string) {
	return {
		role: "assistant" as const,
		content: [{ type: "text" as const, text }],
		api: "faux",
		provider: "faux",
		model: "faux-1",
		usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 3, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
		stopReason: "stop" as const,
		timestamp: Date.now(),
	};
}

const entry1: MessageEntry = {
	type: "message",
	id: "entry-1",
	parentId: null,
	timestamp: "2026-01-01T00:00:00.000Z",
	message: userMessage("one"),
};

describe("pi-compat InMemorySessionStorage", () => {
	it("returns configured metadata and copies initial entries", async () => {
		const metadata: SessionMetadata = { id: "session-1", createdAt: "2026-01-01T00:00:00.000Z" };
		expect(await new InMemorySessionStorage({ metadata }).getMetadata()).toEqual(metadata);
		const initial = [entry1];
		const storage = new InMemorySessionStorage({ entries: initial });
		initial.push({ ...entry1, id: "entry-2" });
		expect((await storage.getEntries()).map((e) => e.id)).toEqual(["entry-1"]);
		expect(await storage.getLeafId()).toBe("entry-1");
		await storage.setLeafId(null);
		expect(await storage.getLeafId()).toBeNull();
		expect((await storage.getEntries()).at(-1)).toMatchObject({ type: "leaf", targetId: null });
	});

	it("throws pi's errors with pi's texts", async () => {
		await expect(new InMemorySessionStorage().setLeafId("missing")).rejects.toThrow("Entry missing not found");
		await expect(new InMemorySessionStorage().setLeafId("missing")).rejects.toMatchObject({ code: "not_found" });
		expect(() => new InMemorySessionStorage({ entries: [{ ...entry1, type: "leaf", targetId: "gone" } as never] })).toThrow(
			"Entry gone not found",
		);
		const session = new Session(new InMemorySessionStorage());
		await expect(session.appendLabel("missing", "checkpoint")).rejects.toThrow("Entry missing not found");
		await expect(new InMemorySessionStorage().getPathToRootOrCompaction("nope")).rejects.toBeInstanceOf(SessionError);
	});

	it("keeps each object a session of its own, whatever id pi gives it", async () => {
		const metadata: SessionMetadata = { id: "same-id", createdAt: "2026-01-01T00:00:00.000Z" };
		const a = new InMemorySessionStorage({ metadata });
		const b = new InMemorySessionStorage({ metadata, entries: [entry1] });
		await a.appendEntry({ ...entry1, id: "only-in-a" });
		expect((await a.getEntries()).map((e) => e.id)).toEqual(["only-in-a"]);
		expect((await b.getEntries()).map((e) => e.id)).toEqual(["entry-1"]);
		const groveA = await a.groveStorage();
		const groveB = await b.groveStorage();
		expect(groveA.sessionId).not.toBe(groveB.sessionId);
		expect((await client.getSession(groveA.sessionId)).metadata).toEqual(metadata);
	});

	it("maintains label lookup, stats and paths", async () => {
		const storage = new InMemorySessionStorage({ entries: [entry1] });
		expect(await storage.getLabel("entry-1")).toBeUndefined();
		await storage.appendEntry({ type: "label", id: "label-1", parentId: "entry-1", timestamp: "2026-01-01T00:00:01.000Z", targetId: "entry-1", label: " checkpoint " });
		expect(await storage.getLabel("entry-1")).toBe("checkpoint");
		await storage.appendEntry({ type: "label", id: "label-2", parentId: "label-1", timestamp: "2026-01-01T00:00:02.000Z", targetId: "entry-1", label: undefined });
		expect(await storage.getLabel("entry-1")).toBeUndefined();
		expect((await storage.getPathToRootOrCompaction("label-2")).map((e) => e.id)).toEqual(["entry-1", "label-1", "label-2"]);
		expect(await storage.getPathToRootOrCompaction(null)).toEqual([]);
		expect((await storage.getSessionStats()).messageCount).toBe(1);
		expect(await storage.createEntryId()).toMatch(/^[0-9a-f]{8}$/);
	});
});

describe("pi-compat InMemorySessionRepo", () => {
	it("opens, deletes, and forks by metadata (pi's repo test)", async () => {
		for (let round = 0; round < 2; round++) {
			const repo = new InMemorySessionRepo();
			const session = await repo.create({ id: "session-1" });
			const metadata = await session.getMetadata();
			const user1 = await session.appendMessage(userMessage("one"));
			const assistant1 = await session.appendMessage(assistantMessage("two"));
			const user2 = await session.appendMessage(userMessage("three"));
			expect(await repo.open(metadata)).toBe(session);
			expect((await repo.list()).map((info) => info.id)).toEqual(["session-1"]);
			const fork = await repo.fork(metadata, { entryId: user2, id: "session-2" });
			expect((await fork.getEntries()).map((entry) => entry.id)).toEqual([user1, assistant1]);
			const fullFork = await repo.fork(metadata, { id: "session-3" });
			expect((await fullFork.getEntries()).map((entry) => entry.id)).toEqual([user1, assistant1, user2]);
			await expect(repo.fork(metadata, { entryId: assistant1 })).rejects.toThrow(`Entry ${assistant1} is not a user message`);
			await expect(repo.fork(metadata, { entryId: "nope" })).rejects.toMatchObject({ code: "invalid_fork_target", message: "Entry nope not found" });
			await repo.delete(metadata);
			await expect(repo.open(metadata)).rejects.toThrow("Session not found: session-1");
		}
	});
});

describe("GroveSessionRepo", () => {
	it("creates, opens, lists by cwd, forks and deletes, with pi's metadata in the header", async () => {
		const cwd = `/repo-test/${process.pid}`;
		const repo = new GroveSessionRepo(client, { cwd });
		const session = await repo.create({ id: `repo-${process.pid}-a` });
		const metadata = await session.getMetadata();
		expect((await client.getSession(metadata.id)).metadata).toEqual(metadata);
		const u1 = await session.appendMessage(userMessage("one"));
		const a1 = await session.appendMessage(assistantMessage("two"));
		const u2 = await session.appendMessage(userMessage("three"));
		const opened = await repo.open(metadata);
		expect(await opened.getMetadata()).toEqual(metadata);
		expect(await opened.buildContext()).toEqual(await session.buildContext());

		const fork = await repo.fork(metadata, { entryId: u2, id: `repo-${process.pid}-b` });
		expect((await fork.getEntries()).map((e) => e.id)).toEqual([u1, a1]);
		const at = await repo.fork(metadata, { entryId: a1, position: "at" });
		expect((await at.getEntries()).map((e) => e.id)).toEqual([u1, a1]);
		const whole = await repo.fork(metadata, {});
		expect((await whole.getEntries()).map((e) => e.id)).toEqual([u1, a1, u2]);
		expect((await repo.list()).map((m) => m.id).sort()).toEqual(
			[metadata.id, `repo-${process.pid}-b`, (await at.getMetadata()).id, (await whole.getMetadata()).id].sort(),
		);
		expect(await new GroveSessionRepo(client, { cwd: `${cwd}/other` }).list()).toEqual([]);

		await expect(repo.fork(metadata, { entryId: a1 })).rejects.toMatchObject({ code: "invalid_fork_target", message: `Entry ${a1} is not a user message` });
		await expect(repo.fork(metadata, { entryId: "nope", position: "at" })).rejects.toMatchObject({ code: "invalid_fork_target", message: "Entry nope not found" });
		await repo.delete(metadata);
		await repo.delete(metadata);
		await expect(repo.open(metadata)).rejects.toMatchObject({ code: "not_found", message: `Session not found: ${metadata.id}` });
		await expect(repo.fork(metadata, {})).rejects.toMatchObject({ code: "not_found" });
	});

	it("reads a session made without pi's metadata", async () => {
		const id = `plain-${process.pid}`;
		const summary = await client.createSession({ id });
		const storage = await GroveSessionStorage.open(client, id);
		expect(await storage.getMetadata()).toEqual({ id, createdAt: summary.created });
	});
});

describe("pi's AgentHarness on grove", () => {
	it("runs a turn and a resume from the repo", async () => {
		const models = createModels();
		const faux = fauxProvider({ provider: "faux-grove" });
		models.setProvider(faux.provider);
		faux.setResponses([fauxAssistantMessage("first answer"), fauxAssistantMessage("second answer")]);
		const repo = new GroveSessionRepo(client, { cwd: `/harness/${process.pid}` });
		const session = await repo.create({});
		const harness = new AgentHarness({ models, session, model: faux.getModel(), systemPrompt: "Be brief." });
		await harness.prompt("hello");
		await harness.prompt("again");
		const entries = await session.getEntries();
		const roles = entries.flatMap((e) => (e.type === "message" ? [e.message.role] : []));
		expect(roles).toEqual(["user", "assistant", "user", "assistant"]);

		const resumed = await repo.open(await session.getMetadata());
		const context = await resumed.buildContext();
		expect(context.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
		expect(context).toEqual(await session.buildContext());
	});
});

/** Found by the differential test; each compares with pi's own in-memory storage and repo. */
describe("regressions", () => {
	it("sums costTotal exactly as pi does (seed 6: 1.9371999999999998 came back as 1.9372)", async () => {
		const { InMemorySessionStorage: PiStorage } = await import("@earendil-works/pi-agent-core");
		const message = assistantMessage("costly");
		message.usage.cost.total = 1.9371999999999998;
		const entry: MessageEntry = { type: "message", id: "a1", parentId: null, timestamp: "2026-01-01T00:00:00.000Z", message };
		const pi = new PiStorage({ entries: [entry] });
		const grove = await GroveSessionStorage.create(client, { entries: [entry], id: `cost-${process.pid}` });
		expect(await grove.getSessionStats()).toEqual(await pi.getSessionStats());
	});

	it("names the missing parent as pi does when a fork's first entry points outside it (seed 135)", async () => {
		const { InMemorySessionRepo: PiRepo } = await import("@earendil-works/pi-agent-core");
		const results: Array<{ code: string; message: string }> = [];
		const repos: Repo[] = [new PiRepo(), new GroveSessionRepo(client, { cwd: `/regress/${process.pid}` })];
		for (const repo of repos) {
			const session: Session = await repo.create({ id: `outside-${process.pid}-${results.length}` });
			const u1 = await session.appendMessage(userMessage("one"));
			const a1 = await session.appendMessage(assistantMessage("two"));
			const c1 = await session.appendCompaction("summary", a1, 10);
			const fork = await repo.fork(await session.getMetadata(), { entryId: c1, position: "at", id: `outside-fork-${process.pid}-${results.length}` });
			const error: unknown = await fork.getStorage().getPathToRootOrCompaction(a1).catch((e: unknown) => e);
			expect(error).toBeInstanceOf(SessionError);
			const { code, message } = error as SessionError;
			results.push({ code, message: message.replace(u1, "U1") });
		}
		expect(results[1]).toEqual(results[0]);
		expect(results[0]).toEqual({ code: "invalid_session", message: "Entry U1 not found" });
	});
});
